package tensor

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"agentr1/tensor/ref"
)

// gradOp is one differentiable kernel under a finite-difference check. The check defines the
// scalar L = sum_i y_i * u_i (float64) for a random upstream u, perturbs every element of every
// input in inputs, and compares dL/dx with what backward accumulates.
type gradOp struct {
	name   string
	inputs map[string][]float32 // differentiable inputs; the check perturbs them in place
	nOut   int                  // len(y)
	// forward computes y (nOut) from the current inputs.
	forward func(y []float32)
	// backward accumulates dL/dx into grads[x] given dy = dL/dy; a missing entry of grads is
	// passed to the kernel as nil.
	backward func(dy []float32, grads map[string][]float32)
	// forward64, when not nil, is the same function in float64 (package ref's float64
	// instantiation) of float64 copies of the inputs: the finite differences are then taken on
	// it, free of float32 rounding, and held to the tighter fd64 tolerance.
	forward64 func(y []float64, inputs map[string][]float64)
}

// fdTol is the finite-difference tolerance: |numeric - analytic| <= fdAtol + fdRtol*|analytic|.
// The kernels run in float32, so the central difference (step 1e-2 relative) carries about
// 1e-5 of truncation and rounding error; a wrong formula is off by O(1).
const (
	fdAtol = 1e-3
	fdRtol = 5e-3
)

// fd64Atol and fd64Rtol are the tolerance against differences of forward64: the central
// difference in float64 (step 1e-6 relative) is good to about 1e-9, so what remains is the
// float32 rounding of the backward kernel itself, about 1e-6 of its terms.
const (
	fd64Atol = 1e-5
	fd64Rtol = 1e-4
)

// checkGrad runs the finite-difference check, the "backward accumulates" check (a second call
// adds the same gradient again onto non-zero starting values) and the "nil gradients are
// accepted" check. It returns one message per problem found.
func checkGrad(op gradOp, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	var errs []string
	up := randSlice(rng, op.nOut) // (nOut) upstream dL/dy
	y := make([]float32, op.nOut)
	loss := func() float64 {
		op.forward(y)
		var s float64
		for i, v := range y {
			s += float64(v) * float64(up[i])
		}
		return s
	}

	// Analytic gradients, accumulated onto random starting values g0.
	names := slices.Sorted(maps.Keys(op.inputs))
	g0 := map[string][]float32{}
	grads := map[string][]float32{}
	for _, name := range names {
		g0[name] = randSlice(rng, len(op.inputs[name]))
		grads[name] = slices.Clone(g0[name])
	}
	loss() // the backward closures may rely on state saved by the forward pass
	op.backward(up, grads)
	analytic := map[string][]float64{}
	for _, name := range names {
		a := make([]float64, len(grads[name]))
		for i := range a {
			a[i] = float64(grads[name][i]) - float64(g0[name][i])
		}
		analytic[name] = a
	}
	op.backward(up, grads)
	for _, name := range names {
		for i, a := range analytic[name] {
			want := float64(g0[name][i]) + 2*a
			if got := float64(grads[name][i]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
				errs = append(errs, fmt.Sprintf("%s: backward does not accumulate: d%s[%d] after two calls = %g, want g0 + 2*grad = %g", op.name, name, i, got, want))
				break
			}
		}
	}
	op.backward(up, map[string][]float32{}) // every gradient nil: must not panic

	if op.forward64 != nil {
		errs = append(errs, checkGrad64(op, up, analytic)...)
		loss()
		return errs
	}

	// Central differences with a relative step; the actual step is measured in float32.
	for _, name := range names {
		x := op.inputs[name]
		for i := range x {
			orig := x[i]
			h := 1e-2 * math.Max(1, math.Abs(float64(orig)))
			xp, xm := float32(float64(orig)+h), float32(float64(orig)-h)
			x[i] = xp
			lp := loss()
			x[i] = xm
			lm := loss()
			x[i] = orig
			numeric := (lp - lm) / (float64(xp) - float64(xm))
			a := analytic[name][i]
			if d := math.Abs(numeric - a); d > fdAtol+fdRtol*math.Abs(a) || math.IsNaN(d) {
				errs = append(errs, fmt.Sprintf("%s: d%s[%d] = %.6g, finite difference %.6g", op.name, name, i, a, numeric))
			}
		}
	}
	loss()
	return errs
}

// checkGrad64 compares the analytic gradients with central differences of op.forward64 on
// float64 copies of the inputs, for the upstream gradient up.
func checkGrad64(op gradOp, up []float32, analytic map[string][]float64) []string {
	var errs []string
	in := map[string][]float64{}
	for name, x := range op.inputs {
		in[name] = make([]float64, len(x))
		for i, v := range x {
			in[name][i] = float64(v)
		}
	}
	y := make([]float64, op.nOut)
	loss := func() float64 {
		op.forward64(y, in)
		var s float64
		for i, v := range y {
			s += v * float64(up[i])
		}
		return s
	}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		x := in[name]
		for i, orig := range x {
			h := 1e-6 * math.Max(1, math.Abs(orig))
			x[i] = orig + h
			lp := loss()
			x[i] = orig - h
			lm := loss()
			x[i] = orig
			numeric := (lp - lm) / (2 * h)
			a := analytic[name][i]
			if d := math.Abs(numeric - a); d > fd64Atol+fd64Rtol*math.Abs(numeric) || math.IsNaN(d) {
				errs = append(errs, fmt.Sprintf("%s: d%s[%d] = %.8g, float64 finite difference %.8g", op.name, name, i, a, numeric))
			}
		}
	}
	return errs
}

