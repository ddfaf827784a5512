package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// value is a JSON value that remembers the order of its object keys, so that a settings table
// or an evaluation table lists things in the order the trainer wrote them.
type value struct {
	Fields []field  // object members in file order (Kind == '{')
	Items  []*value // array elements (Kind == '[')
	Num    float64  // Kind == 'n'
	Str    string   // Kind == 's'; for 'n' the number as written
	Bool   bool     // Kind == 'b'
	Kind   byte     // '{', '[', 'n' (number), 's' (string), 'b' (bool), '0' (null)
	raw    []byte   // the value's JSON text, compacted
}

type field struct {
	Key string
	Val *value
}

// get returns the member named key of an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.Kind != '{' {
		return nil
	}
	for _, f := range v.Fields {
		if f.Key == key {
			return f.Val
		}
	}
	return nil
}

// isScalar reports whether v is a number, string, bool or null.
func (v *value) isScalar() bool { return v.Kind != '{' && v.Kind != '[' }

// text is v as a table cell shows it: strings bare, numbers as written, the rest as compact JSON.
func (v *value) text() string {
	switch v.Kind {
	case 's', 'n':
		return v.Str
	default:
		return string(v.raw)
	}
}

// parseValue parses exactly one JSON value from raw. Syntax errors give the 1-based line and
// column of the fault.
func parseValue(raw []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readValue(dec)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err != nil {
		return nil, positioned(raw, dec.InputOffset(), err)
	}
	return v, nil
}

// positioned prefixes err with "line L col C" for the byte offset off of raw when raw spans
// several lines, the way an editor would point at the fault.
func positioned(raw []byte, off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	if bytes.Count(raw, []byte{'\n'}) <= 1 {
		return err
	}
	before := raw[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Errorf("line %d col %d: %w", line, col, err)
}

// readValue reads the next complete value from dec (opened with UseNumber).
func readValue(dec *json.Decoder) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &value{Kind: '{'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				val, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				v.Fields = append(v.Fields, field{Key: key, Val: val})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			v.raw = marshalValue(v)
			return v, nil
		case '[':
			v := &value{Kind: '['}
			for dec.More() {
				item, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				v.Items = append(v.Items, item)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			v.raw = marshalValue(v)
			return v, nil
		}
		return nil, fmt.Errorf("unexpected %q", rune(t))
	case json.Number:
		f, err := strconv.ParseFloat(t.String(), 64)
		if err != nil {
			// Out of float64 range: keep the text, treat as not a number.
			return &value{Kind: 's', Str: t.String(), raw: []byte(t.String())}, nil
		}
		return &value{Kind: 'n', Num: f, Str: t.String(), raw: []byte(t.String())}, nil
	case string:
		raw, _ := json.Marshal(t)
		return &value{Kind: 's', Str: t, raw: raw}, nil
	case bool:
		return &value{Kind: 'b', Bool: t, raw: []byte(strconv.FormatBool(t))}, nil
	case nil:
		return &value{Kind: '0', raw: []byte("null")}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// marshalValue writes a container's compact JSON from its already-parsed children.
func marshalValue(v *value) []byte {
	var b strings.Builder
	switch v.Kind {
	case '{':
		b.WriteByte('{')
		for i, f := range v.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(f.Key)
			b.Write(k)
			b.WriteByte(':')
			b.Write(f.Val.raw)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, it := range v.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(it.raw)
		}
		b.WriteByte(']')
	}
	return []byte(b.String())
}
