package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"agentr1/env"
	"agentr1/mdp"
	"agentr1/tokenizer"
)

// maxTranscriptLine is the longest transcript line ReadTranscripts reads (64 MiB).
const maxTranscriptLine = 64 << 20

// Transcript is one chat transcript cut as a rollout cuts an episode: Prompt is the text up to
// and including the first "<|im_start|>assistant\n"; turn k's Actions[k] is what the agent
// wrote (trained on) and Observations[k] the text that follows it up to the next agent text
// (context: tool responses and any other turn, weighted by SFTConfig.ContextWeight).
type Transcript struct {
	Prompt       string   // the text up to the first assistant header, included
	Actions      []string // the agent's text of each turn
	Observations []string // the text after each turn's action; len(Actions) entries
}

// Text is the whole transcript as one string, the concatenation of its parts.
func (t Transcript) Text() string {
	var b strings.Builder
	b.WriteString(t.Prompt)
	for k := range t.Actions {
		b.WriteString(t.Actions[k])
		b.WriteString(t.Observations[k])
	}
	return b.String()
}

// transcriptLine is one JSONL line: OpenAI-style messages (with optional tools) or ChatML text.
type transcriptLine struct {
	Messages []json.RawMessage `json:"messages"` // each decoded by renderMessages, which names its index
	Tools    []toolEntry       `json:"tools"`
	Text     *string           `json:"text"`
}

// chatMessage is one OpenAI-style message. Content is a string (or null beside tool calls).
type chatMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []toolCall `json:"tool_calls"`
	// Weight is OpenAI fine-tuning's per-message weight, read only to refuse the 0 that leaves
	// a message out of the loss: every assistant message here is trained on.
	Weight json.RawMessage `json:"weight"`
}

type toolCall struct {
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type toolEntry struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ParseTranscript reads one JSONL line, either {"messages": [...], "tools": [...]} (OpenAI
// chat format) or {"text": "<|im_start|>..."} (ChatML), and cuts it into a Transcript. Messages
// are rendered with Qwen2.5's chat template (tokenizer.RenderChat): an assistant's tool calls
// as "<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>" after its content, each on
// its own line, and a run of tool messages as one user turn of <tool_response> blocks. An
// error names the field at fault (for example messages[2].tool_calls[0].function.arguments).
func ParseTranscript(line []byte) (Transcript, error) {
	var in transcriptLine
	dec := json.NewDecoder(bytes.NewReader(line)) // other fields (ids, names) are ignored
	if err := dec.Decode(&in); err != nil {
		return Transcript{}, decodeError("", err)
	}
	if dec.More() {
		return Transcript{}, fmt.Errorf("invalid JSON: more than one value on the line")
	}
	switch {
	case in.Text != nil && in.Messages != nil:
		return Transcript{}, fmt.Errorf(`both "text" and "messages": give one`)
	case in.Text != nil:
		if in.Tools != nil {
			return Transcript{}, fmt.Errorf(`field "tools": only with "messages" (ChatML text lists its tools in its system turn)`)
		}
		return CutChatML(*in.Text)
	case in.Messages != nil:
		text, err := renderMessages(in.Messages, in.Tools)
		if err != nil {
			return Transcript{}, err
		}
		return CutChatML(text)
	}
	return Transcript{}, fmt.Errorf(`neither "messages" nor "text"`)
}

// renderMessages validates OpenAI-style messages and tools and renders them with
// tokenizer.RenderChat, tool calls written into the assistant's content as Qwen2.5's template
// writes them.
func renderMessages(msgs []json.RawMessage, tools []toolEntry) (string, error) {
	if len(msgs) == 0 {
		return "", fmt.Errorf(`field "messages": empty`)
	}
	specs := make([]tokenizer.ToolSpec, len(tools))
	for i, t := range tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return "", fmt.Errorf("field %s.type: %q, want \"function\"", field, t.Type)
		}
		if t.Function.Name == "" {
			return "", fmt.Errorf("field %s.function.name: empty", field)
		}
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && !isJSONObject(p) {
			return "", fmt.Errorf("field %s.function.parameters: not a JSON object", field)
		}
		specs[i] = tokenizer.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
	}
	out := make([]tokenizer.Message, len(msgs))
	for i, raw := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		var m chatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", decodeError(field, err)
		}
		content := ""
		if m.Content != nil {
			content = *m.Content
		}
		if strings.Contains(content, env.ImStart) || strings.Contains(content, env.ImEnd) {
			return "", fmt.Errorf("field %s.content: holds a ChatML marker (%s or %s)", field, env.ImStart, env.ImEnd)
		}
		if w := bytes.TrimSpace(m.Weight); len(w) > 0 && string(w) != "1" {
			return "", fmt.Errorf("field %s.weight: %s; only 1 is supported (every assistant message is trained on)", field, w)
		}
		switch m.Role {
		case "system", "user", "tool":
			if len(m.ToolCalls) > 0 {
				return "", fmt.Errorf("field %s.tool_calls: only an assistant message calls tools", field)
			}
		case "assistant":
			calls, err := renderToolCalls(m.ToolCalls, field)
			if err != nil {
				return "", err
			}
			if content == "" && calls == "" {
				return "", fmt.Errorf("field %s.content: an assistant message with neither content nor tool calls", field)
			}
			if content != "" && calls != "" {
				content += "\n"
			}
			content += calls
		default:
			return "", fmt.Errorf("field %s.role: unknown role %q (want system, user, assistant or tool)", field, m.Role)
		}
		out[i] = tokenizer.Message{Role: m.Role, Content: content}
	}
	return tokenizer.RenderChat(out, specs, false), nil
}

