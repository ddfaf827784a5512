// Package torchops checks package tensor against PyTorch: it registers tensor's kernels under
// the function names of testdata/golden/torch_ops.json (PyTorch float64 references, formats in
// testdata/golden/README.md). It is golden-case glue, not part of the algorithm: it reads a
// case's tensors, runs the kernels on fresh buffers, and hands the results back to package
// golden to compare. The model never imports it; `agentr1 golden` and this package's tests do.
package torchops

import (
	"fmt"
	"slices"

	"agentr1/golden"
	"agentr1/tensor"
)

// Register adds the tensor kernels to r under the function names of
// testdata/golden/torch_ops.json. Each implementation runs the float32 forward kernel and, when
// the case gives an upstream gradient, the backward kernel on fresh zeroed gradient buffers.
func Register(r *golden.Registry) {
	r.Add("matmul", goldenMatMul)
	r.Add("linear", goldenLinear)
	r.Add("add", goldenBroadcast(false))
	r.Add("mul", goldenBroadcast(true))
	r.Add("softmax", goldenSoftmax(false))
	r.Add("log_softmax", goldenSoftmax(true))
	r.Add("rms_norm", goldenRMSNorm)
	r.Add("silu", goldenSiLU)
	r.Add("swiglu", goldenSwiGLU)
	r.Add("rope", goldenRoPE)
	r.Add("attention", goldenAttention)
	r.Add("embedding", goldenEmbedding)
	r.Add("logprobs", goldenLogProbs)
	r.Add("entropy", goldenEntropy)
	r.Add("cross_entropy_masked", goldenCrossEntropyMasked)
	r.Add("masked_mean", goldenMaskedMean)
	r.Add("adamw", goldenAdamW)
	r.Add("clip_grad_norm", goldenClipGradNorm)
}

// upstream returns the case's upstream gradient for output name as float32 (nil when the
// case has none), checking its length against the output's.
func upstream(c *golden.Case, name string, n int) ([]float32, error) {
	u, ok := c.Upstream[name]
	if !ok || u == nil {
		return nil, nil
	}
	if len(u.Data) != n {
		return nil, fmt.Errorf("case %s: upstream %q has %d values, output has %d", c.Name, name, len(u.Data), n)
	}
	return u.F32(), nil
}

// rank checks that v has the given rank.
func rank(c *golden.Case, name string, v *golden.Value, r int) error {
	if len(v.Shape) != r {
		return fmt.Errorf("case %s: input %q has shape %v, want rank %d", c.Name, name, v.Shape, r)
	}
	return nil
}

// lastDim returns (rows, last) for a tensor of rank >= 1 viewed as (rows, last).
func lastDim(c *golden.Case, name string, v *golden.Value) (rows, last int, err error) {
	if len(v.Shape) == 0 {
		return 0, 0, fmt.Errorf("case %s: input %q is a scalar, want rank >= 1", c.Name, name)
	}
	last = v.Shape[len(v.Shape)-1]
	if last == 0 {
		return 0, 0, fmt.Errorf("case %s: input %q has shape %v", c.Name, name, v.Shape)
	}
	return len(v.Data) / last, last, nil
}

// outputs builds a name -> value map from alternating name, *golden.Value arguments.
func outputs(kv ...any) map[string]*golden.Value {
	m := map[string]*golden.Value{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(*golden.Value)
	}
	return m
}

func goldenMatMul(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("a", "b")
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if err := rank(c, "a", a, 2); err != nil {
		return nil, err
	}
	if err := rank(c, "b", b, 2); err != nil {
		return nil, err
	}
	m, k, n := a.Shape[0], a.Shape[1], b.Shape[1]
	if b.Shape[0] != k {
		return nil, fmt.Errorf("case %s: a %v and b %v do not multiply", c.Name, a.Shape, b.Shape)
	}
	af, bf := a.F32(), b.F32()
	y := make([]float32, m*n) // (m, n)
	tensor.MatMulForward(y, af, bf, m, k, n)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s([]int{m, n}, y))}
	dy, err := upstream(c, "y", m*n)
	if err != nil || dy == nil {
		return res, err
	}
	da, db := make([]float32, m*k), make([]float32, k*n)
	tensor.MatMulBackward(da, db, dy, af, bf, m, k, n)
	res.Grads = outputs("a", golden.Float32s(a.Shape, da), "b", golden.Float32s(b.Shape, db))
	return res, nil
}

