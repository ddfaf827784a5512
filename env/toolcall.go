package env

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The tags around a tool call in Qwen2.5's ChatML tool format, which Agent-R1 uses
// (docs/PAPER.md section 3): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
const (
	ToolCallOpen  = "<tool_call>"
	ToolCallClose = "</tool_call>"
)

// ToolCall is one well-formed call parsed from the agent's text.
type ToolCall struct {
	Name      string         // the tool's name as the call wrote it
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
	ErrTooLong                                // more than MaxCallBytes between the tags
	ErrTooDeep                                // objects and arrays nested deeper than MaxCallDepth
)

// Bounds on one tool call, so that no text the agent writes costs unbounded work: the JSON
// decoder and the schema validator only ever see calls within them. Tool arguments are a few
// short fields; these are far above any real call and far below what could hurt.
const (
	MaxCallBytes = 16 << 10 // bytes between "<tool_call>" and "</tool_call>", whitespace included
	MaxCallDepth = 32       // nesting of objects and arrays, in the call and in string-held arguments
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
	ErrTooLong:      "tool call too long",
	ErrTooDeep:      "tool call nested too deeply",
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
	Kind   ParseErrorKind // what is wrong
	Offset int            // byte offset in the parsed text of the tag or text concerned
	Detail string         // more about it, such as the JSON decoder's message; may be empty
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
	tags := findTags(text)
	for i := 0; i < len(tags); {
		if !tags[i].open {
			errs = append(errs, &ParseError{Kind: ErrUnopened, Offset: tags[i].at})
			i++
			continue
		}
		start := tags[i].at
		closing, nested := matchClose(tags, i)
		if closing < 0 {
			errs = append(errs, &ParseError{Kind: ErrUnclosed, Offset: start})
			return calls, errs
		}
		i = closing + 1
		bodyStart, bodyEnd := start+len(ToolCallOpen), tags[closing].at
		end := bodyEnd + len(ToolCallClose)
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
	return calls, errs
}

// tag is one "<tool_call>" (open) or "</tool_call>" in the text, at byte offset at.
type tag struct {
	at   int
	open bool
}

// findTags lists the tags of text in order, in one pass over it for each kind (the two tags
// cannot overlap), so that parsing any text is linear in its length.
func findTags(text string) []tag {
	var opens, closes []int
	for _, t := range []struct {
		s    string
		dest *[]int
	}{{ToolCallOpen, &opens}, {ToolCallClose, &closes}} {
		for pos := 0; ; {
			k := strings.Index(text[pos:], t.s)
			if k < 0 {
				break
			}
			*t.dest = append(*t.dest, pos+k)
			pos += k + len(t.s)
		}
	}
	tags := make([]tag, 0, len(opens)+len(closes))
	for len(opens) > 0 || len(closes) > 0 {
		if len(closes) == 0 || (len(opens) > 0 && opens[0] < closes[0]) {
			tags, opens = append(tags, tag{at: opens[0], open: true}), opens[1:]
		} else {
			tags, closes = append(tags, tag{at: closes[0]}), closes[1:]
		}
	}
	return tags
}

// matchClose finds the "</tool_call>" that closes the call opened by tags[i], counting nested
// "<tool_call>" tags. It returns the closing tag's index in tags (-1 if the call is never
// closed) and whether a nested open tag was seen.
func matchClose(tags []tag, i int) (closing int, nested bool) {
	depth := 1
	for j := i + 1; j < len(tags); j++ {
		if tags[j].open {
			depth++
			nested = true
			continue
		}
		depth--
		if depth == 0 {
			return j, nested
		}
	}
	return -1, nested
}

// parseCallBody decodes the JSON between the tags; offset is the body's offset in the turn.
func parseCallBody(body string, offset int) (ToolCall, *ParseError) {
	fail := func(kind ParseErrorKind, detail string) (ToolCall, *ParseError) {
		return ToolCall{}, &ParseError{Kind: kind, Offset: offset, Detail: detail}
	}
	if len(body) > MaxCallBytes {
		return fail(ErrTooLong, fmt.Sprintf("%d bytes, at most %d", len(body), MaxCallBytes))
	}
	trimmed := strings.TrimSpace(body)
	if trimmed == "" {
		return fail(ErrEmpty, "")
	}
	if jsonDepth(trimmed) > MaxCallDepth {
		return fail(ErrTooDeep, fmt.Sprintf("more than %d levels of objects and arrays", MaxCallDepth))
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
		if jsonDepth(a) > MaxCallDepth {
			return nil, fmt.Sprintf("a string holding more than %d levels of objects and arrays", MaxCallDepth)
		}
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

// jsonDepth returns the deepest nesting of objects and arrays in JSON text, counting brackets
// outside strings in one pass. On text that is not valid JSON the decoder fails no deeper.
func jsonDepth(text string) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := range len(text) {
		c := text[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
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
