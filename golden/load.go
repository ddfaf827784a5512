package golden

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// FormatV1 is the format tag of agentr1's golden files.
const FormatV1 = "agentr1-golden/v1"

// VerlNamespace is the Case.Namespace of cases read from verl's case list.
const VerlNamespace = "verl"

// verlTolerance is the comparison rule verl's case list states for its float64 cases.
var verlTolerance = Tolerance{Rtol: 1e-10, Atol: 1e-10}

// verlFloat32Tolerance applies to verl's vectorised GRPO, whose group statistics torch computes
// in float32 (golden/verl/README.md: "1e-5 for the float32 ..._vectorized_... GRPO").
var verlFloat32Tolerance = Tolerance{Rtol: 1e-5, Atol: 1e-5}

// verlCaseTolerance returns the tolerance verl's README states for function fn.
func verlCaseTolerance(fn string) Tolerance {
	if strings.Contains(fn, "grpo_vectorized") {
		return verlFloat32Tolerance
	}
	return verlTolerance
}

// Load reads a cases file in either format (gzip-compressed when its name ends in ".gz").
// Errors name the file and, where one is at fault, the case.
func Load(path string) ([]*Case, error) {
	raw, err := readMaybeGzip(path)
	if err != nil {
		return nil, err // names the path already
	}
	cases, err := Parse(raw, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cases, nil
}

func readMaybeGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// Parse decodes the contents of a cases file; path is used to resolve relative paths in params
// (the case's Dir) and in messages.
func Parse(raw []byte, path string) ([]*Case, error) {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty file")
	}
	dir := filepath.Dir(path)
	switch trimmed[0] {
	case '{':
		return parseV1(raw, path, dir)
	case '[':
		return parseVerl(raw, path, dir)
	default:
		return nil, fmt.Errorf("not a golden file: starts with %q, want '{' (%s) or '[' (verl case list)", trimmed[0], FormatV1)
	}
}

// ---- agentr1-golden/v1 ----

type v1File struct {
	Format    string            `json:"format"`
	Source    string            `json:"source"`
	Tolerance *Tolerance        `json:"tolerance"`
	Cases     []json.RawMessage `json:"cases"`
}

type v1Case struct {
	Name        string                     `json:"name"`
	Fn          string                     `json:"fn"`
	Params      map[string]any             `json:"params"`
	Inputs      map[string]json.RawMessage `json:"inputs"`
	Outputs     map[string]json.RawMessage `json:"outputs"`
	Upstream    map[string]json.RawMessage `json:"upstream"`
	Grads       map[string]json.RawMessage `json:"grads"`
	CompareMask map[string]json.RawMessage `json:"compare_mask"`
	Tolerance   *Tolerance                 `json:"tolerance"`
}

type v1Tensor struct {
	Shape *[]int    `json:"shape"`
	Data  []float64 `json:"data"`
	Dtype string    `json:"dtype"`
}

