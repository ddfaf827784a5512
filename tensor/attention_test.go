package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attentionRef is a direct float64 transcription of causal masked GQA attention in the model
// layout, used to check AttentionForward on shapes larger than the golden cases.
func attentionRef(q, k, v, keyMask []float32, B, T, Hq, Hkv, D int) (out, probs []float64) {
	out, probs = make([]float64, B*T*Hq*D), make([]float64, B*Hq*T*T)
	scale := 1 / math.Sqrt(float64(D))
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kh := h / (Hq / Hkv)
			for i := 0; i < T; i++ {
				if keyMask[b*T+i] == 0 {
					continue
				}
				p := probs[((b*Hq+h)*T+i)*T:][:T]
				m := math.Inf(-1)
				for j := 0; j <= i; j++ {
					if keyMask[b*T+j] == 0 {
						continue
					}
					var s float64
					for e := 0; e < D; e++ {
						s += float64(q[((b*T+i)*Hq+h)*D+e]) * float64(k[((b*T+j)*Hkv+kh)*D+e])
					}
					p[j] = s * scale
					m = math.Max(m, p[j])
				}
				var sum float64
				for j := 0; j <= i; j++ {
					if keyMask[b*T+j] != 0 {
						p[j] = math.Exp(p[j] - m)
						sum += p[j]
					}
				}
				for j := 0; j <= i; j++ {
					p[j] /= sum
					for e := 0; e < D; e++ {
						out[((b*T+i)*Hq+h)*D+e] += p[j] * float64(v[((b*T+j)*Hkv+kh)*D+e])
					}
				}
			}
		}
	}
	return out, probs
}

func TestAttentionForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		name             string
		B, T, Hq, Hkv, D int
		pad              []int // number of left-padding tokens per sequence
		tail             []int // number of right-padding tokens per sequence (nil: none)
	}{
		{"leftpad-gqa", 3, 9, 6, 2, 8, []int{0, 3, 8}, nil},
		{"mha-nopad", 2, 7, 2, 2, 5, []int{0, 0}, nil},
		{"single-token", 1, 1, 2, 1, 4, []int{0}, nil},
		{"all-padding", 1, 3, 2, 2, 2, []int{3}, nil},
		{"several-blocks", 2, 2*attnBlock + 5, 2, 1, 4, []int{0, 70}, nil},
		{"model-head-size", 1, 70, 4, 2, 64, []int{3}, nil},
		{"both-sides-blocks", 3, attnBlock + 20, 4, 2, 8, []int{5, 0, 2}, []int{9, 30, 0}},
	}
	for _, c := range cases {
		B, T, Hq, Hkv, D := c.B, c.T, c.Hq, c.Hkv, c.D
		q, k, v := randSlice(rng, B*T*Hq*D), randSlice(rng, B*T*Hkv*D), randSlice(rng, B*T*Hkv*D)
		mask := make([]float32, B*T)
		for b := range B {
			end := T
			if c.tail != nil {
				end -= c.tail[b]
			}
			for t := c.pad[b]; t < end; t++ {
				mask[b*T+t] = 1
			}
		}
		out, probs := make([]float32, len(q)), make([]float32, B*Hq*T*T)
		for i := range out {
			out[i] = float32(math.NaN()) // must be overwritten
		}
		AttentionForward(out, probs, q, k, v, mask, B, T, Hq, Hkv, D)
		wantOut, wantProbs := attentionRef(q, k, v, mask, B, T, Hq, Hkv, D)
		for i, w := range wantOut {
			if d := math.Abs(float64(out[i]) - w); !(d <= 1e-5+1e-5*math.Abs(w)) {
				t.Fatalf("%s: out[%d] = %v, want %v", c.name, i, out[i], w)
			}
		}
		for i, w := range wantProbs {
			if w == 0 && probs[i] != 0 {
				t.Fatalf("%s: probs[%d] = %v for a masked, future or padded position, want exactly 0", c.name, i, probs[i])
			}
			if d := math.Abs(float64(probs[i]) - w); d > 1e-6 {
				t.Fatalf("%s: probs[%d] = %v, want %v", c.name, i, probs[i], w)
			}
		}
	}
}

// TestAttentionLargeScores checks the max shift: scores near float32's range must not overflow.
func TestAttentionLargeScores(t *testing.T) {
	const T, D = 3, 2
	q := []float32{1e4, 1e4, 1e4, 1e4, -1e4, -1e4} // (1, T, 1, D)
	k := []float32{1e4, 1e4, -1e4, -1e4, 1e4, 1e4} // (1, T, 1, D)
	v := []float32{1, 2, 3, 4, 5, 6}               // (1, T, 1, D)
	out, probs := make([]float32, T*D), make([]float32, T*T)
	AttentionForward(out, probs, q, k, v, []float32{1, 1, 1}, 1, T, 1, 1, D)
	for i, x := range out {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("large scores: out[%d] = %v", i, x)
		}
	}
	if out[2] != 1 || out[3] != 2 { // query 1 attends only to key 0 (score 2e8 vs -2e8)
		t.Errorf("large scores: out row 1 = %v, want [1 2]", out[2:4])
	}
}

