package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGradientsLazy checks that a model holds no gradient until it trains: built, cloned and
// run forward (split across shards) it has none and neither do the shards; the first Backward
// allocates them, and a clone of a training model copies them.
func TestGradientsLazy(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 7)
	noGrads := func(what string, m *Model) {
		t.Helper()
		if m.Training() {
			t.Fatalf("%s: Training() = true before any Backward", what)
		}
		for _, p := range m.Params {
			if p.Grad != nil {
				t.Fatalf("%s: %s has a gradient of %d floats before any Backward", what, p.Name, len(p.Grad))
			}
		}
	}
	noGrads("new", m)
	noGrads("clone", m.Clone())

	rng := rand.New(rand.NewPCG(8, 9))
	T := 10
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{10, 4, 7})
	a, c := lossWeights(rng, mask, 3, T)
	ws := &Workspace{Shards: 2}
	m.Forward(ws, tokens, mask, 3, T)
	noGrads("after a split Forward", m)
	for s, sh := range ws.shards {
		if sh.grad != nil {
			t.Fatalf("shard %d holds a gradient buffer after a Forward alone", s)
		}
	}

	m.Backward(ws, a, c)
	if !m.Training() {
		t.Fatal("Training() = false after Backward")
	}
	for _, p := range m.Params {
		if len(p.Grad) != len(p.Data) {
			t.Fatalf("%s: gradient of %d floats, want %d", p.Name, len(p.Grad), len(p.Data))
		}
	}
	if !slices.ContainsFunc(m.Params[1].Grad, func(g float32) bool { return g != 0 }) {
		t.Fatalf("%s: gradient all zero after Backward", m.Params[1].Name)
	}
	clone := m.Clone()
	for i, p := range m.Params {
		if !slices.Equal(clone.Params[i].Grad, p.Grad) {
			t.Fatalf("clone of a training model: %s's gradient differs", p.Name)
		}
	}
}
