package env

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
)

// FieldError is one way a value breaks its schema. Path names the field the way the agent
// wrote it, from the arguments object down: "query", "filters.year", "ids[2]"; the empty path
// is the arguments object itself.
type FieldError struct {
	Path string // the field at fault ("" for the arguments object)
	Msg  string // what is wrong with it
}

// Error renders the problem as "path: message".
func (e *FieldError) Error() string {
	if e.Path == "" {
		return "arguments: " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Validate checks v (a value decoded by encoding/json into any: map[string]any, []any,
// string, float64, bool or nil) against s, the JSON Schema subset tool parameters use: type
// ("object", "string", "integer", "number", "boolean", "array"), properties, required, enum,
// minimum, maximum and items. Properties the schema does not list are allowed, as JSON Schema
// allows them by default. It returns nil or every problem found, joined (errors.Join of
// *FieldError), in a stable order, so that the agent reads all its mistakes at once.
func (s *Schema) Validate(v any) error {
	var errs []error
	s.validate("", v, &errs)
	return errors.Join(errs...)
}

func (s *Schema) validate(path string, v any, errs *[]error) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if s == nil {
		return
	}
	if !typeMatches(s.Type, v) {
		fail("expected %s, got %s", s.Type, jsonKind(v))
		return
	}
	if len(s.Enum) > 0 && !inEnum(s.Enum, v) {
		fail("must be one of %s, got %s", enumList(s.Enum), shortJSON(v))
	}
	if x, ok := v.(float64); ok {
		if s.Minimum != nil && x < *s.Minimum {
			fail("must be >= %v, got %v", *s.Minimum, x)
		}
		if s.Maximum != nil && x > *s.Maximum {
			fail("must be <= %v, got %v", *s.Maximum, x)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				fail("missing required field %q", name)
			}
		}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if fv, ok := x[name]; ok {
				s.Properties[name].validate(join(path, name), fv, errs)
			}
		}
	case []any:
		if s.Items != nil {
			for i, item := range x {
				s.Items.validate(fmt.Sprintf("%s[%d]", path, i), item, errs)
			}
		}
	}
}

// Check reports whether s itself is a schema Validate understands: known type names, required
// fields that are declared properties, properties and items only where they make sense, and
// minimum <= maximum. NewToolEnv checks every tool's parameters with it, so that a tool's
// mistake is found at start-up, not in the middle of a run.
func (s *Schema) Check() error {
	var errs []error
	s.check("parameters", &errs)
	return errors.Join(errs...)
}

func (s *Schema) check(path string, errs *[]error) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if s == nil {
		fail("nil schema")
		return
	}
	switch s.Type {
	case "object", "string", "integer", "number", "boolean", "array":
	default:
		fail("unknown type %q", s.Type)
	}
	if s.Type != "object" && (len(s.Properties) > 0 || len(s.Required) > 0) {
		fail("properties/required on a %s", s.Type)
	}
	if s.Type != "array" && s.Items != nil {
		fail("items on a %s", s.Type)
	}
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; !ok {
			fail("required field %q is not a property", name)
		}
	}
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		fail("minimum %v > maximum %v", *s.Minimum, *s.Maximum)
	}
	for _, e := range s.Enum {
		if !typeMatches(s.Type, normalizeNumber(e)) {
			fail("enum value %s is not a %s", shortJSON(e), s.Type)
		}
	}
	for name, p := range s.Properties {
		p.check(path+"."+name, errs)
	}
	if s.Items != nil {
		s.Items.check(path+"[]", errs)
	}
}

// typeMatches reports whether v has JSON Schema type t. "integer" accepts any number with no
// fractional part (1.0 included), as JSON Schema draft 6 and later do.
func typeMatches(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		x, ok := v.(float64)
		return ok && !math.IsNaN(x) && !math.IsInf(x, 0)
	case "integer":
		x, ok := v.(float64)
		return ok && x == math.Trunc(x) && !math.IsInf(x, 0)
	case "":
		return true // no type constraint
	}
	return false
}

// jsonKind names the JSON type of a decoded value for error messages.
func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if reflect.DeepEqual(normalizeNumber(e), v) {
			return true
		}
	}
	return false
}

// normalizeNumber turns the Go integer and float32 literals a tool author may write in an
// Enum into the float64 that encoding/json decodes numbers to.
func normalizeNumber(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = shortJSON(normalizeNumber(e))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// shortJSON renders a decoded value for a message, cut to 40 bytes.
func shortJSON(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = fmt.Sprintf("%q", x)
	case nil:
		s = "null"
	default:
		s = fmt.Sprint(x)
	}
	return cut(s, 40)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