// TestAttentionStatsMatchesProbs checks that the forward and backward passes which keep only
// row statistics give bit for bit the outputs and gradients of the passes that keep the
// attention weights, on padded batches spanning several row blocks, on one and two workers,
// and that the statistics mark all-zero rows with (+Inf, 0).
func TestAttentionStatsMatchesProbs(t *testing.T) {
	cases := []struct {
		name             string
		B, T, Hq, Hkv, D int
		pad              []int
		holes            []int // keys masked out after the left padding, by index into the (B, T) mask
	}{
		{"gqa-leftpad", 3, 9, 6, 2, 8, []int{0, 3, 9}, nil},
		{"blocks", 2, 2*attnBlock + 5, 4, 2, 4, []int{7, 0}, nil},
		{"mqa-one-token", 1, 1, 3, 1, 5, []int{0}, nil},
		{"midpad-blocks", 2, attnBlock + 9, 4, 2, 4, []int{2, 0}, []int{5, 6, attnBlock + 1}},
		{"both-sides", 2, attnBlock + 9, 4, 2, 4, []int{2, 0}, []int{attnBlock + 5, attnBlock + 6, attnBlock + 7, attnBlock + 8, 2*(attnBlock+9) - 1}},
	}
	for _, tc := range cases {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("%s/threads=%d", tc.name, threads)
			old := SetWorkers(threads)
			r := rand.New(rand.NewPCG(uint64(tc.T), uint64(tc.Hq)))
			rnd := func(n int) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = 2*r.Float32() - 1
				}
				return x
			}
			B, T, Hq, Hkv, D := tc.B, tc.T, tc.Hq, tc.Hkv, tc.D
			q, k, v, dout := rnd(B*T*Hq*D), rnd(B*T*Hkv*D), rnd(B*T*Hkv*D), rnd(B*T*Hq*D)
			mask := make([]float32, B*T)
			for b := range B {
				for i := tc.pad[b]; i < T; i++ {
					mask[b*T+i] = 1
				}
			}
			for _, j := range tc.holes {
				mask[j] = 0
			}
			probs, stats := make([]float32, B*Hq*T*T), make([]float32, B*Hq*T*2)
			outP, outS := make([]float32, B*T*Hq*D), make([]float32, B*T*Hq*D)
			AttentionForward(outP, probs, q, k, v, mask, B, T, Hq, Hkv, D)
			AttentionForwardStats(outS, stats, q, k, v, mask, B, T, Hq, Hkv, D)
			grads := func() (dq, dk, dv []float32) {
				return make([]float32, B*T*Hq*D), make([]float32, B*T*Hkv*D), make([]float32, B*T*Hkv*D)
			}
			dqP, dkP, dvP := grads()
			dqS, dkS, dvS := grads()
			AttentionBackward(dqP, dkP, dvP, dout, probs, q, k, v, B, T, Hq, Hkv, D)
			AttentionBackwardStats(dqS, dkS, dvS, dout, stats, q, k, v, mask, B, T, Hq, Hkv, D)
			SetWorkers(old)
			for _, c := range []struct {
				field     string
				got, want []float32
			}{{"out", outS, outP}, {"dq", dqS, dqP}, {"dk", dkS, dkP}, {"dv", dvS, dvP}} {
				if i := bitDiff(c.got, c.want); i >= 0 {
					t.Errorf("%s: %s[%d] = %v, want %v bit for bit", name, c.field, i, c.got[i], c.want[i])
				}
			}
			for b := range B {
				for h := range Hq {
					i := (b*Hq+h)*T + tc.pad[b] - 1 // the last padded query of the row, if any
					if tc.pad[b] > 0 && (!math.IsInf(float64(stats[2*i]), 1) || stats[2*i+1] != 0) {
						t.Errorf("%s: stats of padded query (b=%d h=%d) = %v, %v, want +Inf, 0", name, b, h, stats[2*i], stats[2*i+1])
					}
				}
			}
		}
	}
}

// TestKeySpan checks the mask summary the softmax's fast path relies on: the first valid key,
// and whether the valid keys are one run (left padding, right padding or both).
func TestKeySpan(t *testing.T) {
	for _, c := range []struct {
		mask  []float32
		first int
		run   bool
	}{
		{[]float32{1, 1, 1}, 0, true},
		{[]float32{0, 0, 1, 1}, 2, true},
		{[]float32{0, 1, 1, 0, 0}, 1, true},
		{[]float32{1, 1, 0}, 0, true},
		{[]float32{0, 0, 0}, 3, true},
		{[]float32{1, 0, 1}, 0, false},
		{[]float32{0, 1, 1, 0, 1, 0}, 1, false},
	} {
		first, run := keySpan(c.mask)
		if first != c.first || run != c.run {
			t.Errorf("keySpan(%v) = %d, %v; want %d, %v", c.mask, first, run, c.first, c.run)
		}
	}
}
