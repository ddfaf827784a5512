package env

import (
	"encoding/json"
	"strings"
	"testing"
)

func f64(x float64) *float64 { return &x }

// testSchema covers every keyword Validate supports.
var testSchema = &Schema{
	Type:     "object",
	Required: []string{"query"},
	Properties: map[string]*Schema{
		"query": {Type: "string"},
		"topk":  {Type: "integer", Minimum: f64(1), Maximum: f64(10)},
		"score": {Type: "number", Minimum: f64(0)},
		"exact": {Type: "boolean"},
		"lang":  {Type: "string", Enum: []any{"en", "de"}},
		"level": {Type: "integer", Enum: []any{1, 2}},
		"ids":   {Type: "array", Items: &Schema{Type: "integer"}},
		"filter": {Type: "object", Required: []string{"year"}, Properties: map[string]*Schema{
			"year": {Type: "integer"}}},
	},
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		args string
		want []string // substrings, one per expected problem; nil: valid
	}{
		{"minimal", `{"query": "x"}`, nil},
		{"everything", `{"query": "x", "topk": 10, "score": 0.5, "exact": true, "lang": "de", "level": 2, "ids": [1, 2], "filter": {"year": 1999}}`, nil},
		{"unknown field allowed", `{"query": "x", "other": 1}`, nil},
		{"integer written 3.0", `{"query": "x", "topk": 3.0}`, nil},
		{"missing required", `{}`, []string{`arguments: missing required field "query"`}},
		{"wrong type string", `{"query": 3}`, []string{"query: expected string, got integer"}},
		{"null", `{"query": null}`, []string{"query: expected string, got null"}},
		{"fraction for integer", `{"query": "x", "topk": 2.5}`, []string{"topk: expected integer, got number"}},
		{"below minimum", `{"query": "x", "topk": 0}`, []string{"topk: must be >= 1, got 0"}},
		{"above maximum", `{"query": "x", "topk": 11}`, []string{"topk: must be <= 10, got 11"}},
		{"number below minimum", `{"query": "x", "score": -0.1}`, []string{"score: must be >= 0"}},
		{"boolean as string", `{"query": "x", "exact": "yes"}`, []string{"exact: expected boolean, got string"}},
		{"not in enum", `{"query": "x", "lang": "fr"}`, []string{`lang: must be one of ["en", "de"], got "fr"`}},
		{"integer enum", `{"query": "x", "level": 3}`, []string{"level: must be one of [1, 2], got 3"}},
		{"array item", `{"query": "x", "ids": [1, "a"]}`, []string{"ids[1]: expected integer, got string"}},
		{"array expected", `{"query": "x", "ids": 1}`, []string{"ids: expected array, got integer"}},
		{"nested required", `{"query": "x", "filter": {}}`, []string{`filter: missing required field "year"`}},
		{"nested type", `{"query": "x", "filter": {"year": "1999"}}`, []string{"filter.year: expected integer, got string"}},
		{"several at once", `{"topk": 0, "exact": 1}`, []string{`missing required field "query"`, "exact: expected boolean", "topk: must be >= 1"}},
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c.args), &v); err != nil {
			t.Fatalf("%s: bad test JSON: %v", c.name, err)
		}
		err := testSchema.Validate(v)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", c.name, c.want)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(c.want) {
			t.Errorf("%s: %d problems %q, want %d", c.name, len(lines), lines, len(c.want))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
	if err := testSchema.Validate([]any{}); err == nil || !strings.Contains(err.Error(), "expected object, got array") {
		t.Errorf("top-level array: %v", err)
	}
}

func TestSchemaCheck(t *testing.T) {
	cases := []struct {
		name string
		s    *Schema
		want string // "" = valid
	}{
		{"test schema", testSchema, ""},
		{"unknown type", &Schema{Type: "text"}, `unknown type "text"`},
		{"required not a property", &Schema{Type: "object", Required: []string{"q"}}, `required field "q" is not a property`},
		{"properties on a string", &Schema{Type: "string", Properties: map[string]*Schema{"a": {Type: "string"}}}, "properties/required on a string"},
		{"items on an object", &Schema{Type: "object", Items: &Schema{Type: "string"}}, "items on a object"},
		{"min > max", &Schema{Type: "integer", Minimum: f64(2), Maximum: f64(1)}, "minimum 2 > maximum 1"},
		{"enum of wrong type", &Schema{Type: "string", Enum: []any{1}}, "enum value 1 is not a string"},
		{"bad nested", &Schema{Type: "object", Properties: map[string]*Schema{"a": {Type: "int"}}}, `parameters.a: unknown type "int"`},
		{"nil property", &Schema{Type: "object", Properties: map[string]*Schema{"a": nil}}, "parameters.a: nil schema"},
	}
	for _, c := range cases {
		err := c.s.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
