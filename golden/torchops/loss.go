package torchops

import (
	"fmt"
	"slices"

	"agentr1/golden"
	"agentr1/tensor"
)

// logitsAndLabels reads logits (..., V) and, when withLabels, labels (...) with matching
// leading shape and ids in [0, V).
func logitsAndLabels(c *golden.Case, withLabels bool) (logits *golden.Value, labels []int, n, V int, err error) {
	logits, err = c.Input("logits")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	n, V, err = lastDim(c, "logits", logits)
	if err != nil || !withLabels {
		return logits, nil, n, V, err
	}
	lv, err := c.Input("labels")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if !slices.Equal(lv.Shape, logits.Shape[:len(logits.Shape)-1]) {
		return nil, nil, 0, 0, fmt.Errorf("case %s: labels %v do not match logits %v", c.Name, lv.Shape, logits.Shape)
	}
	labels = lv.IntData()
	for i, l := range labels {
		if l < 0 || l >= V {
			return nil, nil, 0, 0, fmt.Errorf("case %s: labels[%d] = %d outside [0, %d)", c.Name, i, l, V)
		}
	}
	return logits, labels, n, V, nil
}

func goldenLogProbs(c *golden.Case) (*golden.Result, error) {
	logits, labels, n, V, err := logitsAndLabels(c, true)
	if err != nil {
		return nil, err
	}
	lf := logits.F32()
	logp := make([]float32, n)
	tensor.LogProbsForward(logp, lf, labels, n, V)
	rowShape := logits.Shape[:len(logits.Shape)-1]
	res := &golden.Result{Outputs: outputs("logprob", golden.Float32s(rowShape, logp))}
	dlogp, err := upstream(c, "logprob", n)
	if err != nil || dlogp == nil {
		return res, err
	}
	dlogits := make([]float32, n*V)
	tensor.LogProbsBackward(dlogits, dlogp, lf, logp, labels, n, V)
	res.Grads = outputs("logits", golden.Float32s(logits.Shape, dlogits))
	return res, nil
}

func goldenEntropy(c *golden.Case) (*golden.Result, error) {
	logits, _, n, V, err := logitsAndLabels(c, false)
	if err != nil {
		return nil, err
	}
	lf := logits.F32()
	ent := make([]float32, n)
	tensor.EntropyForward(ent, lf, n, V)
	rowShape := logits.Shape[:len(logits.Shape)-1]
	res := &golden.Result{Outputs: outputs("entropy", golden.Float32s(rowShape, ent))}
	dent, err := upstream(c, "entropy", n)
	if err != nil || dent == nil {
		return res, err
	}
	dlogits := make([]float32, n*V)
	tensor.EntropyBackward(dlogits, dent, lf, ent, n, V)
	res.Grads = outputs("logits", golden.Float32s(logits.Shape, dlogits))
	return res, nil
}

func goldenCrossEntropyMasked(c *golden.Case) (*golden.Result, error) {
	logits, labels, n, V, err := logitsAndLabels(c, true)
	if err != nil {
		return nil, err
	}
	if red, err := c.String("reduction", "masked_mean"); err != nil {
		return nil, err
	} else if red != "masked_mean" {
		return nil, fmt.Errorf("case %s: reduction %q: only masked_mean is implemented", c.Name, red)
	}
	mv, err := c.Input("mask")
	if err != nil {
		return nil, err
	}
	if len(mv.Data) != n {
		return nil, fmt.Errorf("case %s: mask has shape %v, want %d values", c.Name, mv.Shape, n)
	}
	lf, mask := logits.F32(), mv.F32()
	loss := tensor.CrossEntropyMaskedForward(lf, labels, mask, n, V)
	res := &golden.Result{Outputs: outputs("loss", golden.Scalar(float64(loss)))}
	dloss, err := upstream(c, "loss", 1)
	if err != nil || dloss == nil {
		return res, err
	}
	dlogits := make([]float32, n*V)
	tensor.CrossEntropyMaskedBackward(dlogits, dloss[0], lf, labels, mask, n, V)
	res.Grads = outputs("logits", golden.Float32s(logits.Shape, dlogits))
	return res, nil
}

func goldenMaskedMean(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("x", "mask")
	if err != nil {
		return nil, err
	}
	x, mv := in[0], in[1]
	if len(mv.Data) != len(x.Data) {
		return nil, fmt.Errorf("case %s: mask %v and x %v differ in size", c.Name, mv.Shape, x.Shape)
	}
	xf, mask := x.F32(), mv.F32()
	res := &golden.Result{Outputs: outputs("y", golden.Scalar(float64(tensor.MaskedMean(xf, mask))))}
	dy, err := upstream(c, "y", 1)
	if err != nil || dy == nil {
		return res, err
	}
	dx := make([]float32, len(xf))
	tensor.MaskedMeanBackward(dx, dy[0], mask)
	res.Grads = outputs("x", golden.Float32s(x.Shape, dx))
	return res, nil
}

// goldenAdamW runs "adamw": `steps` updates of one parameter with gradients grad_step1...,
// reporting the parameter after each step and the final moments.
func goldenAdamW(c *golden.Case) (*golden.Result, error) {
	var o tensor.AdamW
	var steps int
	var err error
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"lr", &o.LR}, {"beta1", &o.Beta1}, {"beta2", &o.Beta2}, {"eps", &o.Eps}, {"weight_decay", &o.WeightDecay}} {
		if *f.dst, err = c.Float(f.name, -1); err != nil {
			return nil, err
		}
		if *f.dst < 0 {
			return nil, fmt.Errorf("case %s: missing or negative param %q", c.Name, f.name)
		}
	}
	if steps, err = c.Int("steps", 1); err != nil {
		return nil, err
	}
	pv, err := c.Input("param")
	if err != nil {
		return nil, err
	}
	p := pv.F32()
	res := &golden.Result{Outputs: map[string]*golden.Value{}}
	for s := 1; s <= steps; s++ {
		gv, err := c.Input(fmt.Sprintf("grad_step%d", s))
		if err != nil {
			return nil, err
		}
		if len(gv.Data) != len(p) {
			return nil, fmt.Errorf("case %s: grad_step%d has shape %v, param %v", c.Name, s, gv.Shape, pv.Shape)
		}
		o.Update([][]float32{p}, [][]float32{gv.F32()})
		res.Outputs[fmt.Sprintf("param_step%d", s)] = golden.Float32s(pv.Shape, slices.Clone(p))
	}
	if steps > 0 {
		res.Outputs["exp_avg"] = golden.Float32s(pv.Shape, o.M[0])
		res.Outputs["exp_avg_sq"] = golden.Float32s(pv.Shape, o.V[0])
	}
	return res, nil
}

// goldenClipGradNorm runs "clip_grad_norm" over grad0 and grad1.
func goldenClipGradNorm(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("grad0", "grad1")
	if err != nil {
		return nil, err
	}
	maxNorm, err := c.Float("max_norm", -1)
	if err != nil {
		return nil, err
	}
	if maxNorm < 0 {
		return nil, fmt.Errorf("case %s: missing or negative param \"max_norm\"", c.Name)
	}
	g0, g1 := in[0].F32(), in[1].F32()
	total := tensor.ClipGradNorm([][]float32{g0, g1}, maxNorm)
	return &golden.Result{Outputs: outputs(
		"total_norm", golden.Scalar(total),
		"grad0", golden.Float32s(in[0].Shape, g0),
		"grad1", golden.Float32s(in[1].Shape, g1))}, nil
}
