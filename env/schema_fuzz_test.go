package env

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"testing"
)

// FuzzSchema feeds the validator arbitrary schemas and values (FuzzValidate in fuzz_test.go
// varies only the value). For every schema that decodes it checks that Check and Validate
// never panic, that Validate reports only *FieldError problems with a message and is stable
// (the same errors in the same order on a second call), and that a value built to satisfy the
// schema by satisfying below, independently of Validate, validates, before and after a JSON
// round trip. Run longer with `go test -run '^$' -fuzz '^FuzzSchema$' ./env/`.
func FuzzSchema(f *testing.F) {
	tool := `{"type": "object", "required": ["query"], "properties": {
		"query": {"type": "string"},
		"topk": {"type": "integer", "minimum": 1, "maximum": 10},
		"lang": {"type": "string", "enum": ["en", "de"]},
		"ids": {"type": "array", "items": {"type": "integer", "minimum": -2.5}},
		"filter": {"type": "object", "required": ["year"], "properties": {"year": {"type": "number", "maximum": 2000}}}}}`
	f.Add(tool, `{"query": "x", "topk": 3}`)
	f.Add(tool, `{"topk": 0.5, "lang": "fr", "ids": [1, "a", -3], "filter": {}}`)
	f.Add(`{"type": "integer", "minimum": 0.25, "maximum": 0.75}`, `0.5`)
	f.Add(`{"type": "integer", "enum": [1.5, 2, "2"], "maximum": 3}`, `2`)
	f.Add(`{"type": "array", "items": {"type": "boolean", "enum": []}}`, `[true, null]`)
	f.Add(`{"properties": {"a": null, "b": {"type": ""}}, "required": ["c"]}`, `{"a": {}, "c": []}`)
	f.Add(`{"type": "object", "enum": [{"a": 1}], "properties": {"a": {"type": "string"}}}`, `{"a": 1}`)
	f.Add(`{"type": "number", "minimum": 1e308, "maximum": -1e308}`, `1e308`)
	f.Fuzz(func(t *testing.T, schemaJSON, valueJSON string) {
		var s *Schema
		if json.Unmarshal([]byte(schemaJSON), &s) != nil {
			return
		}
		_ = s.Check()
		var v any
		if json.Unmarshal([]byte(valueJSON), &v) == nil {
			checkProblems(t, s, v, "fuzzed value "+valueJSON)
		}
		good, ok := satisfying(s, 0)
		if !ok {
			return
		}
		if err := s.Validate(good); err != nil {
			t.Fatalf("schema %s: built value %#v rejected: %v", schemaJSON, good, err)
		}
		raw, err := json.Marshal(good)
		if err != nil {
			t.Fatalf("schema %s: marshal built value %#v: %v", schemaJSON, good, err)
		}
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("schema %s: unmarshal %s: %v", schemaJSON, raw, err)
		}
		if err := s.Validate(back); err != nil {
			t.Fatalf("schema %s: built value %s rejected after a JSON round trip: %v", schemaJSON, raw, err)
		}
	})
}

// checkProblems validates v twice and asserts the error's form: only *FieldError values with a
// message, in the same order both times.
func checkProblems(t *testing.T, s *Schema, v any, what string) {
	t.Helper()
	err := s.Validate(v)
	if err == nil {
		return
	}
	var problems []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		problems = joined.Unwrap()
	} else {
		problems = []error{err}
	}
	for i, p := range problems {
		var fe *FieldError
		if !errors.As(p, &fe) || fe.Msg == "" {
			t.Fatalf("%s: problem %d is %T %q, want a *FieldError with a message", what, i, p, p)
		}
	}
	if again := s.Validate(v); again == nil || again.Error() != err.Error() {
		t.Fatalf("%s: unstable errors:\n%v\nthen\n%v", what, err, again)
	}
}

// maxSatisfyDepth bounds the nesting satisfying builds, so that a deeply nested fuzzed schema
// cannot make one input slow.
const maxSatisfyDepth = 32

// satisfying builds a value that satisfies s as Validate documents the keywords, without
// calling Validate: the first enum value of the right type within the bounds, else the
// smallest allowed number, an object with every property (required or not, declared or not),
// an array of two items (empty when no item can be built). ok is false when it finds no such
// value (contradictory bounds, an enum with no fitting member, an unknown type, enum values
// that are objects or arrays, which it does not try to check against nested schemas).
func satisfying(s *Schema, depth int) (v any, ok bool) {
	if s == nil {
		return "anything", true
	}
	if depth > maxSatisfyDepth {
		return nil, false
	}
	inBounds := func(x float64) bool {
		return (s.Minimum == nil || x >= *s.Minimum) && (s.Maximum == nil || x <= *s.Maximum)
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			switch x := e.(type) {
			case string, bool, nil:
				if kindOf(x) == s.Type || s.Type == "" {
					return x, true
				}
			case float64:
				integral := x == math.Trunc(x)
				if (s.Type == "number" || s.Type == "" || (s.Type == "integer" && integral)) && inBounds(x) {
					return x, true
				}
			}
		}
		return nil, false
	}
	switch s.Type {
	case "", "string":
		return "s", true
	case "boolean":
		return false, true
	case "number", "integer":
		x := 0.0
		switch {
		case s.Minimum != nil:
			x = *s.Minimum
		case s.Maximum != nil:
			x = *s.Maximum
		}
		if s.Type == "integer" {
			if s.Minimum != nil {
				x = math.Ceil(x)
			} else {
				x = math.Floor(x)
			}
		}
		if !inBounds(x) || math.IsInf(x, 0) {
			return nil, false
		}
		return x, true
	case "array":
		if s.Items == nil {
			return []any{"a", 1.0}, true
		}
		item, ok := satisfying(s.Items, depth+1)
		if !ok {
			return []any{}, true
		}
		return []any{item, item}, true
	case "object":
		obj := map[string]any{}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			pv, ok := satisfying(s.Properties[name], depth+1)
			if !ok {
				return nil, false // an optional property could be left out; required ones cannot
			}
			obj[name] = pv
		}
		for _, name := range s.Required {
			if _, ok := obj[name]; !ok {
				obj[name] = nil // required but undeclared: any value will do
			}
		}
		return obj, true
	}
	return nil, false
}

// kindOf names the JSON Schema type of a string, boolean or null enum value.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return "null"
}
