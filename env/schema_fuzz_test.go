package env

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"sort"
	"testing"
)

// FuzzSchema feeds the validator arbitrary schemas and values (FuzzValidate in fuzz_test.go
// varies only the value). For every schema that decodes it checks that Check and Validate
// never panic, that Validate reports only *FieldError problems with a message and is stable
// (the same errors in the same order on a second call), that a value built to satisfy the
// schema by satisfying below, independently of Validate, validates, before and after a JSON
// round trip, and that each value violations builds from it by breaking one keyword is
// rejected with a problem at the broken field's path. Run longer with `go test -run '^$' -fuzz '^FuzzSchema$' ./env/`.
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
		for _, bad := range violations(s, "", 0) {
			err := s.Validate(bad.value)
			if err == nil {
				t.Fatalf("schema %s: value %#v breaking %s at %q accepted", schemaJSON, bad.value, bad.broken, bad.path)
			}
			if !hasProblemAt(err, bad.path) {
				t.Fatalf("schema %s: value %#v breaking %s: no problem at %q in %v", schemaJSON, bad.value, bad.broken, bad.path, err)
			}
		}
	})
}

// violation is a value that breaks one keyword of a schema at path.
type violation struct {
	value  any
	path   string // where Validate must report it: "", "a", "a.b", "ids[0]"
	broken string // the keyword broken, for messages
}

// violations builds values that each break one keyword of s, found below path: the wrong
// type, a number just outside minimum or maximum, a string outside a string enum, an object
// built by satisfying with one required field removed or one property broken, an array of one
// broken item. Schemas it cannot break simply yield fewer.
func violations(s *Schema, path string, depth int) []violation {
	if s == nil || depth > maxSatisfyDepth {
		return nil
	}
	var out []violation
	switch s.Type {
	case "string":
		out = append(out, violation{true, path, "type"})
	case "object", "integer", "number", "boolean", "array":
		out = append(out, violation{"s", path, "type"})
	}
	if (s.Type == "number" || s.Type == "integer") && len(s.Enum) == 0 {
		if s.Minimum != nil {
			below := math.Nextafter(*s.Minimum, math.Inf(-1))
			if s.Type == "integer" {
				below = math.Ceil(*s.Minimum) - 1
			}
			if below < *s.Minimum && !math.IsInf(below, 0) {
				out = append(out, violation{below, path, "minimum"})
			}
		}
		if s.Maximum != nil {
			above := math.Nextafter(*s.Maximum, math.Inf(1))
			if s.Type == "integer" {
				above = math.Floor(*s.Maximum) + 1
			}
			if above > *s.Maximum && !math.IsInf(above, 0) {
				out = append(out, violation{above, path, "maximum"})
			}
		}
	}
	if s.Type == "string" && len(s.Enum) > 0 {
		other := "not-in-enum"
		for _, e := range s.Enum {
			if str, ok := e.(string); ok {
				other += str // longer than every member, so none of them
			}
		}
		out = append(out, violation{other, path, "enum"})
	}
	switch s.Type {
	case "object":
		good, ok := satisfying(s, depth)
		obj, isObj := good.(map[string]any)
		if !ok || !isObj {
			break
		}
		for _, name := range s.Required {
			m := maps.Clone(obj)
			delete(m, name)
			out = append(out, violation{m, path, "required " + name})
		}
		names := slices.Sorted(maps.Keys(s.Properties))
		for _, name := range names {
			child := name
			if path != "" {
				child = path + "." + name
			}
			for _, v := range violations(s.Properties[name], child, depth+1) {
				m := maps.Clone(obj)
				m[name] = v.value
				out = append(out, violation{m, v.path, v.broken})
			}
		}
	case "array":
		for _, v := range violations(s.Items, path+"[0]", depth+1) {
			out = append(out, violation{[]any{v.value}, v.path, v.broken})
		}
	}
	return out
}

// hasProblemAt reports whether err holds a *FieldError at path.
func hasProblemAt(err error, path string) bool {
	problems := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		problems = joined.Unwrap()
	}
	for _, p := range problems {
		var fe *FieldError
		if errors.As(p, &fe) && fe.Path == path {
			return true
		}
	}
	return false
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
