package env

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The tags around a tool call in Qwen2.5's ChatML tool format, which Agent-R1 uses
// (PAPER.md section 3): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
const (
	ToolCallOpen  = "<tool_call>"
	ToolCallClose = "</tool_call>"
)

// ToolCall is one well-formed call parsed from the agent's text.
type ToolCall struct {
	Name      string
	Arguments map[string]any // decoded JSON object; never nil
	// Start and End are byte offsets of the call in the parsed text: text[Start:End] runs from
	// "<tool_call>" to the end of "</tool_call>".
	Start, End int
}

// ParseErrorKind classifies a malformed tool call.
type ParseErrorKind int

// The ways a tool call can be malformed. Each becomes an error observation (and a format
// error for the reward); none ends the run.
const (
	ErrUnclosed     ParseErrorKind = iota + 1 // "<tool_call>" with no "</tool_call>" after it
	ErrUnopened                               // "</tool_call>" with no "<tool_call>" before it
	ErrNested                                 // "<tool_call>" inside a call
	ErrEmpty                                  // nothing but whitespace between the tags
	ErrBadJSON                                // the body is not JSON
	ErrExtraText                              // text after the JSON object inside the tags
	ErrNotObject                              // the JSON is an array, string, number, ...
	ErrMissingName                            // no "name" field
	ErrBadName                                // "name" is not a non-empty string
	ErrBadArguments                           // "arguments" is neither an object nor a string holding one
	ErrTooManyCalls                           // a well-formed call beyond the per-turn limit
)

var parseErrorNames = map[ParseErrorKind]string{
	ErrUnclosed:     "unclosed <tool_call>",
	ErrUnopened:     "</tool_call> without <tool_call>",
	ErrNested:       "nested <tool_call>",
	ErrEmpty:        "empty tool call",
	ErrBadJSON:      "tool call is not valid JSON",
	ErrExtraText:    "extra text after the JSON object",
	ErrNotObject:    "tool call is not a JSON object",
	ErrMissingName:  `tool call has no "name"`,
	ErrBadName:      `"name" must be a non-empty string`,
	ErrBadArguments: `"arguments" must be a JSON object`,
	ErrTooManyCalls: "too many tool calls in one turn",
}

// String describes the kind in words, as the agent reads it.
func (k ParseErrorKind) String() string {
	if s, ok := parseErrorNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ParseErrorKind(%d)", int(k))
}

// ParseError is one malformed tool call: what is wrong, where (byte offset of the tag or
// text it concerns), and a detail such as the JSON decoder's message.
type ParseError struct {
	Kind   ParseErrorKind
	Offset int
	Detail string
}

// Error renders the kind and the detail, the text of the error observation.
func (e *ParseError) Error() string {
	if e.Detail == "" {
		return e.Kind.String()
	}
	return e.Kind.String() + ": " + e.Detail
}

// ParseToolCalls finds every tool call in one turn of agent text, in order. Well-formed calls
// are returned in calls, up to limit of them (limit <= 0: no limit); every malformed one, and
// every well-formed one past the limit, is returned as a ParseError instead. It never panics,
// whatever the text.
//
// Tolerated, as models write them: whitespace and newlines around the JSON inside the tags;
// "arguments" given as a JSON string that holds an object (`"arguments": "{\"query\": \"x\"}"`);
// "arguments" absent or null (an empty object); fields other than name and arguments (ignored).
// Text outside the tags (thinking, an answer) is not the parser's concern.
func ParseToolCalls(text string, limit int) (calls []ToolCall, errs []*ParseError) {
	pos := 0
	for {
		open := strings.Index(text[pos:], ToolCallOpen)
		cl := strings.Index(text[pos:], ToolCallClose)
		if open < 0 && cl < 0 {
			return calls, errs
		}
		if open < 0 || (cl >= 0 && cl < open) {
			errs = append(errs, &ParseError{Kind: ErrUnopened, Offset: pos + cl})
			pos += cl + len(ToolCallClose)
			continue
		}
		start := pos + open
		bodyStart := start + len(ToolCallOpen)
		bodyEnd, end, nested := matchClose(text, bodyStart)
		if end < 0 {
			errs = append(errs, &ParseError{Kind: ErrUnclosed, Offset: start})
			return calls, errs
		}
		pos = end
		if nested {
			errs = append(errs, &ParseError{Kind: ErrNested, Offset: start})
			continue
		}
		call, perr := parseCallBody(text[bodyStart:bodyEnd], bodyStart)
		if perr != nil {
			errs = append(errs, perr)
			continue
		}
		if limit > 0 && len(calls) >= limit {
			errs = append(errs, &ParseError{Kind: ErrTooManyCalls, Offset: start,
				Detail: fmt.Sprintf("at most %d per turn; %q was not run", limit, call.Name)})
			continue
		}
		call.Start, call.End = start, end
		calls = append(calls, call)
	}
}

