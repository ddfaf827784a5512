package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestRenderChat compares RenderChat with Qwen25ChatTemplate rendered by Python's jinja2 the way
// transformers' apply_chat_template renders it (testdata/chat_qwen25.json).
func TestRenderChat(t *testing.T) {
	raw, err := os.ReadFile("testdata/chat_qwen25.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name     string `json:"name"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
			Gen  bool   `json:"gen"`
			Want string `json:"want"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("testdata/chat_qwen25.json: %v", err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("testdata/chat_qwen25.json: no cases")
	}
	for _, tc := range file.Cases {
		var msgs []Message
		for _, m := range tc.Messages {
			msgs = append(msgs, Message{Role: m.Role, Content: m.Content})
		}
		var tools []ToolSpec
		for _, tl := range tc.Tools {
			tools = append(tools, ToolSpec{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
		}
		if got := RenderChat(msgs, tools, tc.Gen); got != tc.Want {
			t.Errorf("%s:\n got %q\nwant %q", tc.Name, got, tc.Want)
		}
	}
}

func TestRenderChatIDs(t *testing.T) {
	tok := loadQwen3(t)
	msgs := []Message{
		{Role: "system", Content: "S"},
		{Role: "user", Content: "Who?"},
		{Role: "assistant", Content: "<tool_call>\n{}\n</tool_call>"},
		{Role: "tool", Content: "doc"},
	}
	ids := tok.RenderChatIDs(msgs, nil, true)
	count := map[int]int{}
	for _, id := range ids {
		count[id]++
	}
	want := []struct {
		tok string
		n   int
	}{{"<|im_start|>", 5}, {"<|im_end|>", 4}, {"<tool_call>", 1}, {"</tool_call>", 1}, {"<tool_response>", 1}, {"</tool_response>", 1}}
	for _, w := range want {
		id, _ := tok.TokenID(w.tok)
		if count[id] != w.n {
			t.Errorf("%s appears %d times in the ids, want %d", w.tok, count[id], w.n)
		}
	}
	if got, want := tok.Decode(ids), RenderChat(msgs, nil, true); got != want {
		t.Errorf("Decode(RenderChatIDs) = %q, want %q", got, want)
	}
	end := ids[len(ids)-3:]
	start, _ := tok.TokenID("<|im_start|>")
	if end[0] != start || tok.Decode(end[1:]) != "assistant\n" {
		t.Errorf("ids end %v, want the generation prompt <|im_start|>assistant\\n", end)
	}
}

func TestWritePyJSON(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"nested", `{"b":[1,2,{"c":null}],"a":true}`, `{"b": [1, 2, {"c": null}], "a": true}`},
		{"empty", `{"o":{},"l":[]}`, `{"o": {}, "l": []}`},
		{"escapes", `"a\"b\\c\n\u0001<&>é"`, `"a\"b\\c\n\u0001<&>é"`},
		{"numbers as written", `[1.50,-2e3]`, `[1.50, -2e3]`},
	}
	for _, tc := range cases {
		var b strings.Builder
		if err := writePyJSON(&b, json.RawMessage(tc.in)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if b.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, b.String(), tc.want)
		}
	}
	for _, bad := range []string{`{"a":}`, `[1,2`, `{} {}`} {
		var b strings.Builder
		if err := writePyJSON(&b, json.RawMessage(bad)); err == nil {
			t.Errorf("writePyJSON(%s) succeeded, want an error", bad)
		}
	}
}
