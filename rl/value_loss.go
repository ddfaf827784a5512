package rl

import (
	"fmt"
	"math"
)

// ValueLoss is the result of the clipped value loss: the scalar, its gradient with respect to the
// critic's predictions and verl's clip fraction.
type ValueLoss struct {
	Loss       float64 // ½ of the aggregated clipped squared error
	GradVPreds Matrix  // (B, L) dLoss/dvpreds; 0 on masked positions
	ClipFrac   float64 // vf_clipfrac: masked fraction of tokens where the clipped branch won
}

// ClippedValueLoss returns PPO's clipped value loss (as in OpenAI baselines and TRL), per token:
//
//	v̂ = clamp(vpreds, values − c, values + c)
//	ℓ = max((vpreds − R)², (v̂ − R)²),   Loss = ½·AggLoss(ℓ, m, mode, opt)
//	vf_clipfrac = MaskedMean([(v̂ − R)² > (vpreds − R)²])
//
// values are the critic's predictions at rollout time, returns R the targets (GAE's returns).
// The gradient is ½·w·2(vpreds − R) where the unclipped branch wins (inside the band the two
// branches tie and torch's ½/½ split adds back to the same), 0 where the clipped branch wins.
//
// Source: verl core_algos.compute_value_loss (clip via torch_functional.clip_by_value). It
// returns an error for an unknown mode; it panics if the shapes differ.
func ClippedValueLoss(vpreds, returns, values, mask Matrix, clip float64, mode AggMode, opt AggOptions) (ValueLoss, error) {
	sameShape("ClippedValueLoss", vpreds, returns, values, mask)
	loss := NewMatrix(vpreds.B, vpreds.L)  // (B, L) ℓ
	dLoss := NewMatrix(vpreds.B, vpreds.L) // (B, L) dℓ/dvpreds
	clipped := NewMatrix(vpreds.B, vpreds.L)
	for k, vp := range vpreds.Data {
		r, lo, hi := returns.Data[k], values.Data[k]-clip, values.Data[k]+clip
		// clip_by_value = max(min(vp, hi), lo), each with torch's tie-splitting backward.
		inner := math.Min(vp, hi)
		vc := math.Max(inner, lo)
		dVc := maxGrad(inner, lo) * minGrad(vp, hi)
		l1, l2 := (vp-r)*(vp-r), (vc-r)*(vc-r)
		loss.Data[k] = math.Max(l1, l2)
		dLoss.Data[k] = maxGrad(l1, l2)*2*(vp-r) + maxGrad(l2, l1)*2*(vc-r)*dVc
		if l2 > l1 {
			clipped.Data[k] = 1
		}
	}
	agg, w, err := AggLoss(loss, mask, mode, opt)
	if err != nil {
		return ValueLoss{}, fmt.Errorf("rl.ClippedValueLoss: %w", err)
	}
	for k := range w.Data {
		w.Data[k] *= 0.5 * dLoss.Data[k]
	}
	return ValueLoss{Loss: 0.5 * agg, GradVPreds: w, ClipFrac: MaskedMean(clipped, mask)}, nil
}
