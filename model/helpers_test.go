package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// tinyConfig is a small Qwen2 shape with grouped-query attention (Hq = 4, Hkv = 2, D = 4).
func tinyConfig(tied bool) Config {
	return Config{
		VocabSize: 23, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: tied, MaxPositionEmbeddings: 64, InitializerRange: 0.02,
		EOSTokenIDs: []int{1},
	}
}

// tinyQwen3Config is a small Qwen3 shape: per-head q_norm/k_norm, no q/k/v biases, and a
// head size (D = 6) that is not hidden_size / heads, so that Q = Hq*D = 24 differs from C = 16.
func tinyQwen3Config(tied bool) Config {
	cfg := tinyConfig(tied)
	cfg.ModelType = "qwen3"
	cfg.HeadDim = 6
	return cfg
}

// newTestModel returns a tiny model whose weights are large enough (std 0.3, non-trivial norm
// weights and biases) that every path carries signal for gradient checks.
func newTestModel(t *testing.T, cfg Config, seed uint64) *Model {
	t.Helper()
	cfg.InitializerRange = 0.3
	m, err := New(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, p := range m.Params {
		for i := range p.Data {
			switch {
			case len(p.Shape) == 1 && p.Name[len(p.Name)-len("norm.weight"):] == "norm.weight":
				p.Data[i] = float32(1 + 0.3*rng.NormFloat64())
			case len(p.Shape) == 1:
				p.Data[i] = float32(0.3 * rng.NormFloat64())
			}
		}
	}
	return m
}

// sameWeights fails t, naming what, unless got has the parameters of want (names and shapes, in
// order) with every value equal bit for bit: a checkpoint read back as it was written.
func sameWeights(t *testing.T, what string, got, want *Model) {
	t.Helper()
	if len(got.Params) != len(want.Params) {
		t.Fatalf("%s: %d params loaded, want %d", what, len(got.Params), len(want.Params))
	}
	for i, p := range want.Params {
		q := got.Params[i]
		if q.Name != p.Name || !sameShape(q.Shape, p.Shape) {
			t.Fatalf("%s: param %d: %s %v, want %s %v", what, i, q.Name, q.Shape, p.Name, p.Shape)
		}
		for j := range p.Data {
			if math.Float32bits(p.Data[j]) != math.Float32bits(q.Data[j]) {
				t.Fatalf("%s: %s[%d] = %v, want %v", what, p.Name, j, q.Data[j], p.Data[j])
			}
		}
	}
}

// randomTokens returns n token ids drawn uniformly from [0, V).
func randomTokens(rng *rand.Rand, V, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = rng.IntN(V)
	}
	return s
}

// leftPadded returns a batch (B, T) of random tokens where row b has lens[b] real tokens at the
// end, and its attention mask.
func leftPadded(rng *rand.Rand, V, T int, lens []int) (tokens []int, mask []float32) {
	B := len(lens)
	tokens = make([]int, B*T)
	mask = make([]float32, B*T)
	for b, n := range lens {
		for t := T - n; t < T; t++ {
			tokens[b*T+t] = rng.IntN(V)
			mask[b*T+t] = 1
		}
	}
	return tokens, mask
}

// closeTo reports the first index where got differs from want by more than
// 1e-5*(1+|want|), or -1 if none does.
func closeTo(got, want []float32) int { return closeWithin(got, want, 1) }

// closeToSum is closeTo for entries that are sums over the batch computed in two different
// orders, such as a gradient from one pass against the same gradient from shards: each entry
// may differ by 1e-5*(1+|want|+max|want|). Float32 rounding in a sum is relative to the size
// of its terms, which are of the tensor's scale even where they cancel to a small entry; with
// the 12x32 AVX-512 tile, whose blocked and few-row paths split at 36 rows, the sharded and
// whole-batch gradients of TestShardedPass differ by up to 2.1e-6 of the tensor's largest entry.
func closeToSum(got, want []float32) int {
	var scale float64
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	return closeWithin(got, want, 1+scale)
}

// closeWithin reports the first index where got differs from want by more than
// 1e-5*(base+|want|), or -1 if none does.
func closeWithin(got, want []float32, base float64) int {
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(base+math.Abs(float64(want[i]))) {
			return i
		}
	}
	return -1
}