func goldenLinear(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("x", "w")
	if err != nil {
		return nil, err
	}
	x, w := in[0], in[1]
	hasBias, err := c.Bool("bias", false)
	if err != nil {
		return nil, err
	}
	if err := rank(c, "w", w, 2); err != nil {
		return nil, err
	}
	n, inDim, err := lastDim(c, "x", x)
	if err != nil {
		return nil, err
	}
	out := w.Shape[0]
	if w.Shape[1] != inDim {
		return nil, fmt.Errorf("case %s: x %v and w %v do not match", c.Name, x.Shape, w.Shape)
	}
	var bias []float32
	if hasBias {
		bv, err := c.Input("b")
		if err != nil {
			return nil, err
		}
		if len(bv.Data) != out {
			return nil, fmt.Errorf("case %s: b has shape %v, want [%d]", c.Name, bv.Shape, out)
		}
		bias = bv.F32()
	}
	xf, wf := x.F32(), w.F32()
	yShape := append(slices.Clone(x.Shape[:len(x.Shape)-1]), out)
	y := make([]float32, n*out) // (n, out)
	tensor.LinearForward(y, xf, wf, bias, n, inDim, out)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(yShape, y))}
	dy, err := upstream(c, "y", n*out)
	if err != nil || dy == nil {
		return res, err
	}
	dx, dw := make([]float32, n*inDim), make([]float32, out*inDim)
	var dbias []float32
	if hasBias {
		dbias = make([]float32, out)
	}
	tensor.LinearBackward(dx, dw, dbias, dy, xf, wf, n, inDim, out)
	res.Grads = outputs("x", golden.Float32s(x.Shape, dx), "w", golden.Float32s(w.Shape, dw))
	if hasBias {
		res.Grads["b"] = golden.Float32s([]int{out}, dbias)
	}
	return res, nil
}

// goldenBroadcast implements "add" and "mul" for any two shapes PyTorch broadcasts.
func goldenBroadcast(mul bool) golden.Func {
	return func(c *golden.Case) (*golden.Result, error) {
		in, err := c.InputList("x", "y")
		if err != nil {
			return nil, err
		}
		shape, err := tensor.BroadcastShape(in[0].Shape, in[1].Shape)
		if err != nil {
			return nil, fmt.Errorf("case %s: x and y: %w", c.Name, err)
		}
		x, y := tensor.FromSlice(in[0].F32(), in[0].Shape...), tensor.FromSlice(in[1].F32(), in[1].Shape...)
		z := tensor.New(shape...)
		if mul {
			tensor.BroadcastMulForward(z, x, y)
		} else {
			tensor.BroadcastAddForward(z, x, y)
		}
		res := &golden.Result{Outputs: outputs("z", golden.Float32s(shape, z.Data))}
		dzData, err := upstream(c, "z", len(z.Data))
		if err != nil || dzData == nil {
			return res, err
		}
		dz, dx, dy := tensor.FromSlice(dzData, shape...), tensor.New(x.Shape...), tensor.New(y.Shape...)
		if mul {
			tensor.BroadcastMulBackward(dx, dy, dz, x, y)
		} else {
			tensor.BroadcastAddBackward(dx, dy, dz)
		}
		res.Grads = outputs("x", golden.Float32s(x.Shape, dx.Data), "y", golden.Float32s(y.Shape, dy.Data))
		return res, nil
	}
}

