package rl

import (
	"fmt"
	"math"
)

// PolicyLoss is the result of a policy-gradient loss: the scalar, its gradient with respect to
// the current log-probabilities (the seam to the model's backward pass) and verl's metrics.
type PolicyLoss struct {
	Loss          float64 // the aggregated loss (AggLoss over the masked tokens)
	GradLogProb   Matrix  // (B, L) dLoss/dlogp; 0 on masked positions
	ClipFrac      float64 // pg_clipfrac: masked fraction of tokens where the clipped branch won
	ClipFracLower float64 // pg_clipfrac_lower: masked fraction where the dual clip (A < 0) won
	PPOKL         float64 // ppo_kl: masked mean of old − new log-prob (the k1 estimate of KL)

	// Per token, for inspection (agentr1 explain); empty from GPGLoss, which has no ratio.
	Ratio        Matrix // (B, L) the importance ratio the loss used (ρ, or GSPO's s)
	Clipped      Matrix // (B, L) 1 where the clipped branch won (pg2 > pg1, as pg_clipfrac counts)
	ClippedLower Matrix // (B, L) 1 where the dual clip won (A < 0), as pg_clipfrac_lower counts
}

// PPOClip holds the clipping constants of the PPO policy loss.
type PPOClip struct {
	Low, High float64 // ratio clipped to [1−Low, 1+High] (High > Low is DAPO's clip-higher)
	C         float64 // dual-clip constant c > 1 (Ye et al. 2020, arXiv 1912.09729); verl uses 3
}

// logRatioClamp is the ±20 bound verl puts on logp − old before the exponential.
const logRatioClamp = 20.0

// maxGrad and minGrad are torch.maximum/minimum's backward weights for the first argument:
// 1 where it wins, 0 where it loses, ½ on a tie.
func maxGrad(a, b float64) float64 {
	switch {
	case a > b:
		return 1
	case a == b:
		return 0.5
	}
	return 0
}

func minGrad(a, b float64) float64 { return maxGrad(b, a) }

// inClosed reports lo ≤ x ≤ hi: where torch.clamp passes the gradient through.
func inClosed(x, lo, hi float64) bool { return x >= lo && x <= hi }

