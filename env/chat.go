package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ChatML markers of Qwen2.5, the chat format Agent-R1 trains in (docs/PAPER.md section 3).
const (
	ImStart = "<|im_start|>"
	ImEnd   = "<|im_end|>"
)

// RenderPrompt renders a system and a user message in ChatML and opens the assistant's turn,
// as Hugging Face's apply_chat_template(..., add_generation_prompt=True) does for Qwen2.5:
//
//	<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
func RenderPrompt(system, user string) string {
	var b strings.Builder
	b.WriteString(ImStart + "system\n" + system + ImEnd + "\n")
	b.WriteString(ImStart + "user\n" + user + ImEnd + "\n")
	b.WriteString(ImStart + "assistant\n")
	return b.String()
}

// ToolResponse wraps one tool's output as Qwen2.5's template renders a tool message:
// "<tool_response>\n{content}\n</tool_response>".
func ToolResponse(content string) string {
	return "<tool_response>\n" + content + "\n</tool_response>"
}

// ObservationText renders the environment's answer to one agent turn, the text the rollout
// tokenises and appends (masked out of the loss) before the agent generates again. It closes
// the assistant message, opens a user message holding one <tool_response> block per tool call
// (Qwen2.5 groups consecutive tool messages into one user turn, each block on its own line),
// and opens the next assistant turn (docs/PAPER.md section 3):
//
//	<|im_end|>\n<|im_start|>user\n<tool_response>\n...\n</tool_response><|im_end|>\n<|im_start|>assistant\n
//
// Generation stops at "</tool_call>", so the agent's turn is normally still open and the
// observation begins with "<|im_end|>". If the agent's text already ended with "<|im_end|>"
// (turnClosed), the observation begins with the "\n" that follows it in ChatML instead.
func ObservationText(responses []string, turnClosed bool) string {
	var b strings.Builder
	if turnClosed {
		b.WriteString("\n")
	} else {
		b.WriteString(ImEnd + "\n")
	}
	b.WriteString(ImStart + "user\n")
	for i, r := range responses {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(ToolResponse(r))
	}
	b.WriteString(ImEnd + "\n" + ImStart + "assistant\n")
	return b.String()
}

// ObservationClose ends every observation ObservationText renders for at least one response:
// the last response's closing tag and the opening of the next assistant turn. A cut to a token
// budget keeps it (StepResult.ObservationTail), so a cut observation still hands the turn back
// to the agent instead of leaving it to write inside the user message.
const ObservationClose = "\n</tool_response>" + ImEnd + "\n" + ImStart + "assistant\n"

// toolSpec is the JSON object describing a tool in Qwen2.5's <tools> block.
type toolSpec struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Parameters  *Schema `json:"parameters"`
}

// RenderTools renders the tools' signatures as Qwen2.5's chat template lists them in the
// system prompt: one JSON object {"type": "function", "function": {name, description,
// parameters}} per line inside <tools></tools>, spaced as Python's json.dumps spaces it
// (the template's tojson filter). It panics if a tool's schema cannot be encoded as JSON
// (an Enum holding a Go value JSON has no form for).
func RenderTools(tools []Tool) string {
	var b strings.Builder
	b.WriteString("<tools>\n")
	for _, t := range tools {
		spec := toolSpec{Type: "function", Function: toolFunction{
			Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()}}
		var js bytes.Buffer
		enc := json.NewEncoder(&js)
		enc.SetEscapeHTML(false) // "<" stays "<", as Python's json.dumps leaves it
		if err := enc.Encode(spec); err != nil {
			// Schema holds only JSON-encodable fields (Enum values come from JSON or literals).
			panic(fmt.Sprintf("env.RenderTools: tool %q: %v", t.Name(), err))
		}
		b.WriteString(pythonJSONSpacing(bytes.TrimSuffix(js.Bytes(), []byte("\n"))))
		b.WriteString("\n")
	}
	b.WriteString("</tools>")
	return b.String()
}

// pythonJSONSpacing re-spaces compact JSON the way Python's json.dumps writes it by default:
// ", " between items and ": " after keys, nothing inside strings changed.
func pythonJSONSpacing(compact []byte) string {
	var b strings.Builder
	inString, escaped := false, false
	for _, c := range compact {
		b.WriteByte(c)
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}
