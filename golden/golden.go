// Package golden reads reference values computed by other implementations (verl, PyTorch,
// Hugging Face tokenizers) and checks agentr1's functions against them case by case.
//
// Two file formats are understood (see testdata/golden/README.md):
//
//   - "agentr1-golden/v1": an object {"format", "source", "tolerance", "cases": [...]} whose
//     cases carry inputs, expected outputs, upstream gradients, expected gradients and an
//     optional compare mask;
//   - verl's case list: a JSON list of {"fn", "case_id", "params", "inputs", "outputs"} with
//     tensors as nested lists, where {"error": ...} outputs mark calls verl itself rejects.
//
// Both are read into the same Case type. The golden-case glue adds agentr1's functions to a
// Registry under the reference's function names ("matmul", "compute_gae_advantage_return", ...);
// Run dispatches each case by name, compares, and reports. That glue lives in sub-packages, one
// per reference, so that the algorithm packages never import the harness: golden/verl (rl,
// verl's core_algos.json), golden/torchops (tensor, torch_ops.json), golden/qwen (model, the
// qwen2_tiny and qwen3_tiny checkpoints) and golden/qwentok (tokenizer, tokenizer_qwen3).
// Package golden depends only on the standard library and imports none of them; they import
// it, and cmd/agentr1 gathers them.
package golden

import (
	"fmt"
	"math"
	"sort"
)

// Value is one input, output or gradient of a case: a tensor of numbers (row-major, any rank,
// rank 0 for a scalar) or a string.
type Value struct {
	Shape []int     // dimensions; empty for a scalar or a string
	Data  []float64 // row-major values; len(Data) == product of Shape
	Int   bool      // the reference gave integers (dtype int64, or a verl list of ints)
	IsStr bool      // the value is a string, held in Str
	Str   string    // the string, when IsStr
}

// Tensor returns a float tensor value with the given shape. It panics if len(data) does not
// match the shape.
func Tensor(shape []int, data []float64) *Value {
	if n := numel(shape); n != len(data) {
		panic(fmt.Sprintf("golden.Tensor: shape %v needs %d values, got %d", shape, n, len(data)))
	}
	return &Value{Shape: append([]int(nil), shape...), Data: data}
}

// Float32s returns a float tensor value built from float32 data. It panics if len(data) does
// not match the shape.
func Float32s(shape []int, data []float32) *Value {
	out := make([]float64, len(data))
	for i, x := range data {
		out[i] = float64(x)
	}
	return Tensor(shape, out)
}

// Ints returns an integer tensor value. It panics if len(data) does not match the shape.
func Ints(shape []int, data []int) *Value {
	out := make([]float64, len(data))
	for i, x := range data {
		out[i] = float64(x)
	}
	v := Tensor(shape, out)
	v.Int = true
	return v
}

// Scalar returns a rank-0 value.
func Scalar(x float64) *Value { return &Value{Data: []float64{x}} }

// String returns a string value.
func String(s string) *Value { return &Value{IsStr: true, Str: s} }

// F32 returns the values converted to float32.
func (v *Value) F32() []float32 {
	out := make([]float32, len(v.Data))
	for i, x := range v.Data {
		out[i] = float32(x)
	}
	return out
}

// IntData returns the values converted to int (truncating toward zero).
func (v *Value) IntData() []int {
	out := make([]int, len(v.Data))
	for i, x := range v.Data {
		out[i] = int(x)
	}
	return out
}

// Dim returns the size of dimension i, counting from the end when i is negative.
// It panics if i is out of range.
func (v *Value) Dim(i int) int {
	if i < 0 {
		i += len(v.Shape)
	}
	if i < 0 || i >= len(v.Shape) {
		panic(fmt.Sprintf("golden.Value.Dim: dimension %d out of range for shape %v", i, v.Shape))
	}
	return v.Shape[i]
}

