package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"agentr1/golden"
)

// The lines of Qwen3's chat template (testdata/golden/tokenizer_qwen3/tokenizer_config.json,
// "chat_template") that each expected string below is derived from are quoted beside it. The
// template is rendered with trim_blocks and lstrip_blocks and every tag strips the white space
// before it ("{%-", "{{-"), so only the quoted string literals reach the output.

// qwen3SearchTool is a tool as our rollout describes it.
var qwen3SearchTool = ToolSpec{
	Name:        "search",
	Description: "Search the corpus.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
}

// qwen3ToolsBlock is the "# Tools" block for qwen3SearchTool, closed with <|im_end|>:
//
//	{{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
//	{%- for tool in tools %}
//	    {{- "\n" }}
//	    {{- tool | tojson }}
//	{%- endfor %}
//	{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
const qwen3ToolsBlock = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
	`{"type": "function", "function": {"name": "search", "description": "Search the corpus.", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}` +
	"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"

// qwen3Call is an agent turn as the policy writes it: reasoning, then a tool call.
const qwen3Call = "<think>\nI should search.\n</think>\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Glass River\"}}\n</tool_call>"

func TestRenderChatQwen3(t *testing.T) {
	sys := Message{"system", "You are a search agent."}
	user := Message{"user", "Who directed The Glass River?"}
	cases := []struct {
		name     string
		msgs     []Message
		tools    []ToolSpec
		gen      bool
		thinking bool
		want     string
	}{{
		// {%- if tools %}
		//     {{- '<|im_start|>system\n' }}
		//     {%- if messages[0].role == 'system' %}
		//         {{- messages[0].content + '\n\n' }}
		//     {%- endif %}
		// ... (qwen3ToolsBlock)
		// {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
		//     {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
		// {%- if add_generation_prompt %}
		//     {{- '<|im_start|>assistant\n' }}
		name: "system, tools, user, generation prompt (the rollout's first prompt)",
		msgs: []Message{sys, user}, tools: []ToolSpec{qwen3SearchTool}, gen: true, thinking: true,
		want: "<|im_start|>system\nYou are a search agent.\n\n" + qwen3ToolsBlock +
			"<|im_start|>user\nWho directed The Glass River?<|im_end|>\n<|im_start|>assistant\n",
	}, {
		// With tools and no system message the system turn is the tools block alone: there is
		// no default system prompt, unlike Qwen2.5's.
		name: "tools without a system message",
		msgs: []Message{user}, tools: []ToolSpec{qwen3SearchTool}, gen: true, thinking: true,
		want: "<|im_start|>system\n" + qwen3ToolsBlock +
			"<|im_start|>user\nWho directed The Glass River?<|im_end|>\n<|im_start|>assistant\n",
	}, {
		// {%- else %}
		//     {%- if messages[0].role == 'system' %}
		//         {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
		//     {%- endif %}
		name: "system without tools",
		msgs: []Message{sys, user}, gen: true, thinking: true,
		want: "<|im_start|>system\nYou are a search agent.<|im_end|>\n" +
			"<|im_start|>user\nWho directed The Glass River?<|im_end|>\n<|im_start|>assistant\n",
	}, {
		name: "no system turn at all",
		msgs: []Message{user}, gen: true, thinking: true,
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n<|im_start|>assistant\n",
	}, {
		// {%- if enable_thinking is defined and enable_thinking is false %}
		//     {{- '<think>\n\n</think>\n\n' }}
		name: "generation prompt with thinking disabled",
		msgs: []Message{user}, gen: true, thinking: false,
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
	}, {
		name: "thinking disabled without a generation prompt writes nothing more",
		msgs: []Message{user}, gen: false, thinking: false,
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n",
	}, {
		// One episode: both assistant turns follow the last user query (index 1), so
		//     {%- if loop.index0 > ns.last_query_index %}
		//         {%- if loop.last or (not loop.last and reasoning_content) %}
		//             {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
		// keeps both reasoning blocks, and the tool result is a user turn:
		//     {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
		//         {{- '<|im_start|>user' }}
		//     {{- '\n<tool_response>\n' }}
		//     {{- message.content }}
		//     {{- '\n</tool_response>' }}
		//     {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
		//         {{- '<|im_end|>\n' }}
		name: "an episode: calls, tool results, answer",
		msgs: []Message{sys, user, {"assistant", qwen3Call}, {"tool", "Doc 1"}, {"tool", "Doc 2"},
			{"assistant", "<think>\nAlice Varn.\n</think>\n\n<answer>Alice Varn</answer>"}},
		tools: []ToolSpec{qwen3SearchTool},
		want: "<|im_start|>system\nYou are a search agent.\n\n" + qwen3ToolsBlock +
			"<|im_start|>user\nWho directed The Glass River?<|im_end|>\n" +
			"<|im_start|>assistant\n" + qwen3Call + "<|im_end|>\n" +
			"<|im_start|>user\n<tool_response>\nDoc 1\n</tool_response>\n<tool_response>\nDoc 2\n</tool_response><|im_end|>\n" +
			"<|im_start|>assistant\n<think>\nAlice Varn.\n</think>\n\n<answer>Alice Varn</answer><|im_end|>\n",
	}, {
		// {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
		// {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
		// normalise the newlines around the reasoning of a turn in the episode.
		name: "reasoning newlines normalised",
		msgs: []Message{user, {"assistant", "<think>\n\n\nhmm\n\n</think>\n\n\nok"}},
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n" +
			"<|im_start|>assistant\n<think>\nhmm\n</think>\n\nok<|im_end|>\n",
	}, {
		// A second question makes index 3 the last query: the first answer (index 2) comes
		// before it, so
		//     {%- else %}
		//         {{- '<|im_start|>' + message.role + '\n' + content }}
		// drops its reasoning.
		name: "past turns' reasoning dropped before the last user query",
		msgs: []Message{sys, user, {"assistant", "<think>\nEasy.\n</think>\n\n<answer>Alice Varn</answer>"},
			{"user", "And its year?"}},
		gen: true, thinking: true,
		want: "<|im_start|>system\nYou are a search agent.<|im_end|>\n" +
			"<|im_start|>user\nWho directed The Glass River?<|im_end|>\n" +
			"<|im_start|>assistant\n<answer>Alice Varn</answer><|im_end|>\n" +
			"<|im_start|>user\nAnd its year?<|im_end|>\n<|im_start|>assistant\n",
	}, {
		// The last message gets a reasoning block even when it has none (loop.last); an
		// earlier one in the episode without reasoning is its content alone
		// ("{%- else %} {{- '<|im_start|>' + message.role + '\n' + content }}").
		name: "empty reasoning block on the last assistant message only",
		msgs: []Message{user, {"assistant", "<tool_call>\n{}\n</tool_call>"}, {"tool", "r"}, {"assistant", "\ndone"}},
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n" +
			"<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|>\n" +
			"<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n" +
			"<|im_start|>assistant\n<think>\n\n</think>\n\ndone<|im_end|>\n",
	}, {
		// {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
		// A user message that only wraps a tool response is not a query, so the first
		// assistant turn stays in the episode and keeps its reasoning.
		name: "a user message wrapping a tool response is not a query",
		msgs: []Message{user, {"assistant", qwen3Call}, {"user", "<tool_response>\nr\n</tool_response>"}, {"assistant", "x"}},
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n" +
			"<|im_start|>assistant\n" + qwen3Call + "<|im_end|>\n" +
			"<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n" +
			"<|im_start|>assistant\n<think>\n\n</think>\n\nx<|im_end|>\n",
	}, {
		// With no user message at all, ns.last_query_index stays messages|length - 1, so
		// only the last message could follow it, and none does.
		name: "no user query: nothing follows the last query",
		msgs: []Message{sys, {"assistant", "<think>\nr\n</think>\n\nhi"}},
		want: "<|im_start|>system\nYou are a search agent.<|im_end|>\n<|im_start|>assistant\nhi<|im_end|>\n",
	}, {
		// Later system messages are turns; roles the template does not know are left out.
		name: "later system turn and unknown roles",
		msgs: []Message{user, {"system", "Be brief."}, {"critic", "ignored"}},
		want: "<|im_start|>user\nWho directed The Glass River?<|im_end|>\n<|im_start|>system\nBe brief.<|im_end|>\n",
	}, {
		name: "empty conversation",
		gen:  true, thinking: true,
		want: "<|im_start|>assistant\n",
	}}
	for _, tc := range cases {
		if got := RenderChatQwen3(tc.msgs, tc.tools, tc.gen, tc.thinking); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestRenderChatQwen3MatchesRollout checks that for what our rollout renders (a system
// message, a user query, then agent turns written "<think>\n...\n</think>\n\n..." and tool
// results) Qwen3's template gives the text of Qwen2.5's, which the rollout appends turn by turn.
func TestRenderChatQwen3MatchesRollout(t *testing.T) {
	msgs := []Message{{"system", "S"}, {"user", "Q"}}
	tools := []ToolSpec{qwen3SearchTool}
	for _, next := range []Message{{"assistant", qwen3Call}, {"tool", "Doc 1"}, {"tool", "Doc 2"},
		{"assistant", qwen3Call}, {"tool", "Doc 3"}, {"assistant", "<think>\nSo.\n</think>\n\n<answer>A</answer>"}} {
		msgs = append(msgs, next)
		gen := next.Role == "tool"
		if got, want := RenderChatQwen3(msgs, tools, gen, true), RenderChat(msgs, tools, gen); got != want {
			t.Fatalf("after %d messages:\nqwen3   %q\nqwen2.5 %q", len(msgs), got, want)
		}
	}
}

// TestRenderChatQwen3IDs ties a rendered Qwen3 prompt to the reference tokenizer: golden case
// tokenize/8 is a generation prompt followed by the start of a reasoning block.
func TestRenderChatQwen3IDs(t *testing.T) {
	cases, err := golden.Load("../testdata/golden/tokenizer_qwen3/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var want []int
	for _, c := range cases {
		if c.Name == "tokenize/8" {
			text, want = c.Inputs["text"].Str, c.Outputs["ids"].IntData()
		}
	}
	if want == nil {
		t.Fatal("cases.json: no case tokenize/8")
	}
	tok := loadQwen3(t)
	if tok.ChatFormat() != ChatQwen3 {
		t.Fatalf("ChatFormat() = %v, want qwen3 (the folder's template writes <think>)", tok.ChatFormat())
	}
	msgs := []Message{{"system", "You are a helpful assistant."}, {"user", "Who directed The Glass River?"}}
	prompt := tok.RenderChat(msgs, nil, true)
	if got := prompt + "<think>\nI should search.\n</think>\n"; got != text {
		t.Fatalf("rendered prompt + reasoning = %q, want the golden text %q", got, text)
	}
	ids := tok.RenderChatIDs(msgs, nil, true)
	if !reflect.DeepEqual(ids, want[:len(ids)]) {
		t.Errorf("RenderChatIDs = %v, want the golden ids' prefix %v", ids, want[:len(ids)])
	}
	if got := tok.Encode(text); !reflect.DeepEqual(got, want) {
		t.Errorf("Encode(golden text) = %v, want %v", got, want)
	}
}

func TestChatFormatOfFolder(t *testing.T) {
	// A small trained tokenizer.json keeps the test fast: only the configs beside it matter.
	small, err := Train([]string{"Who directed The Glass River?"}, 270, []string{imStart, imEnd, endOfText}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := small.Save(src); err != nil {
		t.Fatal(err)
	}
	tokJSON, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("../testdata/golden/tokenizer_qwen3/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var withTemplate map[string]any
	if err := json.Unmarshal(cfg, &withTemplate); err != nil {
		t.Fatal(err)
	}
	delete(withTemplate, "added_tokens_decoder") // Qwen3's ids, beyond the small vocabulary
	noTemplate := map[string]any{}
	for k, v := range withTemplate {
		if k != "chat_template" {
			noTemplate[k] = v
		}
	}
	qwen25 := map[string]any{}
	for k, v := range noTemplate {
		qwen25[k] = v
	}
	qwen25["chat_template"] = Qwen25ChatTemplate
	named := map[string]any{}
	for k, v := range noTemplate {
		named[k] = v
	}
	named["chat_template"] = []map[string]string{{"name": "tool_use", "template": "x"}, {"name": "default", "template": withTemplate["chat_template"].(string)}}
	cases := []struct {
		name      string
		tokConfig map[string]any // nil: no tokenizer_config.json
		modelType string         // "": no config.json
		want      ChatFormat
	}{
		{"Qwen3 template", withTemplate, "", ChatQwen3},
		{"Qwen3 template, named list", named, "", ChatQwen3},
		{"Qwen2.5 template beats model_type", qwen25, "qwen3", ChatQwen25},
		{"no template, model_type qwen3", noTemplate, "qwen3", ChatQwen3},
		{"no config, model_type qwen3", nil, "qwen3", ChatQwen3},
		{"no template, model_type qwen2", noTemplate, "qwen2", ChatQwen25},
		{"nothing", nil, "", ChatQwen25},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		write := func(name string, v any) {
			var b []byte
			if s, ok := v.([]byte); ok {
				b = s
			} else if b, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(FileName, tokJSON)
		if tc.tokConfig != nil {
			write("tokenizer_config.json", tc.tokConfig)
		}
		if tc.modelType != "" {
			write("config.json", map[string]string{"model_type": tc.modelType})
		}
		tok, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tok.ChatFormat() != tc.want {
			t.Errorf("%s: ChatFormat() = %v, want %v", tc.name, tok.ChatFormat(), tc.want)
		}
		if tc.name == "nothing" {
			// The format survives Save and Load: a trained-style folder stays Qwen2.5.
			out := t.TempDir()
			if err := tok.Save(out); err != nil {
				t.Fatal(err)
			}
			back, err := Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if back.ChatFormat() != ChatQwen25 {
				t.Errorf("saved and reloaded: ChatFormat() = %v, want qwen2.5", back.ChatFormat())
			}
		}
	}

	bad := []struct{ file, content, want string }{
		{"tokenizer_config.json", `{"chat_template": 3}`, "chat_template"},
		{"config.json", `{"model_type": `, "config.json"},
	}
	for _, b := range bad {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), tokJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, b.file), []byte(b.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %s: Load error %v, want one naming %s", b.file, b.content, err, b.want)
		}
	}
}
