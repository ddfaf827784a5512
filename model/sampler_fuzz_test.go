package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzSampler feeds the sampler logits of any float32 bits (NaN, ±Inf, subnormals, ±3.4e38)
// with any temperature, top-p, top-k and greedy setting. Whatever they are, Sample must not
// panic and must return a token in range; when some logit is a number above -Inf, the token
// must be one the rule can choose (not -Inf or NaN unless every logit is) with a log-prob that
// is not NaN and not above 0.
func FuzzSampler(f *testing.F) {
	add := func(temp, topP float64, topK int, greedy bool, logits ...float32) {
		b := make([]byte, 4*len(logits))
		for i, l := range logits {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(l))
		}
		f.Add(b, temp, topP, topK, greedy, uint64(1))
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	add(1, 0, 0, false, 1, 2, 3)
	add(1, 0, 0, false, nan, nan, nan)
	add(1, 0.9, 0, false, -inf, -inf)
	add(0.7, 0.95, 2, false, inf, 1, inf, nan)
	add(0.5, 0, 0, false, 3e38, -3e38, 1)
	add(1e-30, 0.5, 1, false, 1, 1, 1)
	add(math.Inf(1), 0, 0, false, -inf, 0, 5)
	add(math.NaN(), math.NaN(), -1, false, 1, 2)
	add(1, 0, 0, true, nan, 2, inf, inf)
	f.Fuzz(func(t *testing.T, raw []byte, temp, topP float64, topK int, greedy bool, seed uint64) {
		V := len(raw) / 4
		if V == 0 || V > 4096 {
			return
		}
		logits := make([]float32, V)
		someNumber := false
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			someNumber = someNumber || (logits[i] == logits[i] && !math.IsInf(float64(logits[i]), -1))
		}
		s := Sampler{Temperature: temp, TopP: topP, TopK: topK, Greedy: greedy}
		tok, lp := s.Sample(logits, rand.New(rand.NewPCG(seed, 0)))
		if tok < 0 || tok >= V {
			t.Fatalf("token %d out of [0, %d)", tok, V)
		}
		if !someNumber {
			if tok != 0 || lp == lp {
				t.Fatalf("no distribution: token %d log-prob %v, want 0 and NaN", tok, lp)
			}
			return
		}
		if l := logits[tok]; l != l || math.IsInf(float64(l), -1) {
			t.Fatalf("token %d has logit %v although some logit is a number above -Inf", tok, l)
		}
		if lp != lp || lp > 0 {
			t.Fatalf("token %d: log-prob %v, want a number <= 0", tok, lp)
		}
	})
}
