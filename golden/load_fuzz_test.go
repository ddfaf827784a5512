package golden

import (
	"bytes"
	"math/bits"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary bytes. It checks that Parse never panics and rejects with a
// message, and that every case it accepts is usable: it has a name and a function, the
// namespace of its format, non-nil params, values whose element count is the product of their
// shape (computed without overflow) with no negative dimension, something to compare unless
// the reference rejected the call, and that Check of the case against its own expected values
// never panics and finds nothing but a compare_mask of the wrong length (for a non-negative
// tolerance). Run longer with `go test -run '^$' -fuzz '^FuzzParse$' ./golden/`.
func FuzzParse(f *testing.F) {
	f.Add([]byte(v1Sample))
	f.Add([]byte(verlSample))
	f.Add([]byte(`{"format": "agentr1-golden/v1", "cases": [{"fn": "f", "outputs": {"y": {"shape": [], "data": [1]}},
		"compare_mask": {"y": {"shape": [2], "data": [1, 0]}}, "tolerance": {"rtol": -1, "atol": 0}}]}`))
	f.Add([]byte(`{"format": "agentr1-golden/v1", "cases": [{"fn": "f", "outputs": {"y": {"shape": [0, 3], "data": [], "dtype": "int32"}}}]}`))
	f.Add([]byte(`[{"fn": "f", "outputs": {"y": [[1, 2], [3]]}}, {"fn": "g", "outputs": {"error": 7}}]`))
	f.Add([]byte(`[{"fn": "f", "inputs": {"x": [[[]]]}, "outputs": {"y": [1e308, -2, "s"]}}]`))
	f.Add([]byte(" \n\t"))
	f.Add([]byte(`"cases"`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		const path = "dir/cases.json"
		cases, err := Parse(raw, path)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty error for %q", raw)
			}
			return
		}
		wantNS := ""
		if trimmed := bytes.TrimLeft(raw, " \t\r\n"); trimmed[0] == '[' {
			wantNS = VerlNamespace
		}
		for i, c := range cases {
			if c == nil || c.Name == "" || c.Fn == "" || c.Params == nil {
				t.Fatalf("case %d: accepted without name, fn or params: %+v", i, c)
			}
			if c.Namespace != wantNS || c.File != path || c.Dir != filepath.Dir(path) {
				t.Fatalf("case %s: namespace %q file %q dir %q", c.Name, c.Namespace, c.File, c.Dir)
			}
			if c.Skip == "" && len(c.Outputs) == 0 && len(c.Grads) == 0 {
				t.Fatalf("case %s: accepted with nothing to compare", c.Name)
			}
			for _, part := range []struct {
				name string
				vals map[string]*Value
			}{{"inputs", c.Inputs}, {"outputs", c.Outputs}, {"upstream", c.Upstream}, {"grads", c.Grads}, {"compare_mask", c.CompareMask}} {
				for k, v := range part.vals {
					if msg := badValue(v); msg != "" {
						t.Fatalf("case %s: %s.%s: %s", c.Name, part.name, k, msg)
					}
				}
			}
			if c.Skip != "" || c.Tol.Atol < 0 || c.Tol.Rtol < 0 {
				continue
			}
			for _, m := range Check(c, &Result{Outputs: c.Outputs, Grads: c.Grads}) {
				if !strings.Contains(m.Msg, "compare_mask") {
					t.Fatalf("case %s: its own values do not match it: %s", c.Name, m)
				}
			}
		}
	})
}

// badValue returns why v is not a well-formed Value, or "".
func badValue(v *Value) string {
	if v == nil {
		return "nil value"
	}
	if v.IsStr {
		if len(v.Shape) != 0 || len(v.Data) != 0 {
			return "string value with a shape or data"
		}
		return ""
	}
	if v.Data == nil {
		return "nil data"
	}
	n := uint64(1)
	for _, d := range v.Shape {
		if d < 0 {
			return "negative dimension"
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 {
			if len(v.Data) == 0 && hasZero(v.Shape) {
				return ""
			}
			return "element count of the shape overflows"
		}
		n = lo
	}
	if n != uint64(len(v.Data)) {
		return "shape and data length disagree"
	}
	return ""
}

// hasZero reports whether a shape has a zero dimension (an empty tensor, whatever the others).
func hasZero(shape []int) bool {
	for _, d := range shape {
		if d == 0 {
			return true
		}
	}
	return false
}