// Item returns the single value of a scalar (or one-element tensor). It panics otherwise.
func (v *Value) Item() float64 {
	if len(v.Data) != 1 {
		panic(fmt.Sprintf("golden.Value.Item: value has %d elements (shape %v)", len(v.Data), v.Shape))
	}
	return v.Data[0]
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Tolerance is the comparison rule: a value passes when |got-want| <= Atol + Rtol*|want|.
type Tolerance struct {
	Rtol float64 `json:"rtol"` // relative tolerance
	Atol float64 `json:"atol"` // absolute tolerance
}

// Case is one reference computation: a function name, its parameters and inputs, and what the
// reference implementation produced.
type Case struct {
	File string // the cases file this case came from
	Dir  string // folder of that file: paths inside Params are relative to it
	Name string // "name" (v1) or "case_id" (verl)
	Fn   string // function name in the reference's vocabulary
	// Namespace keeps two references' names apart: "verl" for verl's case list, "" for
	// agentr1-golden/v1 files. verl's masked_mean and PyTorch's masked_mean are different
	// functions with different inputs; they are registered as "verl/masked_mean" and "masked_mean".
	Namespace string

	Params map[string]any // JSON-decoded parameters: float64, bool, string, nil, []any, map[string]any

	Inputs      map[string]*Value // inputs by name
	Outputs     map[string]*Value // expected outputs
	Upstream    map[string]*Value // dL/d(output): L = sum over o of sum(o * Upstream[o])
	Grads       map[string]*Value // expected dL/d(input or parameter)
	CompareMask map[string]*Value // output name -> mask; compare only where mask != 0

	Tol  Tolerance // the file's tolerance, or the case's override
	Skip string    // non-empty: the reference itself rejected this call (verl's {"error": ...})
}

// Key is the name the case is looked up by in a Registry: Fn, prefixed by "Namespace/" when the
// case has a namespace.
func (c *Case) Key() string { return Qualified(c.Namespace, c.Fn) }

// Qualified returns the registry key of function fn in namespace ns ("verl" or "").
func Qualified(ns, fn string) string {
	if ns == "" {
		return fn
	}
	return ns + "/" + fn
}

// Result is what an implementation computed for a case: outputs by name and, when the case asks
// for them, gradients by input or parameter name.
type Result struct {
	Outputs map[string]*Value // outputs by name
	Grads   map[string]*Value // gradients by input or parameter name; nil when not asked for
}

// Input returns the named input or an error naming the case and the input.
func (c *Case) Input(name string) (*Value, error) {
	v, ok := c.Inputs[name]
	if !ok || v == nil {
		return nil, fmt.Errorf("case %s: missing input %q", c.Name, name)
	}
	return v, nil
}

// Inputs returns the named inputs in order, or an error naming the first missing one.
func (c *Case) InputList(names ...string) ([]*Value, error) {
	out := make([]*Value, len(names))
	for i, n := range names {
		v, err := c.Input(n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Float returns the numeric parameter name, or def when it is absent or null.
// A parameter of another type is an error.
func (c *Case) Float(name string, def float64) (float64, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("case %s: param %q is %T, want a number", c.Name, name, v)
	}
	return f, nil
}

// Int returns the integer parameter name, or def when it is absent or null.
func (c *Case) Int(name string, def int) (int, error) {
	f, err := c.Float(name, float64(def))
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("case %s: param %q is %v, want an integer", c.Name, name, f)
	}
	return int(f), nil
}

// Bool returns the boolean parameter name, or def when it is absent or null.
func (c *Case) Bool(name string, def bool) (bool, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("case %s: param %q is %T, want a boolean", c.Name, name, v)
	}
	return b, nil
}

// String returns the string parameter name, or def when it is absent or null.
func (c *Case) String(name string, def string) (string, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("case %s: param %q is %T, want a string", c.Name, name, v)
	}
	return s, nil
}

// Func computes a case. It returns an error for a case it cannot compute (bad parameters,
// missing inputs, unreadable files); the runner counts that case as failed.
type Func func(c *Case) (*Result, error)

// Registry maps reference function names (qualified by namespace, see Case.Key) to
// implementations.
type Registry struct {
	funcs map[string]Func
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{funcs: map[string]Func{}} }

// Add registers f under the reference's function name fn. It panics if fn is already taken:
// two implementations of one reference function is a programming error.
func (r *Registry) Add(fn string, f Func) {
	if _, dup := r.funcs[fn]; dup {
		panic(fmt.Sprintf("golden.Registry.Add: %q registered twice", fn))
	}
	r.funcs[fn] = f
}

// Lookup returns the implementation registered under fn.
func (r *Registry) Lookup(fn string) (Func, bool) {
	f, ok := r.funcs[fn]
	return f, ok
}

// Names returns the registered function names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.funcs))
	for n := range r.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