// goldenSoftmax implements "softmax" and "log_softmax" over the last axis.
func goldenSoftmax(logSoftmax bool) golden.Func {
	return func(c *golden.Case) (*golden.Result, error) {
		x, err := c.Input("x")
		if err != nil {
			return nil, err
		}
		axis, err := c.Int("axis", -1)
		if err != nil {
			return nil, err
		}
		if axis != -1 && axis != len(x.Shape)-1 {
			return nil, fmt.Errorf("case %s: axis %d: only the last axis is supported", c.Name, axis)
		}
		n, d, err := lastDim(c, "x", x)
		if err != nil {
			return nil, err
		}
		xf := x.F32()
		y := make([]float32, n*d)
		if logSoftmax {
			tensor.LogSoftmaxForward(y, xf, n, d)
		} else {
			tensor.SoftmaxForward(y, xf, n, d)
		}
		res := &golden.Result{Outputs: outputs("y", golden.Float32s(x.Shape, y))}
		dy, err := upstream(c, "y", n*d)
		if err != nil || dy == nil {
			return res, err
		}
		dx := make([]float32, n*d)
		if logSoftmax {
			tensor.LogSoftmaxBackward(dx, dy, y, n, d)
		} else {
			tensor.SoftmaxBackward(dx, dy, y, n, d)
		}
		res.Grads = outputs("x", golden.Float32s(x.Shape, dx))
		return res, nil
	}
}

func goldenRMSNorm(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("x", "w")
	if err != nil {
		return nil, err
	}
	x, w := in[0], in[1]
	eps, err := c.Float("eps", 1e-6)
	if err != nil {
		return nil, err
	}
	n, d, err := lastDim(c, "x", x)
	if err != nil {
		return nil, err
	}
	if len(w.Data) != d {
		return nil, fmt.Errorf("case %s: w has shape %v, want [%d]", c.Name, w.Shape, d)
	}
	xf, wf := x.F32(), w.F32()
	y, rstd := make([]float32, n*d), make([]float32, n)
	tensor.RMSNormForward(y, rstd, xf, wf, n, d, float32(eps))
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(x.Shape, y))}
	dy, err := upstream(c, "y", n*d)
	if err != nil || dy == nil {
		return res, err
	}
	dx, dw := make([]float32, n*d), make([]float32, d)
	tensor.RMSNormBackward(dx, dw, dy, xf, wf, rstd, n, d)
	res.Grads = outputs("x", golden.Float32s(x.Shape, dx), "w", golden.Float32s(w.Shape, dw))
	return res, nil
}

func goldenSiLU(c *golden.Case) (*golden.Result, error) {
	x, err := c.Input("x")
	if err != nil {
		return nil, err
	}
	xf := x.F32()
	y := make([]float32, len(xf))
	tensor.SiLUForward(y, xf)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(x.Shape, y))}
	dy, err := upstream(c, "y", len(y))
	if err != nil || dy == nil {
		return res, err
	}
	dx := make([]float32, len(xf))
	tensor.SiLUBackward(dx, dy, xf)
	res.Grads = outputs("x", golden.Float32s(x.Shape, dx))
	return res, nil
}

func goldenSwiGLU(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("gate", "up")
	if err != nil {
		return nil, err
	}
	gate, up := in[0], in[1]
	if !slices.Equal(gate.Shape, up.Shape) {
		return nil, fmt.Errorf("case %s: gate %v and up %v differ in shape", c.Name, gate.Shape, up.Shape)
	}
	gf, uf := gate.F32(), up.F32()
	y := make([]float32, len(gf))
	tensor.SwiGLUForward(y, gf, uf)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(gate.Shape, y))}
	dy, err := upstream(c, "y", len(y))
	if err != nil || dy == nil {
		return res, err
	}
	dg, du := make([]float32, len(gf)), make([]float32, len(uf))
	tensor.SwiGLUBackward(dg, du, dy, gf, uf)
	res.Grads = outputs("gate", golden.Float32s(gate.Shape, dg), "up", golden.Float32s(up.Shape, du))
	return res, nil
}