// decodeError describes an error decoding the value at field ("" for the whole line): a value
// of the wrong JSON type by the field it is in, what it is and what is wanted (a content given
// as OpenAI's list of parts, say, is "field messages[0].content: an array, want a string"
// rather than a JSON syntax error, which the line is not); anything else as invalid JSON.
func decodeError(field string, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if te.Field != "" {
		field = strings.TrimPrefix(field+"."+te.Field, ".")
	}
	want := "a " + te.Type.Kind().String()
	switch te.Type.Kind() {
	case reflect.Slice:
		want = "an array"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Int, reflect.Int64, reflect.Float64:
		want = "a number"
	}
	return fmt.Errorf("field %s: a JSON %s, want %s", field, te.Value, want)
}

// renderToolCalls writes calls as Qwen2.5's template does, one per line:
//
//	<tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
//
// with ARGS re-printed as json.dumps prints it. OpenAI gives arguments as a string holding a
// JSON object; an object given directly is taken as well.
func renderToolCalls(calls []toolCall, field string) (string, error) {
	var b strings.Builder
	for j, c := range calls {
		f := fmt.Sprintf("%s.tool_calls[%d]", field, j)
		if c.Type != "" && c.Type != "function" {
			return "", fmt.Errorf("field %s.type: %q, want \"function\"", f, c.Type)
		}
		if c.Function.Name == "" {
			return "", fmt.Errorf("field %s.function.name: empty", f)
		}
		if strings.ContainsAny(c.Function.Name, "\"\\\n") {
			return "", fmt.Errorf("field %s.function.name: %q holds a quote, backslash or newline", f, c.Function.Name)
		}
		args := bytes.TrimSpace(c.Function.Arguments)
		var s string
		if json.Unmarshal(args, &s) == nil { // a string holding the JSON, as OpenAI writes it
			args = bytes.TrimSpace([]byte(s))
		}
		printed, err := tokenizer.PyJSON(args)
		if err != nil || !isJSONObject(args) {
			return "", fmt.Errorf("field %s.function.arguments: not a JSON object: %.60q", f, args)
		}
		if j > 0 {
			b.WriteByte('\n')
		}
		// The template writes the name between quotes as it is, not through tojson.
		b.WriteString(env.ToolCallOpen + "\n{\"name\": \"" + c.Function.Name + "\", \"arguments\": " + printed + "}\n" + env.ToolCallClose)
	}
	return b.String(), nil
}

// isJSONObject reports whether raw is one valid JSON object.
func isJSONObject(raw []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) == nil && len(raw) > 0 && raw[0] == '{'
}

