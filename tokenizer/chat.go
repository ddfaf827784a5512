package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The ChatML markers and the tool tags of Qwen2.5 (and Qwen3) vocabularies.
const (
	imStart      = "<|im_start|>"
	imEnd        = "<|im_end|>"
	endOfText    = "<|endoftext|>"
	toolCall     = "<tool_call>"
	toolCallEnd  = "</tool_call>"
	toolResp     = "<tool_response>"
	toolRespEnd  = "</tool_response>"
	generationAt = imStart + "assistant\n"
)

// QwenDefaultSystem is the system prompt Qwen2.5's chat template inserts when the conversation
// does not begin with a system message.
const QwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

// Message is one turn of a conversation. Role is "system", "user", "assistant" or "tool" (a
// tool's response); an assistant's tool calls are part of its Content, as the policy wrote them
// ("<tool_call>\n{...}\n</tool_call>").
type Message struct {
	Role    string // "system", "user", "assistant" or "tool"
	Content string // the message's text, tool calls included
}

// ToolSpec describes a tool to the model, as the OpenAI-style function schema Qwen's template
// prints: {"type": "function", "function": {"name", "description", "parameters"}}.
type ToolSpec struct {
	Name        string          // the function's name
	Description string          // what the function does, for the model
	Parameters  json.RawMessage // a JSON Schema object; nil to leave "parameters" out
}

// RenderChat renders a conversation as Qwen2.5's chat template does (tokenizer_config.json
// "chat_template" of Qwen2.5-Instruct, ChatML with Hermes-style tool calls):
//
//   - with tools, the system turn is the given system message (or QwenDefaultSystem), then
//     "\n\n# Tools\n\n...<tools>", one JSON line per tool, "\n</tools>\n\n" and the
//     instruction to answer with "<tool_call>\n{...}\n</tool_call>"; without tools, just the
//     system message (or QwenDefaultSystem);
//   - user and assistant turns (and a system message other than the first) are
//     "<|im_start|>ROLE\nCONTENT<|im_end|>\n";
//   - a run of consecutive "tool" messages becomes one user turn holding one
//     "\n<tool_response>\nCONTENT\n</tool_response>" per message;
//   - messages with another role are left out, as the template does;
//   - addGenerationPrompt appends "<|im_start|>assistant\n".
//
// Tool schemas are printed as Jinja's tojson (Python json.dumps: ", " and ": " separators,
// non-ASCII kept, keys in the order given). It panics if a tool's Parameters is not valid JSON:
// tool schemas are fixed by the program.
func RenderChat(msgs []Message, tools []ToolSpec, addGenerationPrompt bool) string {
	var b strings.Builder
	first := 0 // messages before this index were rendered in the system turn
	system := QwenDefaultSystem
	if len(msgs) > 0 && msgs[0].Role == "system" {
		system = msgs[0].Content
		first = 1
	}
	b.WriteString(imStart + "system\n")
	b.WriteString(system)
	if len(tools) > 0 {
		b.WriteString("\n\n")
		writeToolsBlock(&b, tools)
	}
	b.WriteString(imEnd + "\n")
	for i := first; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case "user", "system", "assistant":
			b.WriteString(imStart + m.Role + "\n" + m.Content + imEnd + "\n")
		case "tool":
			writeToolResponse(&b, msgs, i)
		}
	}
	if addGenerationPrompt {
		b.WriteString(generationAt)
	}
	return b.String()
}

// writeToolsBlock writes the "# Tools" part of the system turn, which Qwen2.5's and Qwen3's
// templates share: the instructions, one JSON line per tool inside <tools></tools>, and the
// <tool_call> format.
func writeToolsBlock(b *strings.Builder, tools []ToolSpec) {
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n")
	b.WriteString("You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for _, tool := range tools {
		b.WriteByte('\n')
		writeToolJSON(b, tool)
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n")
	b.WriteString(toolCall + "\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n" + toolCallEnd)
}

// writeToolResponse writes tool message msgs[i] as both templates do: a run of consecutive
// tool messages is one user turn, opened by the first and closed by the last, holding one
// "\n<tool_response>\nCONTENT\n</tool_response>" per message.
func writeToolResponse(b *strings.Builder, msgs []Message, i int) {
	if i == 0 || msgs[i-1].Role != "tool" {
		b.WriteString(imStart + "user")
	}
	b.WriteString("\n" + toolResp + "\n" + msgs[i].Content + "\n" + toolRespEnd)
	if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
		b.WriteString(imEnd + "\n")
	}
}

