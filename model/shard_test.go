package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"agentr1/tensor"
)

// TestShardedPass checks data parallelism over rows (shard.go): cut into 2 or 3 shards (even and
// uneven, tied and untied lm_head, temperature), Forward gives the log-probs and entropies of
// the whole-batch pass and Backward its gradients, up to float32 rounding (closeToSum: each
// gradient is a sum over every row, split in a different order), accumulating over
// repeated calls; the shards' own gradient buffers are left zero, and the
// critic's values and gradients agree in the same way. With oneByOne (a model above
// shardGradLimit) Backward runs the shards one after another into Param.Grad and the shards
// hold no gradient buffer.
func TestShardedPass(t *testing.T) {
	for _, tc := range []struct {
		shards   int
		tied     bool
		temp     float32
		lens     []int
		qwen3    bool
		oneByOne bool
	}{
		{2, true, 0, []int{20, 7, 13, 20}, false, false},
		{2, false, 0.7, []int{20, 7, 13}, false, false}, // rows 1 and 2 in one shard
		{3, true, 1.3, []int{9, 20, 20, 4, 11}, false, false},
		{2, false, 0, []int{20, 7, 13}, true, false},
		{3, true, 1.3, []int{9, 20, 20, 4, 11}, false, true},
		{2, false, 0, []int{20, 7, 13}, true, true},
	} {
		t.Run(fmt.Sprintf("shards=%d/tied=%v/B=%d/qwen3=%v/oneByOne=%v", tc.shards, tc.tied, len(tc.lens), tc.qwen3, tc.oneByOne), func(t *testing.T) {
			if tc.oneByOne {
				defer func(limit int) { shardGradLimit = limit }(shardGradLimit)
				shardGradLimit = 0
			}
			cfg := tinyConfig(tc.tied)
			if tc.qwen3 {
				cfg = tinyQwen3Config(tc.tied)
			}
			rng := rand.New(rand.NewPCG(31, uint64(tc.shards)))
			B, T := len(tc.lens), 20
			tokens, mask := leftPadded(rng, cfg.VocabSize, T, tc.lens)
			a, c := lossWeights(rng, mask, B, T)
			type result struct {
				logp, entropy, values []float32
				grads, critGrads      [][]float32
			}
			run := func(shards int) (r result) {
				m := newTestModel(t, cfg, 33)
				ws := &Workspace{Shards: shards, Temperature: tc.temp}
				logp, ent := m.Forward(ws, tokens, mask, B, T)
				if ws.sharded != (shards > 1) {
					t.Fatalf("Shards %d: sharded = %v", shards, ws.sharded)
				}
				r.logp, r.entropy = append([]float32(nil), logp...), append([]float32(nil), ent...)
				m.Backward(ws, a, c)
				m.Backward(ws, a, c) // gradients add up
				for _, p := range m.Params {
					r.grads = append(r.grads, append([]float32(nil), p.Grad...))
				}
				for s, sh := range ws.shards {
					if tc.oneByOne && sh.grad != nil {
						t.Fatalf("shard %d holds a gradient buffer of %d floats above shardGradLimit", s, len(sh.grad))
					}
					for i, g := range sh.grad {
						if g != 0 {
							t.Fatalf("shard %d's gradient buffer holds %v at %d after Backward", s, g, i)
						}
					}
				}
				crit := NewCritic(m, 5)
				cws := &Workspace{Shards: shards}
				r.values = append([]float32(nil), crit.Forward(cws, tokens, mask, B, T)...)
				crit.Backward(cws, a)
				for _, p := range crit.Params {
					r.critGrads = append(r.critGrads, append([]float32(nil), p.Grad...))
				}
				return r
			}
			whole, split := run(1), run(tc.shards)
			near := func(field string, got, want []float32, close func(got, want []float32) int) {
				if i := close(got, want); i >= 0 {
					t.Fatalf("%s[%d]: sharded %v, whole batch %v", field, i, got[i], want[i])
				}
				if !slices.ContainsFunc(want, func(x float32) bool { return x != 0 }) {
					t.Fatalf("%s: all zero", field)
				}
			}
			near("logp", split.logp, whole.logp, closeTo)
			near("entropy", split.entropy, whole.entropy, closeTo)
			near("values", split.values, whole.values, closeTo)
			for i := range whole.grads { // sums over every row: closeToSum
				near(fmt.Sprintf("grad %d", i), split.grads[i], whole.grads[i], closeToSum)
			}
			for i := range whole.critGrads {
				near(fmt.Sprintf("critic grad %d", i), split.critGrads[i], whole.critGrads[i], closeToSum)
			}
		})
	}
}