// CutChatML cuts ChatML text into a Transcript as a rollout would have produced it: the prompt
// runs to the first "<|im_start|>assistant\n"; each assistant turn's content is an action,
// with its "<|im_end|>" when the content is a final answer, and without it when the content
// ends with "</tool_call>" (generation stops there and the environment closes the turn); the
// text between two actions is an observation. The text must be turns of
// "<|im_start|>ROLE\nCONTENT<|im_end|>" separated by "\n" (a last "\n" optional), with ROLE
// system, user or assistant and at least one non-empty assistant turn.
func CutChatML(text string) (Transcript, error) {
	var t Transcript
	var ctx strings.Builder // context text since the last action
	rest := text
	for n := 0; rest != ""; n++ {
		if n > 0 {
			if !strings.HasPrefix(rest, "\n") {
				return Transcript{}, fmt.Errorf(`field "text": turn %d: want "\n" after %s, found %.20q`, n, env.ImEnd, rest)
			}
			ctx.WriteString("\n")
			rest = rest[1:]
			if rest == "" {
				break
			}
		}
		if !strings.HasPrefix(rest, env.ImStart) {
			return Transcript{}, fmt.Errorf(`field "text": turn %d: want %s, found %.20q`, n+1, env.ImStart, rest)
		}
		role, body, ok := strings.Cut(rest[len(env.ImStart):], "\n")
		if !ok {
			return Transcript{}, fmt.Errorf(`field "text": turn %d: no newline after the role`, n+1)
		}
		content, after, ok := strings.Cut(body, env.ImEnd)
		if !ok {
			return Transcript{}, fmt.Errorf(`field "text": turn %d (%s): no %s`, n+1, role, env.ImEnd)
		}
		if strings.Contains(content, env.ImStart) {
			return Transcript{}, fmt.Errorf(`field "text": turn %d (%s): %s before its %s`, n+1, role, env.ImStart, env.ImEnd)
		}
		rest = after
		switch role {
		case "system", "user":
			ctx.WriteString(env.ImStart + role + "\n" + content + env.ImEnd)
		case "assistant":
			if content == "" {
				return Transcript{}, fmt.Errorf(`field "text": turn %d (assistant): empty`, n+1)
			}
			ctx.WriteString(env.ImStart + "assistant\n")
			action := content + env.ImEnd
			if strings.HasSuffix(content, env.ToolCallClose) {
				action = content
			}
			if len(t.Actions) == 0 {
				t.Prompt = ctx.String()
			} else {
				t.Observations = append(t.Observations, ctx.String())
			}
			t.Actions = append(t.Actions, action)
			ctx.Reset()
			if action == content {
				ctx.WriteString(env.ImEnd)
			}
		default:
			return Transcript{}, fmt.Errorf(`field "text": turn %d: unknown role %q (want system, user or assistant)`, n+1, role)
		}
	}
	if len(t.Actions) == 0 {
		return Transcript{}, fmt.Errorf("no assistant turn: nothing to train on")
	}
	last := ctx.String()
	if last == "\n" {
		last = "" // the rollout ends at the final answer's <|im_end|>
	}
	t.Observations = append(t.Observations, last)
	return t, nil
}

// Trajectory tokenises the transcript as a rollout sees it, segment by segment: the prompt and
// each observation as environment text, each action as agent text (with zero log-probs:
// transcripts are not sampled), as world.Demo.Trajectory does for the scripted demonstrations.
func (t Transcript) Trajectory(tok *tokenizer.Tokenizer) *mdp.Trajectory {
	tr := &mdp.Trajectory{Prompt: tok.Encode(t.Prompt)}
	for k, a := range t.Actions {
		turn := mdp.Turn{Action: tok.Encode(a), Observation: tok.Encode(t.Observations[k])}
		turn.ActionLogProbs = make([]float32, len(turn.Action))
		tr.Turns = append(tr.Turns, turn)
	}
	return tr
}

// ReadTranscripts reads a JSONL file of chat transcripts (ParseTranscript's formats; blank lines
// skipped), tokenises each with tok and returns the demonstrations. The whole input is checked
// before anything is returned: the first malformed line is an error naming name, the line
// number and the field, as is a transcript longer than maxLen tokens (0: no limit).
func ReadTranscripts(r io.Reader, name string, tok *tokenizer.Tokenizer, maxLen int) ([]*mdp.Trajectory, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxTranscriptLine)
	var out []*mdp.Trajectory
	line := 0 // the line number of the last line read
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		t, err := ParseTranscript(raw)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		tr := t.Trajectory(tok)
		if n := len(tr.Prompt) + tr.ResponseLen(); maxLen > 0 && n > maxLen {
			return nil, fmt.Errorf("%s:%d: transcript of %d tokens, longer than the model's limit of %d (max_position_embeddings)", name, line, n, maxLen)
		}
		out = append(out, tr)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err) // the line that could not be read
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no transcripts", name)
	}
	return out, nil
}
