package rl

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fdCheck compares an analytic gradient with central finite differences of f over x.
func fdCheck(t *testing.T, name string, x []float64, grad []float64, f func() float64) {
	t.Helper()
	const h = 1e-6
	for k := range x {
		old := x[k]
		x[k] = old + h
		up := f()
		x[k] = old - h
		down := f()
		x[k] = old
		fd := (up - down) / (2 * h)
		if math.Abs(fd-grad[k]) > 1e-6*(1+math.Abs(fd)) {
			t.Errorf("%s: d/dx[%d]: analytic %v, finite difference %v", name, k, grad[k], fd)
		}
	}
}

var aggCases = []struct {
	mode AggMode
	opt  AggOptions
}{
	{TokenMean, AggOptions{}},
	{SeqMeanTokenSum, AggOptions{}},
	{SeqMeanTokenMean, AggOptions{}},
	{SeqMeanTokenSumNorm, AggOptions{}},
	{TokenMean, AggOptions{DPSize: 2, BatchNumTokens: 50}},
	{SeqMeanTokenSum, AggOptions{DPSize: 2, GlobalBatchSize: 16}},
	{SeqMeanTokenMean, AggOptions{DPSize: 2, GlobalBatchSize: 16}},
	{SeqMeanTokenSumNorm, AggOptions{DPSize: 2, LossScaleFactor: 4096}},
}

func TestLossGradientsFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	b, l := 4, 6
	m := agentMask(rng, b, l)
	for k := l; k < 2*l; k++ { // an empty row exercises the seq-mean exclusion
		m.Data[k] = 0
	}
	for _, ac := range aggCases {
		name := string(ac.mode)
		x := randMatrix(rng, b, l)
		_, w, err := AggLoss(x, m, ac.mode, ac.opt)
		if err != nil {
			t.Fatal(err)
		}
		fdCheck(t, "agg/"+name, x.Data, w.Data, func() float64 { v, _, _ := AggLoss(x, m, ac.mode, ac.opt); return v })

		logp, old, adv := randMatrix(rng, b, l), randMatrix(rng, b, l), randMatrix(rng, b, l)
		for k := range logp.Data { // ratios on both sides of the band and inside it
			logp.Data[k] = old.Data[k] + 0.4*rng.NormFloat64()
		}
		clip := PPOClip{Low: 0.2, High: 0.28, C: 3}
		p, err := PPOClipLoss(logp, old, adv, m, clip, ac.mode, ac.opt)
		if err != nil {
			t.Fatal(err)
		}
		fdCheck(t, "ppo/"+name, logp.Data, p.GradLogProb.Data, func() float64 {
			v, _ := PPOClipLoss(logp, old, adv, m, clip, ac.mode, ac.opt)
			return v.Loss
		})

		g, err := GPGLoss(logp, adv, m, ac.mode, ac.opt)
		if err != nil {
			t.Fatal(err)
		}
		fdCheck(t, "gpg/"+name, logp.Data, g.GradLogProb.Data, func() float64 {
			v, _ := GPGLoss(logp, adv, m, ac.mode, ac.opt)
			return v.Loss
		})

		vp, ret, val := randMatrix(rng, b, l), randMatrix(rng, b, l), randMatrix(rng, b, l)
		vl, err := ClippedValueLoss(vp, ret, val, m, 0.5, ac.mode, ac.opt)
		if err != nil {
			t.Fatal(err)
		}
		fdCheck(t, "value/"+name, vp.Data, vl.GradVPreds.Data, func() float64 {
			v, _ := ClippedValueLoss(vp, ret, val, m, 0.5, ac.mode, ac.opt)
			return v.Loss
		})

		ref := randMatrix(rng, b, l)
		for _, e := range []KLEstimator{KLK1, KLAbs, KLK2, KLK3} {
			_, dkl, err := KLLoss(logp, ref, m, e, ac.mode, ac.opt)
			if err != nil {
				t.Fatal(err)
			}
			fdCheck(t, "kl-"+e.String()+"/"+name, logp.Data, dkl.Data, func() float64 {
				v, _, _ := KLLoss(logp, ref, m, e, ac.mode, ac.opt)
				return v
			})
		}

		z := Logits{B: b, L: l, V: 5, Data: randMatrix(rng, b*l, 5).Data}
		_, dz, err := EntropyLoss(z, m, ac.mode, ac.opt)
		if err != nil {
			t.Fatal(err)
		}
		fdCheck(t, "entropy/"+name, z.Data, dz, func() float64 { v, _, _ := EntropyLoss(z, m, ac.mode, ac.opt); return v })
	}
}

func TestLogProbsBackwardFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	b, l, v := 2, 3, 4
	z := Logits{B: b, L: l, V: v, Data: randMatrix(rng, b*l, v).Data}
	labels := []int{0, 3, 1, 2, 2, 0}
	up := randMatrix(rng, b, l)
	d := make([]float64, len(z.Data))
	LogProbsFromLogitsBackward(d, z, labels, up)
	fdCheck(t, "logprobs", z.Data, d, func() float64 {
		lp := LogProbsFromLogits(z, labels)
		s := 0.0
		for k := range lp.Data {
			s += lp.Data[k] * up.Data[k]
		}
		return s
	})
}

// TestPPOClipGradientRegions pins the autograd rule per region of the clipped objective.
func TestPPOClipGradientRegions(t *testing.T) {
	clip := PPOClip{Low: 0.2, High: 0.2, C: 3}
	for _, tc := range []struct {
		name           string
		logRatio, adv  float64
		wantGrad       float64 // dℓ/dlogp before the agg weight (one token, token-mean weight 1)
		clipped, lower bool
	}{
		{"inside band", 0.1, 1, -math.Exp(0.1), false, false},
		{"above band, A>0: clipped", 0.5, 1, 0, true, false},
		{"above band, A<0: unclipped", 0.5, -1, math.Exp(0.5), false, false},
		{"below band, A<0: clipped", -0.5, -1, 0, true, false},
		{"far above, A<0: dual clip", 2, -1, 0, false, true},
		{"log-ratio beyond 20", 25, -1e-12, 0, false, true},
	} {
		one := func(x float64) Matrix { return MatrixOf(1, 1, []float64{x}) }
		p, err := PPOClipLoss(one(tc.logRatio), one(0), one(tc.adv), one(1), clip, TokenMean, AggOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.GradLogProb.Data[0]-tc.wantGrad) > 1e-15 {
			t.Errorf("%s: grad %v, want %v", tc.name, p.GradLogProb.Data[0], tc.wantGrad)
		}
		if got := p.ClipFrac > 0.5; got != tc.clipped {
			t.Errorf("%s: clipfrac %v, want clipped = %v", tc.name, p.ClipFrac, tc.clipped)
		}
		if got := p.ClipFracLower > 0.5; got != tc.lower {
			t.Errorf("%s: clipfrac_lower %v, want %v", tc.name, p.ClipFracLower, tc.lower)
		}
		// The per-token record says the same: the ratio e^clamp(d, ±20) and both flags.
		wantRatio := math.Exp(math.Min(tc.logRatio, 20))
		if p.Ratio.Data[0] != wantRatio || (p.Clipped.Data[0] == 1) != tc.clipped || (p.ClippedLower.Data[0] == 1) != tc.lower {
			t.Errorf("%s: per token ratio %v clipped %v lower %v, want %v %v %v", tc.name,
				p.Ratio.Data[0], p.Clipped.Data[0], p.ClippedLower.Data[0], wantRatio, tc.clipped, tc.lower)
		}
	}
	if _, err := PPOClipLoss(MatrixOf(1, 1, []float64{0}), MatrixOf(1, 1, []float64{0}), MatrixOf(1, 1, []float64{1}), MatrixOf(1, 1, []float64{1}), PPOClip{0.2, 0.2, 1}, TokenMean, AggOptions{}); err == nil {
		t.Error("dual-clip constant 1 accepted")
	}
}