// PPOClipLoss returns the PPO clipped-surrogate loss with separate low/high clip ratios and dual
// clip (Schulman et al. 2017, eq. 7; Ye et al. 2020), per token:
//
//	d = clamp(logp − old, −20, 20),  ρ = e^d
//	pg1 = −Aρ,  pg2 = −A·clamp(ρ, 1−Low, 1+High),  c1 = max(pg1, pg2)
//	pg3 = −A·C,  c2 = min(pg3, c1),  ℓ = c2 where A < 0, else c1
//	Loss = AggLoss(ℓ, m, mode, opt)
//
// and the metrics ppo_kl = MaskedMean(−d), pg_clipfrac = MaskedMean([pg2 > pg1]) (strict),
// pg_clipfrac_lower = MaskedMean([c1 > pg3 and A < 0]).
//
// The gradient is torch autograd's: dℓ/dlogp = −Aρ through the unclipped branch (inside the
// band pg1 == pg2 and the tie splits ½/½, both halves −Aρ), 0 when the clip or the dual-clip
// constant wins or |logp − old| > 20; times the AggLoss weight.
//
// Source: verl core_algos.compute_policy_loss_vanilla (== the deprecated compute_policy_loss).
// It returns an error for an unknown mode or C ≤ 1 (verl asserts); it panics if shapes differ.
func PPOClipLoss(logp, oldLogp, adv, mask Matrix, clip PPOClip, mode AggMode, opt AggOptions) (PolicyLoss, error) {
	sameShape("PPOClipLoss", logp, oldLogp, adv, mask)
	if !(clip.C > 1) {
		return PolicyLoss{}, fmt.Errorf("rl.PPOClipLoss: dual-clip constant c = %v, must be > 1", clip.C)
	}
	n := len(logp.Data)
	loss := NewMatrix(logp.B, logp.L)  // (B, L) ℓ
	dLoss := NewMatrix(logp.B, logp.L) // (B, L) dℓ/dlogp
	negKL := NewMatrix(logp.B, logp.L) // (B, L) −d
	ratios := NewMatrix(logp.B, logp.L)
	clipped := NewMatrix(logp.B, logp.L)
	clippedLower := NewMatrix(logp.B, logp.L)
	for k := 0; k < n; k++ {
		a := adv.Data[k]
		raw := logp.Data[k] - oldLogp.Data[k]
		d := math.Max(-logRatioClamp, math.Min(logRatioClamp, raw))
		dd := 0.0 // dd/dlogp
		if inClosed(raw, -logRatioClamp, logRatioClamp) {
			dd = 1
		}
		ratio := math.Exp(d)
		ratios.Data[k] = ratio
		negKL.Data[k] = -d
		lo, hi := 1-clip.Low, 1+clip.High
		pg1 := -a * ratio
		pg2 := -a * math.Max(lo, math.Min(hi, ratio))
		dPg1 := -a * ratio * dd
		dPg2 := 0.0
		if inClosed(ratio, lo, hi) {
			dPg2 = dPg1
		}
		c1 := math.Max(pg1, pg2)
		dC1 := maxGrad(pg1, pg2)*dPg1 + maxGrad(pg2, pg1)*dPg2
		if pg2 > pg1 {
			clipped.Data[k] = 1
		}
		pg3 := -a * clip.C
		if a < 0 {
			loss.Data[k] = math.Min(pg3, c1)
			dLoss.Data[k] = minGrad(c1, pg3) * dC1
			if c1 > pg3 {
				clippedLower.Data[k] = 1
			}
		} else {
			loss.Data[k] = c1
			dLoss.Data[k] = dC1
		}
	}
	pgLoss, w, err := AggLoss(loss, mask, mode, opt)
	if err != nil {
		return PolicyLoss{}, fmt.Errorf("rl.PPOClipLoss: %w", err)
	}
	for k := range w.Data {
		w.Data[k] *= dLoss.Data[k]
	}
	return PolicyLoss{
		Loss:          pgLoss,
		GradLogProb:   w,
		ClipFrac:      MaskedMean(clipped, mask),
		ClipFracLower: MaskedMean(clippedLower, mask),
		PPOKL:         MaskedMean(negKL, mask),
		Ratio:         ratios,
		Clipped:       clipped,
		ClippedLower:  clippedLower,
	}, nil
}

// gspoLogRatioMax is the upper clamp GSPO puts on the token-level log-ratio.
const gspoLogRatioMax = 10.0

