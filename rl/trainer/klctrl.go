package trainer

import (
	"math"

	"agentr1/rl"
)

// adaptiveKLErrorClip bounds the proportional error of the adaptive KL controller.
const adaptiveKLErrorClip = 0.2

// AdaptiveKLUpdate returns the KL coefficient after one step of the adaptive controller,
//
//	e = clip(currentKL/target − 1, −0.2, 0.2),   β ← β·(1 + e·nSteps/horizon),
//
// where currentKL is the step's measured KL and nSteps the rows it was measured on. β grows
// while the policy drifts further from the reference than the target and shrinks while it
// stays closer.
//
// Source: verl core_algos.AdaptiveKLController.update (Ziegler et al. 2019, arXiv 1909.08593,
// §2.2), which ray_trainer.apply_kl_penalty calls with n_steps = the batch's rows.
func AdaptiveKLUpdate(beta, currentKL, target float64, nSteps, horizon int) float64 {
	e := math.Max(-adaptiveKLErrorClip, math.Min(adaptiveKLErrorClip, currentKL/target-1))
	return beta * (1 + e*float64(nSteps)/float64(horizon))
}

// klPlacementEstimator returns the estimator of the configured KL placement: KLRewardEstimator
// in the reward, KLEstimator as a loss term (and when the KL is off, for the ref_kl metric).
func (c *RLConfig) klPlacementEstimator() rl.KLEstimator {
	if c.KLMode() == KLInReward {
		return c.KLRewardEstimator
	}
	return c.KLEstimator
}

// stepKL returns the KL the controller reads from a step: the per-token estimates kl (B, L)
// averaged over each row's mask, then over the rows (a row without a masked token counts as
// 0), as verl's apply_kl_penalty measures current_kl.
func stepKL(kl, mask rl.Matrix) float64 {
	rows := rl.MaskedRowMeans(kl, mask)
	sum := 0.0
	for _, r := range rows {
		sum += r
	}
	return sum / float64(max(len(rows), 1))
}