func TestKLClampsZeroTheGradient(t *testing.T) {
	for _, tc := range []struct {
		name     string
		logp     float64
		wantKL   float64
		zeroGrad bool
	}{
		{"inside", -0.3, math.Exp(0.3) - 0.3 - 1, false},
		{"value clamp at 10", -5, 10, true}, // e^5 − 6 > 10
		{"both clamps", -25, 10, true},      // k clamped to 20, then e^20 − 21 to 10
	} {
		kl, d := KLPenalty(MatrixOf(1, 1, []float64{tc.logp}), MatrixOf(1, 1, []float64{0}), KLK3)
		if math.Abs(kl.Data[0]-tc.wantKL) > 1e-12 {
			t.Errorf("%s: k3 = %v, want %v", tc.name, kl.Data[0], tc.wantKL)
		}
		if (d.Data[0] == 0) != tc.zeroGrad {
			t.Errorf("%s: grad %v, want zero = %v", tc.name, d.Data[0], tc.zeroGrad)
		}
	}
	for _, name := range []string{"full", "k3+", "low_var_kl+", "bogus"} {
		if _, err := ParseKLEstimator(name); err == nil {
			t.Errorf("ParseKLEstimator(%q) accepted", name)
		}
	}
	for name, want := range map[string]KLEstimator{"kl": KLK1, "k1": KLK1, "abs": KLAbs, "mse": KLK2, "k2": KLK2, "low_var_kl": KLK3, "k3": KLK3} {
		if got, err := ParseKLEstimator(name); err != nil || got != want {
			t.Errorf("ParseKLEstimator(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
}

func TestAggLossRejectsUnknownMode(t *testing.T) {
	x := MatrixOf(1, 2, []float64{1, 2})
	if _, _, err := AggLoss(x, x, AggMode("token-sum"), AggOptions{}); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := ParseAggMode("seq-mean-token-mean"); err != nil {
		t.Error(err)
	}
}

func TestMetrics(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	b, l := 3, 7
	m := agentMask(rng, b, l)
	ret := randMatrix(rng, b, l)
	if ev := ExplainedVariance(ret, ret, m); math.Abs(ev-1) > 1e-12 {
		t.Errorf("explained variance of a perfect critic = %v, want 1", ev)
	}
	mean := MaskedMean(ret, m)
	flat := NewMatrix(b, l)
	for k := range flat.Data {
		flat.Data[k] = mean
	}
	if ev := ExplainedVariance(flat, ret, m); math.Abs(ev) > 1e-4 {
		t.Errorf("explained variance of a constant critic = %v, want ≈ 0", ev)
	}
	logp, old := randMatrix(rng, b, l), randMatrix(rng, b, l)
	if kl := ApproxKL(old, old, m); kl != 0 {
		t.Errorf("approx KL of identical policies = %v", kl)
	}
	if kl := ApproxKL(logp, old, m); !(kl > 0) {
		t.Errorf("approx KL = %v, want > 0", kl)
	}
}

func TestGSPOGradientIsStraightThrough(t *testing.T) {
	// Inside the clip band every token's gradient is −A·s·w with s the sequence ratio.
	logp := MatrixOf(1, 3, []float64{-1, -2, -3})
	old := MatrixOf(1, 3, []float64{-1.0001, -2, -2.9999}) // mean log-ratio 0: s = 1
	adv := MatrixOf(1, 3, []float64{1, -2, 0.5})
	m := MatrixOf(1, 3, []float64{1, 1, 1})
	p := GSPOLoss(logp, old, adv, m, 3e-4, 4e-4, AggOptions{})
	for k, a := range adv.Data {
		want := -a / (3 + 1e-8) // seq-mean-token-mean carries 1e-8 per row
		if math.Abs(p.GradLogProb.Data[k]-want) > 1e-12 {
			t.Errorf("token %d: grad %v, want %v", k, p.GradLogProb.Data[k], want)
		}
	}
	if p.ClipFrac != 0 || p.ClipFracLower != 0 {
		t.Errorf("clip fractions %v, %v inside the band", p.ClipFrac, p.ClipFracLower)
	}
}