func parseV1(raw []byte, path, dir string) ([]*Case, error) {
	var f v1File
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if f.Format != FormatV1 {
		return nil, fmt.Errorf("format %q, want %q", f.Format, FormatV1)
	}
	if f.Cases == nil {
		return nil, fmt.Errorf(`no "cases" list`)
	}
	fileTol := Tolerance{}
	if f.Tolerance != nil {
		fileTol = *f.Tolerance
	}
	cases := make([]*Case, 0, len(f.Cases))
	for i, rc := range f.Cases {
		var vc v1Case
		if err := json.Unmarshal(rc, &vc); err != nil {
			return nil, fmt.Errorf("case %d: %w", i, err)
		}
		name := vc.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if vc.Fn == "" {
			return nil, fmt.Errorf(`case %s: no "fn"`, name)
		}
		c := &Case{File: path, Dir: dir, Name: name, Fn: vc.Fn, Params: vc.Params, Tol: fileTol}
		if c.Params == nil {
			c.Params = map[string]any{}
		}
		if vc.Tolerance != nil {
			c.Tol = *vc.Tolerance
		}
		var err error
		for _, part := range []struct {
			field string
			src   map[string]json.RawMessage
			dst   *map[string]*Value
		}{
			{"inputs", vc.Inputs, &c.Inputs},
			{"outputs", vc.Outputs, &c.Outputs},
			{"upstream", vc.Upstream, &c.Upstream},
			{"grads", vc.Grads, &c.Grads},
			{"compare_mask", vc.CompareMask, &c.CompareMask},
		} {
			if *part.dst, err = decodeV1Values(part.src); err != nil {
				return nil, fmt.Errorf("case %s: %s.%w", name, part.field, err)
			}
		}
		if len(c.Outputs) == 0 && len(c.Grads) == 0 {
			return nil, fmt.Errorf("case %s: nothing to compare (no outputs or grads)", name)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

func decodeV1Values(src map[string]json.RawMessage) (map[string]*Value, error) {
	out := make(map[string]*Value, len(src))
	for k, raw := range src {
		v, err := decodeV1Value(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func decodeV1Value(raw json.RawMessage) (*Value, error) {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return String(s), nil
	}
	if len(t) > 0 && t[0] != '{' {
		var x float64
		if err := json.Unmarshal(raw, &x); err != nil {
			return nil, fmt.Errorf("want a tensor object, a string or a number: %w", err)
		}
		return Scalar(x), nil
	}
	var vt v1Tensor
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vt); err != nil {
		return nil, err
	}
	if vt.Shape == nil {
		return nil, fmt.Errorf(`tensor without "shape"`)
	}
	n := 1
	for _, d := range *vt.Shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dimension in shape %v", *vt.Shape)
		}
		if d != 0 && n > math.MaxInt/d {
			return nil, fmt.Errorf("shape %v has more elements than an int can count", *vt.Shape)
		}
		n *= d
	}
	if n := numel(*vt.Shape); n != len(vt.Data) {
		return nil, fmt.Errorf("shape %v needs %d values, data has %d", *vt.Shape, n, len(vt.Data))
	}
	v := &Value{Shape: *vt.Shape, Data: vt.Data}
	switch vt.Dtype {
	case "", "float32", "float64":
	case "int64", "int32":
		v.Int = true
	default:
		return nil, fmt.Errorf("unknown dtype %q", vt.Dtype)
	}
	if v.Data == nil {
		v.Data = []float64{}
	}
	return v, nil
}

// ---- verl's case list ----

type verlCase struct {
	Fn      string                     `json:"fn"`
	CaseID  string                     `json:"case_id"`
	Dtype   string                     `json:"dtype"`
	Params  map[string]any             `json:"params"`
	Inputs  map[string]json.RawMessage `json:"inputs"`
	Outputs map[string]json.RawMessage `json:"outputs"`
	Note    string                     `json:"note"`
}

func parseVerl(raw []byte, path, dir string) ([]*Case, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	cases := make([]*Case, 0, len(list))
	for i, rc := range list {
		var vc verlCase
		if err := json.Unmarshal(rc, &vc); err != nil {
			return nil, fmt.Errorf("case %d: %w", i, err)
		}
		name := vc.CaseID
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if vc.Fn == "" {
			return nil, fmt.Errorf(`case %s: no "fn"`, name)
		}
		c := &Case{File: path, Dir: dir, Name: name, Fn: vc.Fn, Namespace: VerlNamespace, Params: vc.Params, Tol: verlCaseTolerance(vc.Fn)}
		if c.Params == nil {
			c.Params = map[string]any{}
		}
		if errRaw, ok := vc.Outputs["error"]; ok {
			var msg string
			if json.Unmarshal(errRaw, &msg) != nil || msg == "" {
				msg = strings.TrimSpace(string(errRaw))
			}
			c.Skip = "verl rejects this call: " + msg
		}
		var err error
		if c.Inputs, err = decodeNestedValues(vc.Inputs); err != nil {
			return nil, fmt.Errorf("case %s: inputs.%w", name, err)
		}
		if c.Skip == "" {
			if c.Outputs, err = decodeNestedValues(vc.Outputs); err != nil {
				return nil, fmt.Errorf("case %s: outputs.%w", name, err)
			}
			if len(c.Outputs) == 0 {
				return nil, fmt.Errorf("case %s: no outputs", name)
			}
		}
		cases = append(cases, c)
	}
	return cases, nil
}

func decodeNestedValues(src map[string]json.RawMessage) (map[string]*Value, error) {
	out := make(map[string]*Value, len(src))
	for k, raw := range src {
		var x any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&x); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		v, err := nestedValue(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// nestedValue turns a JSON number, string or rectangular nested list into a Value.
func nestedValue(x any) (*Value, error) {
	if s, ok := x.(string); ok {
		return String(s), nil
	}
	v := &Value{Int: true}
	var shape []int
	// The shape is read off the first element at each depth; walk checks every list matches.
	for y := x; ; {
		l, ok := y.([]any)
		if !ok {
			break
		}
		shape = append(shape, len(l))
		if len(l) == 0 {
			break
		}
		y = l[0]
	}
	v.Shape = shape
	var walk func(y any, depth int) error
	walk = func(y any, depth int) error {
		if depth == len(shape) {
			n, ok := y.(json.Number)
			if !ok {
				return fmt.Errorf("ragged or non-numeric list: found %T at depth %d", y, depth)
			}
			f, err := n.Float64()
			if err != nil {
				return err
			}
			if strings.ContainsAny(n.String(), ".eE") {
				v.Int = false
			}
			v.Data = append(v.Data, f)
			return nil
		}
		l, ok := y.([]any)
		if !ok || len(l) != shape[depth] {
			return fmt.Errorf("ragged list: want %d elements at depth %d", shape[depth], depth)
		}
		for _, e := range l {
			if err := walk(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(x, 0); err != nil {
		return nil, err
	}
	if v.Data == nil {
		v.Data = []float64{}
		v.Int = false
	}
	return v, nil
}