// ChatFormat names a chat template this package renders.
type ChatFormat int

const (
	// ChatQwen25 is Qwen2.5-Instruct's template (RenderChat), the format of trained tokenizers.
	ChatQwen25 ChatFormat = iota
	// ChatQwen3 is Qwen3's template (RenderChatQwen3), with <think> reasoning blocks.
	ChatQwen3
)

// String returns "qwen2.5" or "qwen3".
func (f ChatFormat) String() string {
	if f == ChatQwen3 {
		return "qwen3"
	}
	return "qwen2.5"
}

// chatFormatOf picks the chat format of a model folder: Qwen3's when its tokenizer_config.json
// "chat_template" writes <think> blocks (Qwen2.5's never does), or, for a folder without a
// template, when its config.json says model_type "qwen3"; Qwen2.5's otherwise.
func chatFormatOf(template, modelType string) ChatFormat {
	switch {
	case strings.Contains(template, "<think>"):
		return ChatQwen3
	case template == "" && modelType == "qwen3":
		return ChatQwen3
	}
	return ChatQwen25
}

// ChatFormat returns the chat template the tokenizer's folder declares (see Load).
func (t *Tokenizer) ChatFormat() ChatFormat { return t.chat }

// RenderChat renders a conversation in the tokenizer's ChatFormat: RenderChat for Qwen2.5,
// RenderChatQwen3 with thinking enabled (the template's default) for Qwen3.
func (t *Tokenizer) RenderChat(msgs []Message, tools []ToolSpec, addGenerationPrompt bool) string {
	if t.chat == ChatQwen3 {
		return RenderChatQwen3(msgs, tools, addGenerationPrompt, true)
	}
	return RenderChat(msgs, tools, addGenerationPrompt)
}

// RenderChatIDs returns the ids of the tokenizer's RenderChat text. Markers become their
// added-token ids; so does marker text inside a message, as in Hugging Face's
// apply_chat_template(tokenize=True).
func (t *Tokenizer) RenderChatIDs(msgs []Message, tools []ToolSpec, addGenerationPrompt bool) []int {
	return t.Encode(t.RenderChat(msgs, tools, addGenerationPrompt))
}