// GSPOLoss returns the GSPO sequence-level clipped loss (Zheng et al. 2025, arXiv 2507.18071):
//
//	seq_i = Σ_t (logp − old)·m / max(n_i, 1)                     (mean log-ratio of response i)
//	log s_{i,t} = min(logp − sg(logp) + sg(seq_i), 10),  s = e^{log s}   (value e^{seq_i})
//	ℓ = max(−A·s, −A·clamp(s, 1−low, 1+high)),  Loss = AggLoss(ℓ, m, seq-mean-token-mean, opt)
//
// The aggregation is always seq-mean-token-mean (verl forces it); opt gives its denominator
// (AggOptions.GlobalBatchSize; the zero value takes the rows of mask holding a token). The gradient dℓ/dlogp_t = −A·s
// through the unclipped branch (ties split ½/½ as torch.maximum), 0 when the clip wins or the
// clamp at 10 is active. Metrics: pg_clipfrac = MaskedMean([pg2 > pg1]); pg_clipfrac_lower = 0;
// ppo_kl = MaskedMean(old − logp) (unclamped).
//
// Source: verl core_algos.compute_policy_loss_gspo. It panics if the shapes differ.
func GSPOLoss(logp, oldLogp, adv, mask Matrix, low, high float64, opt AggOptions) PolicyLoss {
	sameShape("GSPOLoss", logp, oldLogp, adv, mask)
	negKL := NewMatrix(logp.B, logp.L) // (B, L) old − logp
	for k := range negKL.Data {
		negKL.Data[k] = oldLogp.Data[k] - logp.Data[k]
	}
	loss := NewMatrix(logp.B, logp.L)  // (B, L) ℓ
	dLoss := NewMatrix(logp.B, logp.L) // (B, L) dℓ/dlogp
	ratios := NewMatrix(logp.B, logp.L)
	clipped := NewMatrix(logp.B, logp.L)
	for i := 0; i < logp.B; i++ {
		lp, old, m := logp.Row(i), oldLogp.Row(i), mask.Row(i)
		sum, n := 0.0, 0.0
		for t := range lp {
			sum += (lp[t] - old[t]) * m[t]
			n += m[t]
		}
		seq := sum / math.Max(n, 1)
		for t := range lp {
			k := i*logp.L + t
			a := adv.Data[k]
			logS := (lp[t] - lp[t]) + seq
			ds := 1.0
			if logS > gspoLogRatioMax {
				logS, ds = gspoLogRatioMax, 0
			}
			s := math.Exp(logS)
			ratios.Data[k] = s
			pg1 := -a * s
			pg2 := -a * math.Max(1-low, math.Min(1+high, s))
			dPg1 := -a * s * ds
			dPg2 := 0.0
			if inClosed(s, 1-low, 1+high) {
				dPg2 = dPg1
			}
			loss.Data[k] = math.Max(pg1, pg2)
			dLoss.Data[k] = maxGrad(pg1, pg2)*dPg1 + maxGrad(pg2, pg1)*dPg2
			if pg2 > pg1 {
				clipped.Data[k] = 1
			}
		}
	}
	pgLoss, w, _ := AggLoss(loss, mask, SeqMeanTokenMean, opt) // a valid mode: no error
	for k := range w.Data {
		w.Data[k] *= dLoss.Data[k]
	}
	return PolicyLoss{
		Loss:         pgLoss,
		GradLogProb:  w,
		ClipFrac:     MaskedMean(clipped, mask),
		PPOKL:        MaskedMean(negKL, mask),
		Ratio:        ratios,
		Clipped:      clipped,
		ClippedLower: NewMatrix(logp.B, logp.L),
	}
}

// GPGLoss returns the Group Policy Gradient loss (Chu et al. 2025, arXiv 2504.02546), a plain
// REINFORCE surrogate without ratio or clip: ℓ = −logp·A, Loss = AggLoss(ℓ, m, mode, opt),
// dLoss/dlogp = −A·w. Its metrics are 0, as in verl.
//
// Source: verl core_algos.compute_policy_loss_gpg. It returns an error for an unknown mode; it
// panics if the shapes differ.
func GPGLoss(logp, adv, mask Matrix, mode AggMode, opt AggOptions) (PolicyLoss, error) {
	sameShape("GPGLoss", logp, adv, mask)
	loss := NewMatrix(logp.B, logp.L) // (B, L)
	for k := range loss.Data {
		loss.Data[k] = -logp.Data[k] * adv.Data[k]
	}
	pgLoss, w, err := AggLoss(loss, mask, mode, opt)
	if err != nil {
		return PolicyLoss{}, fmt.Errorf("rl.GPGLoss: %w", err)
	}
	for k := range w.Data {
		w.Data[k] *= -adv.Data[k]
	}
	return PolicyLoss{Loss: pgLoss, GradLogProb: w}, nil
}

// ApproxKL returns the masked mean of (ρ − 1) − log ρ with log ρ = logp − old: Schulman's
// low-variance, always non-negative estimate of KL(old‖new) (http://joschu.net/blog/kl-approx.html),
// the approx_kl CleanRL's ppo.py logs for early stopping. It panics if the shapes differ.
func ApproxKL(logp, oldLogp, mask Matrix) float64 {
	sameShape("ApproxKL", logp, oldLogp, mask)
	k3 := NewMatrix(logp.B, logp.L) // (B, L)
	for k := range k3.Data {
		lr := logp.Data[k] - oldLogp.Data[k]
		k3.Data[k] = math.Expm1(lr) - lr
	}
	return MaskedMean(k3, mask)
}