// to64 returns x converted to float64.
func to64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// randSlice returns n standard-normal float32 values.
func randSlice(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	return out
}

func TestGradients(t *testing.T) {
	for i, op := range gradOps(1) {
		t.Run(op.name, func(t *testing.T) {
			for _, e := range checkGrad(op, uint64(i+1)) {
				t.Error(e)
			}
		})
	}
}

// TestGradCheckCatchesErrors makes sure the harness can fail: a backward that is 5% off, one
// that overwrites instead of accumulating, and one that ignores an input are all reported.
func TestGradCheckCatchesErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randSlice(rng, 6)
	w := randSlice(rng, 6)
	forward := func(y []float32) { SiLUForward(y, x) }
	cases := []struct {
		name     string
		inputs   map[string][]float32
		forward  func(y []float32)
		backward func(dy []float32, g map[string][]float32)
	}{
		{"scaled", map[string][]float32{"x": x}, forward, func(dy []float32, g map[string][]float32) {
			if g["x"] == nil {
				return
			}
			tmp := make([]float32, len(x))
			SiLUBackward(tmp, dy, x)
			Axpy(1.05, tmp, g["x"])
		}},
		{"overwrites", map[string][]float32{"x": x}, forward, func(dy []float32, g map[string][]float32) {
			if g["x"] == nil {
				return
			}
			clear(g["x"])
			SiLUBackward(g["x"], dy, x)
		}},
		{"ignores w", map[string][]float32{"x": x, "w": w}, func(y []float32) { MulForward(y, x, w) },
			func(dy []float32, g map[string][]float32) { MulBackward(g["x"], nil, dy, x, w) }},
	}
	for _, c := range cases {
		errs := checkGrad(gradOp{name: c.name, inputs: c.inputs, nOut: 6, forward: c.forward, backward: c.backward}, 9)
		if len(errs) == 0 {
			t.Errorf("%s: a wrong backward passed the gradient check", c.name)
		}
	}
	// The float64 differences catch an error 50 times smaller than the float32 ones need.
	errs := checkGrad(gradOp{name: "scaled by 1.001", inputs: map[string][]float32{"x": x}, nOut: 6, forward: forward,
		backward: func(dy []float32, g map[string][]float32) {
			if g["x"] == nil {
				return
			}
			tmp := make([]float32, len(x))
			SiLUBackward(tmp, dy, x)
			Axpy(1.001, tmp, g["x"])
		},
		forward64: func(y []float64, in map[string][]float64) { ref.SiLUForward(y, in["x"]) }}, 9)
	if len(errs) == 0 {
		t.Errorf("a backward 0.1%% off passed the float64 gradient check")
	}
}

// TestParallelMatchesSerial runs every kernel on shapes large enough to be split across
// workers and checks that 1 and 3 workers give the same outputs and gradients, which catches
// races and chunk-boundary mistakes in the row-, column- and head-parallel loops.
func TestParallelMatchesSerial(t *testing.T) {
	defer SetWorkers(SetWorkers(1))
	run := func(op gradOp, workers int) (y []float32, grads map[string][]float32) {
		SetWorkers(workers)
		rng := rand.New(rand.NewPCG(11, 12))
		y = make([]float32, op.nOut)
		op.forward(y)
		grads = map[string][]float32{}
		for name, x := range op.inputs {
			grads[name] = make([]float32, len(x))
		}
		op.backward(randSlice(rng, op.nOut), grads)
		return y, grads
	}
	for _, op := range gradOps(40) {
		y1, g1 := run(op, 1)
		y3, g3 := run(op, 3)
		if i, ok := closeSlices(y1, y3); !ok {
			t.Errorf("%s: output[%d] = %v with 1 worker, %v with 3", op.name, i, y1[i], y3[i])
		}
		for name := range g1 {
			if i, ok := closeSlices(g1[name], g3[name]); !ok {
				t.Errorf("%s: d%s[%d] = %v with 1 worker, %v with 3", op.name, name, i, g1[name][i], g3[name][i])
			}
		}
	}
}

// closeSlices reports whether a and b agree to float32 rounding, and the first index where
// they do not.
func closeSlices(a, b []float32) (int, bool) {
	for i := range a {
		if d := math.Abs(float64(a[i]) - float64(b[i])); !(d <= 1e-5*(1+math.Abs(float64(a[i])))) {
			return i, false
		}
	}
	return -1, true
}