// The tags of Qwen3's reasoning block.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// RenderChatQwen3 renders a conversation as Qwen3's chat template does (the "chat_template" of
// Qwen3's tokenizer_config.json). It differs from Qwen2.5's (RenderChat) in four ways:
//
//   - there is no default system prompt: without tools and without a leading system message
//     there is no system turn; with tools the system turn is the system message and "\n\n"
//     (when there is one), then the same "# Tools" block as Qwen2.5's;
//   - an assistant message's reasoning is split from its content at the last "</think>", as
//     the template does for a message without reasoning_content: content is what follows,
//     with leading newlines dropped; reasoning is what precedes the first "</think>", after
//     the last "<think>", without the newlines around it;
//   - the last user query is the last user message that is not a tool response wrapped in
//     "<tool_response>...</tool_response>". Assistant messages after it (the current
//     multi-step tool episode) are written "<think>\nREASONING\n</think>\n\nCONTENT" when
//     they have reasoning or are the last message; every other assistant message is written
//     as its content alone, so past turns' reasoning is dropped;
//   - with addGenerationPrompt and thinking false (the template's enable_thinking=false), the
//     assistant turn opens with an empty "<think>\n\n</think>\n\n" block.
//
// User, tool and other-role messages are rendered as in RenderChat. Tool calls are part of an
// assistant's Content, as the policy writes them, so the template's tool_calls branch is not
// taken. It panics, as RenderChat does, if a tool's Parameters is not valid JSON.
func RenderChatQwen3(msgs []Message, tools []ToolSpec, addGenerationPrompt, thinking bool) string {
	var b strings.Builder
	hasSystem := len(msgs) > 0 && msgs[0].Role == "system"
	if len(tools) > 0 {
		b.WriteString(imStart + "system\n")
		if hasSystem {
			b.WriteString(msgs[0].Content + "\n\n")
		}
		writeToolsBlock(&b, tools)
		b.WriteString(imEnd + "\n")
	} else if hasSystem {
		b.WriteString(imStart + "system\n" + msgs[0].Content + imEnd + "\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		c := msgs[i].Content
		if msgs[i].Role == "user" && !(strings.HasPrefix(c, toolResp) && strings.HasSuffix(c, toolRespEnd)) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.WriteString(imStart + m.Role + "\n" + m.Content + imEnd + "\n")
		case m.Role == "assistant":
			reasoning, content := splitThink(m.Content)
			b.WriteString(imStart + "assistant\n")
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString(thinkOpen + "\n" + strings.Trim(reasoning, "\n") + "\n" + thinkClose + "\n\n")
				content = strings.TrimLeft(content, "\n")
			}
			b.WriteString(content + imEnd + "\n")
		case m.Role == "tool":
			writeToolResponse(&b, msgs, i)
		}
	}
	if addGenerationPrompt {
		b.WriteString(generationAt)
		if !thinking {
			b.WriteString(thinkOpen + "\n\n" + thinkClose + "\n\n")
		}
	}
	return b.String()
}

// splitThink splits an assistant message into its reasoning and its content as Qwen3's
// template does when the message has no reasoning_content:
//
//	content = message.content.split('</think>')[-1].lstrip('\n')
//	reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
//
// A message without "</think>" is all content.
func splitThink(s string) (reasoning, content string) {
	first := strings.Index(s, thinkClose)
	if first < 0 {
		return "", s
	}
	content = strings.TrimLeft(s[strings.LastIndex(s, thinkClose)+len(thinkClose):], "\n")
	reasoning = strings.TrimRight(s[:first], "\n")
	if j := strings.LastIndex(reasoning, thinkOpen); j >= 0 {
		reasoning = reasoning[j+len(thinkOpen):]
	}
	return strings.TrimLeft(reasoning, "\n"), content
}

// writeToolJSON writes {"type": "function", "function": {...}} in json.dumps style.
func writeToolJSON(b *strings.Builder, tool ToolSpec) {
	b.WriteString(`{"type": "function", "function": {"name": `)
	writePyString(b, tool.Name)
	b.WriteString(`, "description": `)
	writePyString(b, tool.Description)
	if len(bytes.TrimSpace(tool.Parameters)) > 0 {
		b.WriteString(`, "parameters": `)
		if err := writePyJSON(b, tool.Parameters); err != nil {
			panic(fmt.Sprintf("tokenizer.RenderChat: tool %q: parameters: %v", tool.Name, err))
		}
	}
	b.WriteString("}}")
}

// writePyJSON re-prints a JSON value as Python's json.dumps(x, ensure_ascii=False) would after
// json.loads: object keys in their order, ", " between items, ": " after keys, numbers as
// written.
func writePyJSON(b *strings.Builder, raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := writePyValue(b, dec); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func writePyValue(b *strings.Builder, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		closing := "]"
		if v == '{' {
			closing = "}"
		}
		b.WriteRune(rune(v))
		for n := 0; dec.More(); n++ {
			if n > 0 {
				b.WriteString(", ")
			}
			if v == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				writePyString(b, key.(string))
				b.WriteString(": ")
			}
			if err := writePyValue(b, dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		b.WriteString(closing)
	case string:
		writePyString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

// writePyString writes s as a JSON string the way json.dumps(ensure_ascii=False) does: only
// '"', '\\' and control characters below U+0020 are escaped (\n \r \t \b \f by name, the rest
// as \u00XX). Invalid UTF-8 becomes U+FFFD, since Python strings cannot hold it.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r) // RuneError for an invalid byte writes U+FFFD
		}
	}
	b.WriteByte('"')
}
