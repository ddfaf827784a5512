package golden

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const v1Sample = `{"format": "agentr1-golden/v1", "source": "test", "tolerance": {"rtol": 1e-4, "atol": 1e-5},
 "cases": [
  {"name": "double/0", "fn": "double", "params": {"k": 2},
   "inputs": {"x": {"shape": [2, 2], "data": [1, 2, 3, 4]}},
   "outputs": {"y": {"shape": [2, 2], "data": [2, 4, 6, 8]}},
   "upstream": {"y": {"shape": [2, 2], "data": [1, 1, 1, 1]}},
   "grads": {"x": {"shape": [2, 2], "data": [2, 2, 2, 2]}}},
  {"name": "double/masked", "fn": "double", "params": {"k": 2},
   "inputs": {"x": {"shape": [3], "data": [1, 2, 3]}},
   "outputs": {"y": {"shape": [3], "data": [2, 999, 6]}},
   "compare_mask": {"y": {"shape": [3], "data": [1, 0, 1]}}},
  {"name": "echo/0", "fn": "echo", "inputs": {"s": "héllo"}, "outputs": {"s": "héllo", "ids": {"shape": [2], "dtype": "int64", "data": [7, 9]}},
   "tolerance": {"rtol": 0, "atol": 0}}
 ]}`

const verlSample = `[
 {"fn": "double", "case_id": "v-001", "dtype": "float64", "params": {"k": 2, "axis": null},
  "inputs": {"x": [[1.0, 2.0], [3.0, -0.0]], "index": [0, 1]},
  "outputs": {"y": [[2.0, 4.0], [6.0, 0.0]]}},
 {"fn": "double", "case_id": "v-002", "dtype": "float64", "params": {}, "inputs": {"x": [1.0]},
  "outputs": {"error": "NotImplementedError"}},
 {"fn": "compute_grpo_vectorized_outcome_advantage", "case_id": "v-003", "params": {}, "inputs": {"x": [1.0]},
  "outputs": {"y": 3.5}}
]`

func testRegistry() *Registry {
	r := NewRegistry()
	r.Add("double", func(c *Case) (*Result, error) {
		k, err := c.Float("k", 1)
		if err != nil {
			return nil, err
		}
		x, err := c.Input("x")
		if err != nil {
			return nil, err
		}
		y := make([]float64, len(x.Data))
		g := make([]float64, len(x.Data))
		for i, v := range x.Data {
			y[i] = k * v
			g[i] = k
		}
		return &Result{Outputs: map[string]*Value{"y": Tensor(x.Shape, y)}, Grads: map[string]*Value{"x": Tensor(x.Shape, g)}}, nil
	})
	r.Add("verl/double", func(c *Case) (*Result, error) {
		x := c.Inputs["x"]
		y := make([]float64, len(x.Data))
		for i, v := range x.Data {
			y[i] = 2 * v
		}
		return &Result{Outputs: map[string]*Value{"y": Tensor(x.Shape, y)}}, nil
	})
	r.Add("echo", func(c *Case) (*Result, error) {
		return &Result{Outputs: map[string]*Value{"s": c.Inputs["s"], "ids": Ints([]int{2}, []int{7, 9})}}, nil
	})
	return r
}

func TestParseV1(t *testing.T) {
	cases, err := Parse([]byte(v1Sample), "dir/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("got %d cases, want 3", len(cases))
	}
	c := cases[0]
	if c.Name != "double/0" || c.Fn != "double" || c.Dir != "dir" || c.Tol.Rtol != 1e-4 || c.Tol.Atol != 1e-5 {
		t.Errorf("case 0 header wrong: %+v", c)
	}
	if got := c.Inputs["x"]; got.Dim(0) != 2 || got.Dim(-1) != 2 || got.Data[3] != 4 {
		t.Errorf("input x decoded wrong: %+v", got)
	}
	if cases[2].Tol != (Tolerance{}) {
		t.Errorf("per-case tolerance override not applied: %+v", cases[2].Tol)
	}
	if ids := cases[2].Outputs["ids"]; !ids.Int || ids.IntData()[1] != 9 {
		t.Errorf("int64 tensor decoded wrong: %+v", ids)
	}
	if s := cases[2].Outputs["s"]; !s.IsStr || s.Str != "héllo" {
		t.Errorf("string output decoded wrong: %+v", s)
	}
}

func TestParseVerl(t *testing.T) {
	cases, err := Parse([]byte(verlSample), "verl.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("got %d cases, want 3", len(cases))
	}
	x := cases[0].Inputs["x"]
	if len(x.Shape) != 2 || x.Shape[0] != 2 || x.Shape[1] != 2 || x.Int {
		t.Errorf("nested list decoded wrong: %+v", x)
	}
	if idx := cases[0].Inputs["index"]; !idx.Int || idx.Shape[0] != 2 {
		t.Errorf("int list decoded wrong: %+v", idx)
	}
	if a, err := cases[0].Float("axis", 7); err != nil || a != 7 {
		t.Errorf("null param should give the default: %v %v", a, err)
	}
	if cases[0].Key() != "verl/double" {
		t.Errorf("verl case key = %q, want verl/double", cases[0].Key())
	}
	if cases[1].Skip == "" {
		t.Error("error output should mark the case skipped")
	}
	if cases[0].Tol != verlTolerance || cases[2].Tol != verlFloat32Tolerance {
		t.Errorf("tolerances: %+v %+v", cases[0].Tol, cases[2].Tol)
	}
	if y := cases[2].Outputs["y"]; len(y.Shape) != 0 || y.Item() != 3.5 {
		t.Errorf("scalar output decoded wrong: %+v", y)
	}
}