// TestShardedWorkspaceReuse checks that a workspace alternating between split and whole passes
// (a batch of one row is never split) and between the policy and its critic keeps each pass's
// results apart: a Backward after a one-row Forward uses that row, not the shards.
func TestShardedWorkspaceReuse(t *testing.T) {
	cfg := tinyConfig(true)
	rng := rand.New(rand.NewPCG(41, 42))
	T := 12
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{12, 5, 9})
	a, c := lossWeights(rng, mask, 3, T)
	m := newTestModel(t, cfg, 43)
	ws := &Workspace{Shards: 2}
	m.Forward(ws, tokens, mask, 3, T)
	m.Backward(ws, a, c)
	one, _ := m.Forward(ws, tokens[:T], mask[:T], 1, T)
	if ws.sharded {
		t.Fatal("a one-row batch was split")
	}
	got := append([]float32(nil), one...)
	m.ZeroGrad()
	m.Backward(ws, a[:T], c[:T])
	gotGrad := append([]float32(nil), m.Params[1].Grad...)

	fresh := &Workspace{Shards: 1}
	want, _ := m.Forward(fresh, tokens[:T], mask[:T], 1, T)
	m.ZeroGrad()
	m.Backward(fresh, a[:T], c[:T])
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logp[%d] = %v after a split pass, %v fresh", i, got[i], want[i])
		}
	}
	for i, g := range m.Params[1].Grad {
		if g != gotGrad[i] {
			t.Fatalf("grad[%d] = %v after a split pass, %v fresh", i, gotGrad[i], g)
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("a critic's Backward on a workspace holding the policy's split pass did not panic")
		}
	}()
	m.Forward(ws, tokens, mask, 3, T)
	NewCritic(m, 1).Backward(ws, a)
}

