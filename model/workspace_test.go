package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLeanWorkspace checks the memory modes of a Workspace: a fresh workspace keeps one
// layer's activations (a forward-only workspace stays small), its first Backward recomputes
// the forward pass keeping every layer, and the log-probs, entropies and every gradient are bit
// for bit those of a workspace that kept its activations from the start, for the policy and
// the critic; and a workspace that keeps only attention statistics (MaxKeptAttention too small
// for the weights) gives the same gradients from less memory.
func TestLeanWorkspace(t *testing.T) {
	cfg := tinyConfig(false)
	cfg.NumHiddenLayers = 3
	rng := rand.New(rand.NewPCG(21, 22))
	B, T := 3, 20
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{20, 7, 13})
	a, c := lossWeights(rng, mask, B, T)

	type result struct {
		logp, entropy []float32
		grads         [][]float32
		leanBytes     int
		keptBytes     int
	}
	run := func(name string, warm bool, maxAttention int) result {
		m := newTestModel(t, cfg, 23)
		ws := &Workspace{MaxKeptAttention: maxAttention, Shards: 1} // one workspace's own buffers
		if warm {                                                   // a workspace that has already run a Backward keeps every layer
			m.Forward(ws, tokens, mask, B, T)
			m.Backward(ws, a, c)
			m.ZeroGrad()
		}
		var r result
		logp, ent := m.Forward(ws, tokens, mask, B, T)
		r.leanBytes = ws.footprint()
		r.logp, r.entropy = append([]float32(nil), logp...), append([]float32(nil), ent...)
		m.Backward(ws, a, c)
		r.keptBytes = ws.footprint()
		for _, p := range m.Params {
			r.grads = append(r.grads, append([]float32(nil), p.Grad...))
		}
		// A second Forward on the same workspace keeps its activations.
		m.Forward(ws, tokens, mask, B, T)
		if !ws.kept {
			t.Errorf("%s: a workspace after Backward runs a lean forward pass", name)
		}
		return r
	}
	lean, kept := run("lean", false, 0), run("kept", true, 0)
	recomputed := run("kept, attention recomputed", true, 1) // weights never fit: statistics only
	same := func(field string, got, want []float32) {
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s[%d]: lean workspace %v, kept workspace %v", field, i, got[i], want[i])
				return
			}
		}
	}
	same("logp", lean.logp, kept.logp)
	same("entropy", lean.entropy, kept.entropy)
	for i := range kept.grads {
		same(fmt.Sprintf("grad %d", i), lean.grads[i], kept.grads[i])
		same(fmt.Sprintf("grad %d (attention recomputed)", i), recomputed.grads[i], kept.grads[i])
	}
	if recomputed.keptBytes >= kept.keptBytes {
		t.Errorf("a workspace recomputing attention holds %d bytes, not fewer than the %d of one keeping it", recomputed.keptBytes, kept.keptBytes)
	}
	if lean.leanBytes >= lean.keptBytes {
		t.Errorf("lean forward holds %d bytes, not fewer than the %d of a kept one", lean.leanBytes, lean.keptBytes)
	}

	// The critic: a lean Forward then Backward matches a warmed-up workspace too.
	pol := newTestModel(t, cfg, 23)
	dvalues := make([]float32, B*T)
	for i := range dvalues {
		dvalues[i] = mask[i] * float32(i%5-2) / 7
	}
	critGrads := func(warm bool) [][]float32 {
		crit := NewCritic(pol, 5)
		ws := &Workspace{Shards: 1}
		if warm {
			crit.Forward(ws, tokens, mask, B, T)
			crit.Backward(ws, dvalues)
			crit.ZeroGrad()
		}
		crit.Forward(ws, tokens, mask, B, T)
		crit.Backward(ws, dvalues)
		var g [][]float32
		for _, p := range crit.Params {
			g = append(g, append([]float32(nil), p.Grad...))
		}
		return g
	}
	leanCrit, keptCrit := critGrads(false), critGrads(true)
	for i := range keptCrit {
		same(fmt.Sprintf("critic grad %d", i), leanCrit[i], keptCrit[i])
	}
}

// TestMLPChunks checks that running the MLP's SwiGLU product and backward pass in chunks of
// rows (with a short last chunk) gives the log-probs and gradients of the unchunked pass, up to
// the rounding of sums taken in a different order, with (chunk, I) scratch instead of (N, I).
func TestMLPChunks(t *testing.T) {
	cfg := tinyConfig(true)
	rng := rand.New(rand.NewPCG(51, 52))
	B, T := 3, 20
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{20, 9, 14})
	a, c := lossWeights(rng, mask, B, T)
	run := func(chunk int) (logp []float32, grads [][]float32, scratch int) {
		defer func(old int) { mlpChunk = old }(mlpChunk)
		mlpChunk = chunk
		m := newTestModel(t, cfg, 53)
		ws := &Workspace{Shards: 1} // the scratch of one workspace
		lp, _ := m.Forward(ws, tokens, mask, B, T)
		logp = append([]float32(nil), lp...)
		m.Backward(ws, a, c)
		for _, p := range m.Params {
			grads = append(grads, append([]float32(nil), p.Grad...))
		}
		return logp, grads, len(ws.act) + len(ws.dgate) + len(ws.dup) + len(ws.dact)
	}
	wantLogp, wantGrads, whole := run(1 << 30)
	gotLogp, gotGrads, chunked := run(7) // 60 rows: 8 chunks of 7 and one of 4
	close := func(field string, got, want []float32) {
		if i := closeTo(got, want); i >= 0 {
			t.Errorf("%s[%d]: chunked %v, unchunked %v", field, i, got[i], want[i])
		}
	}
	close("logp", gotLogp, wantLogp)
	for i := range wantGrads {
		close(fmt.Sprintf("grad %d", i), gotGrads[i], wantGrads[i])
	}
	if want := 4 * 7 * cfg.IntermediateSize; chunked != want || whole != 4*B*T*cfg.IntermediateSize {
		t.Errorf("MLP scratch: %d floats chunked (want %d), %d unchunked (want %d)", chunked, want, whole, 4*B*T*cfg.IntermediateSize)
	}
}