func TestRunCountsAndReports(t *testing.T) {
	v1, _ := Parse([]byte(v1Sample), "a.json")
	verl, _ := Parse([]byte(verlSample), "b.json")
	var out bytes.Buffer
	s, _ := Run(testRegistry(), append(v1, verl...), &out)
	// v1: 3 pass. verl: v-001 passes, v-002 skipped, v-003 has no implementation -> failed.
	if s.Passed != 4 || s.Failed != 1 || s.Skipped != 1 {
		t.Fatalf("summary %+v, output:\n%s", s, out.String())
	}
	if got := s.Line(); got != "4 passed, 1 failed, 1 skipped" {
		t.Errorf("Line() = %q", got)
	}
	if !strings.Contains(out.String(), "v-003") || !strings.Contains(out.String(), "no implementation") {
		t.Errorf("failure line should name the case and the reason:\n%s", out.String())
	}
	if (Summary{Passed: 2}).Line() != "2 passed, 0 failed" {
		t.Error("Line() without skips must not mention skipped")
	}
}

func TestCheckFindsWorstElement(t *testing.T) {
	c := &Case{Name: "c", Tol: Tolerance{Rtol: 0, Atol: 0.01},
		Outputs: map[string]*Value{"y": Tensor([]int{4}, []float64{1, 2, 3, 4})},
		Grads:   map[string]*Value{"x": Tensor([]int{1}, []float64{1})}}
	res := &Result{Outputs: map[string]*Value{"y": Tensor([]int{4}, []float64{1, 2.5, 3, 9})}}
	ms := Check(c, res)
	if len(ms) != 2 {
		t.Fatalf("got %d mismatches, want 2 (y values, x not computed): %v", len(ms), ms)
	}
	if ms[0].Field != "outputs.y" || ms[0].Index != 3 || ms[0].Got != 9 || ms[0].Want != 4 {
		t.Errorf("worst element wrong: %+v", ms[0])
	}
	if ms[1].Field != "grads.x" || ms[1].Msg != "not computed" {
		t.Errorf("missing gradient not reported: %+v", ms[1])
	}
	// Shape mismatch and NaN are failures too.
	res = &Result{Outputs: map[string]*Value{"y": Tensor([]int{2, 2}, []float64{1, 2, 3, 4})}, Grads: map[string]*Value{"x": Tensor([]int{1}, []float64{nanValue()})}}
	if ms := Check(c, res); len(ms) != 2 {
		t.Errorf("shape mismatch and NaN should both fail: %v", ms)
	}
}

func TestRunCaseRecoversPanicsAndErrors(t *testing.T) {
	r := NewRegistry()
	r.Add("boom", func(*Case) (*Result, error) { panic("index out of range") })
	r.Add("err", func(*Case) (*Result, error) { return nil, errors.New("bad param") })
	for _, fn := range []string{"boom", "err"} {
		o := RunCase(r, &Case{Name: fn, Fn: fn, Outputs: map[string]*Value{"y": Scalar(1)}})
		if o.Passed() || o.Err == nil {
			t.Errorf("%s: want a failed outcome with an error, got %+v", fn, o)
		}
	}
}

func TestParseErrorsNameTheCase(t *testing.T) {
	bad := []struct{ name, text, want string }{
		{"empty", "  ", "empty"},
		{"not json", "hello", "not a golden file"},
		{"wrong format", `{"format": "x/v9", "cases": []}`, "format"},
		{"no fn", `{"format": "agentr1-golden/v1", "cases": [{"name": "a/1", "outputs": {"y": 1}}]}`, "a/1"},
		{"shape mismatch", `{"format": "agentr1-golden/v1", "cases": [{"name": "a/2", "fn": "f", "outputs": {"y": {"shape": [3], "data": [1]}}}]}`, "a/2"},
		{"bad dtype", `{"format": "agentr1-golden/v1", "cases": [{"name": "a/3", "fn": "f", "outputs": {"y": {"shape": [1], "data": [1], "dtype": "complex"}}}]}`, "dtype"},
		{"ragged verl", `[{"fn": "f", "case_id": "r-1", "inputs": {"x": [[1.0], [1.0, 2.0]]}, "outputs": {"y": 1.0}}]`, "r-1"},
		{"no outputs", `[{"fn": "f", "case_id": "r-2", "inputs": {}, "outputs": {}}]`, "r-2"},
	}
	for _, tc := range bad {
		_, err := Parse([]byte(tc.text), "f.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}