// TestWorkersSameBits checks that a whole-batch Forward and Backward give the same bits on two
// workers as on one. Inside Shards a kernel may get a second core when the other shard has
// finished (tensor.Available), at a moment that varies from run to run, so a training run is
// reproducible only if no kernel's result depends on how many workers split it. The shape is
// the default policy's at the length of a long demonstration: attention's last block of 13
// query rows against 717 keys is a few-row product whose columns two workers split.
func TestWorkersSameBits(t *testing.T) {
	cfg := Config{VocabSize: 768, HiddenSize: 128, IntermediateSize: 384, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 1024, InitializerRange: 0.02}
	const B, T = 2, 717
	rng := rand.New(rand.NewPCG(51, 52))
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{T, 370})
	dlogp, dentropy := make([]float32, B*T), make([]float32, B*T) // (B, T)
	for i := range dlogp {
		dlogp[i], dentropy[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	m, err := New(cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	run := func(workers int) (logp []float32, grads [][]float32) {
		defer tensor.SetWorkers(tensor.SetWorkers(workers))
		m.ZeroGrad()
		ws := NewWorkspace()
		ws.Shards = 1
		lp, _ := m.Forward(ws, tokens, mask, B, T)
		logp = slices.Clone(lp)
		m.Backward(ws, dlogp, dentropy)
		for _, g := range m.ParamGrads() {
			grads = append(grads, slices.Clone(g))
		}
		return logp, grads
	}
	lp1, g1 := run(1)
	lp2, g2 := run(2)
	if i := bitsDiffer(lp2, lp1); i >= 0 {
		t.Fatalf("logp[%d] = %v on two workers, %v on one", i, lp2[i], lp1[i])
	}
	for k := range g1 {
		if i := bitsDiffer(g2[k], g1[k]); i >= 0 {
			t.Fatalf("gradient of %s [%d] = %v on two workers, %v on one", m.Params[k].Name, i, g2[k][i], g1[k][i])
		}
	}
}

// bitsDiffer returns the first index where got and want differ in their bits, or -1.
func bitsDiffer(got, want []float32) int {
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

// TestShardsNotWorkersDecideTheBits checks that the shard count, not the number of workers,
// decides a pass's bits: with the package's count (SetShards) a Forward and Backward of five
// rows (two shards of 2 and 3 rows), and a Decoder.Step of 13 rows (enough to be cut), give the
// same bits on one, two and three workers. Were the count to follow the workers, one worker
// would not cut the batch and its gradients, a sum over the rows taken whole, would round
// differently: a run on a machine with other cores would be another run.
func TestShardsNotWorkersDecideTheBits(t *testing.T) {
	if got := SetShards(0); got != DefaultShards {
		t.Fatalf("the package's shard count was %d, want DefaultShards %d", got, DefaultShards)
	}
	if got := SetShards(DefaultShards); got != 1 {
		t.Fatalf("SetShards(0) set %d shards, want 1", got)
	}
	cfg := Config{VocabSize: 768, HiddenSize: 128, IntermediateSize: 384, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 256, InitializerRange: 0.02}
	const B, T, decodeRows = 5, 96, 13
	rng := rand.New(rand.NewPCG(61, 62))
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{T, 40, 77, T, 12})
	dlogp, dentropy := make([]float32, B*T), make([]float32, B*T) // (B, T)
	for i := range dlogp {
		dlogp[i], dentropy[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	prompts := make([][]int, decodeRows)
	for r := range prompts {
		prompts[r] = tokens[(r%B)*T+T-8 : (r%B)*T+T] // each row's last 8 tokens
	}
	m, err := New(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		logp   []float32
		grads  [][]float32
		logits [][]float32 // (decodeRows, V) after the third Step
	}
	run := func(workers int) (r result) {
		defer tensor.SetWorkers(tensor.SetWorkers(workers))
		m.ZeroGrad()
		ws := NewWorkspace()
		lp, _ := m.Forward(ws, tokens, mask, B, T)
		if !ws.sharded {
			t.Fatalf("%d workers: a batch of %d rows was not cut into shards", workers, B)
		}
		r.logp = slices.Clone(lp)
		m.Backward(ws, dlogp, dentropy)
		for _, g := range m.ParamGrads() {
			r.grads = append(r.grads, slices.Clone(g))
		}
		d := m.NewDecoder(decodeRows, 16)
		rows := make([]int, decodeRows)
		for i := range rows {
			rows[i] = i
		}
		d.AppendRows(rows, prompts)
		var out [][]float32
		for step := range 3 {
			next := make([]int, decodeRows)
			for i := range next {
				next[i] = (7*i + 3*step) % cfg.VocabSize
			}
			out = d.Step(rows, next)
		}
		for _, l := range out {
			r.logits = append(r.logits, slices.Clone(l))
		}
		return r
	}
	want := run(1)
	for _, workers := range []int{2, 3} {
		got := run(workers)
		if i := bitsDiffer(got.logp, want.logp); i >= 0 {
			t.Fatalf("logp[%d] = %v on %d workers, %v on one", i, got.logp[i], workers, want.logp[i])
		}
		for k := range want.grads {
			if i := bitsDiffer(got.grads[k], want.grads[k]); i >= 0 {
				t.Fatalf("gradient of %s [%d] = %v on %d workers, %v on one", m.Params[k].Name, i, got.grads[k][i], workers, want.grads[k][i])
			}
		}
		for row := range want.logits {
			if i := bitsDiffer(got.logits[row], want.logits[row]); i >= 0 {
				t.Fatalf("Step logits of row %d [%d] = %v on %d workers, %v on one", row, i, got.logits[row][i], workers, want.logits[row][i])
			}
		}
	}
}
