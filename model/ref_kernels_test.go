package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"agentr1/tensor"
)

// useKernels makes the named tensor kernel set active until the test ends.
func useKernels(t *testing.T, name string) {
	t.Helper()
	prev, err := tensor.SetKernels(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tensor.SetKernels(prev) })
}

// refBatch is a fixed batch for the ref-set tests: two left-padded rows of a tiny model, and
// the upstream gradient of loss = -mean logp over the predicted tokens.
func refBatch(cfg Config) (tokens []int, mask, dlogp []float32, B, T int) {
	B, T = 2, 12
	tokens, mask = leftPadded(rand.New(rand.NewPCG(5, 5)), cfg.VocabSize, T, []int{T, T - 3})
	dlogp = make([]float32, B*T)
	predicted := 0
	for b := range B {
		for t := 1; t < T; t++ {
			if mask[b*T+t-1] == 1 && mask[b*T+t] == 1 {
				predicted++
			}
		}
	}
	for b := range B {
		for t := 1; t < T; t++ {
			if mask[b*T+t-1] == 1 && mask[b*T+t] == 1 {
				dlogp[b*T+t] = -1 / float32(predicted)
			}
		}
	}
	return tokens, mask, dlogp, B, T
}

// TestTrainsOnRefKernels trains a tiny model for a few AdamW steps with every tensor operation
// on the plain loops of tensor/ref (the kernel set AGENTR1_KERNELS=ref selects, swapped in
// here with tensor.SetKernels so that the test runs in every go test), and checks that the
// loss falls: the whole forward, backward and update path works on the reference set.
func TestTrainsOnRefKernels(t *testing.T) {
	useKernels(t, "ref")
	if got := tensor.KernelName(); got != "ref" {
		t.Fatalf("KernelName() = %q, want ref", got)
	}
	m := newTestModel(t, tinyConfig(false), 3)
	tokens, mask, dlogp, B, T := refBatch(m.Config)
	opt := &tensor.AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	ws := NewWorkspace()
	var losses []float64
	for range 8 {
		m.ZeroGrad()
		logp, _ := m.Forward(ws, tokens, mask, B, T)
		var loss float64
		for i, g := range dlogp {
			loss += float64(g) * float64(logp[i]) // -mean logp
		}
		losses = append(losses, loss)
		m.Backward(ws, dlogp, nil)
		opt.Update(m.WritableParams(), m.ParamGrads())
	}
	if first, last := losses[0], losses[len(losses)-1]; !(last < 0.8*first) || math.IsNaN(last) {
		t.Errorf("loss over 8 steps on ref: %.4f, want the last below 0.8 x the first", losses)
	}
}

// TestRefKernelsMatchFastSet runs one forward and backward of a tiny model on the active fast
// kernel set and on ref, and compares the log-probabilities and every parameter gradient.
func TestRefKernelsMatchFastSet(t *testing.T) {
	if tensor.KernelName() == "ref" {
		t.Skip("the ref set is active: nothing to compare it with")
	}
	run := func() (logp []float32, grads [][]float32) {
		m := newTestModel(t, tinyConfig(true), 4)
		tokens, mask, dlogp, B, T := refBatch(m.Config)
		ws := NewWorkspace()
		m.ZeroGrad()
		lp, _ := m.Forward(ws, tokens, mask, B, T)
		logp = append([]float32(nil), lp...)
		m.Backward(ws, dlogp, nil)
		for _, g := range m.ParamGrads() {
			grads = append(grads, append([]float32(nil), g...))
		}
		return logp, grads
	}
	fastLogp, fastGrads := run()
	useKernels(t, "ref")
	refLogp, refGrads := run()
	if i := closeWithin(fastLogp, refLogp, 1); i >= 0 {
		t.Errorf("logp[%d]: fast %v, ref %v", i, fastLogp[i], refLogp[i])
	}
	for p := range refGrads {
		if i := closeWithin(fastGrads[p], refGrads[p], 1); i >= 0 {
			t.Errorf("param %d grad[%d]: fast %v, ref %v", p, i, fastGrads[p][i], refGrads[p][i])
		}
	}
}