// matchClose finds the "</tool_call>" that closes a call whose body starts at from, counting
// nested "<tool_call>" tags. It returns the body's end, the offset just past the closing tag
// (-1 if the call is never closed) and whether a nested open tag was seen.
func matchClose(text string, from int) (bodyEnd, end int, nested bool) {
	depth := 1
	pos := from
	for {
		open := strings.Index(text[pos:], ToolCallOpen)
		cl := strings.Index(text[pos:], ToolCallClose)
		if cl < 0 {
			return -1, -1, nested
		}
		if open >= 0 && open < cl {
			depth++
			nested = true
			pos += open + len(ToolCallOpen)
			continue
		}
		depth--
		if depth == 0 {
			return pos + cl, pos + cl + len(ToolCallClose), nested
		}
		pos += cl + len(ToolCallClose)
	}
}

// parseCallBody decodes the JSON between the tags; offset is the body's offset in the turn.
func parseCallBody(body string, offset int) (ToolCall, *ParseError) {
	fail := func(kind ParseErrorKind, detail string) (ToolCall, *ParseError) {
		return ToolCall{}, &ParseError{Kind: kind, Offset: offset, Detail: detail}
	}
	trimmed := strings.TrimSpace(body)
	if trimmed == "" {
		return fail(ErrEmpty, "")
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	var v any
	if err := dec.Decode(&v); err != nil {
		return fail(ErrBadJSON, err.Error())
	}
	if rest := strings.TrimSpace(trimmed[dec.InputOffset():]); rest != "" {
		return fail(ErrExtraText, fmt.Sprintf("%q", cut(rest, 30)))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fail(ErrNotObject, "got "+jsonKind(v))
	}
	rawName, ok := obj["name"]
	if !ok {
		return fail(ErrMissingName, "")
	}
	name, ok := rawName.(string)
	if !ok || strings.TrimSpace(name) == "" {
		return fail(ErrBadName, "got "+shortJSON(rawName))
	}
	args, perr := decodeArguments(obj["arguments"])
	if perr != "" {
		return fail(ErrBadArguments, perr)
	}
	return ToolCall{Name: name, Arguments: args}, nil
}

// decodeArguments accepts an object, a JSON string holding an object, or nothing.
func decodeArguments(raw any) (map[string]any, string) {
	switch a := raw.(type) {
	case nil:
		return map[string]any{}, ""
	case map[string]any:
		return a, ""
	case string:
		var inner any
		if err := json.Unmarshal([]byte(a), &inner); err != nil {
			return nil, "a string that is not JSON: " + err.Error()
		}
		if m, ok := inner.(map[string]any); ok {
			return m, ""
		}
		return nil, "a string holding " + jsonKind(inner)
	}
	return nil, "got " + jsonKind(raw)
}

// cut returns s cut to at most n bytes on a rune boundary, with "..." when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !isRuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
