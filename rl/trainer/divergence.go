package trainer

import (
	"fmt"
	"math"
)

// Divergence watches one series of a run (the SFT loss, the RL update's KL) for an explosion
// short of NaN. The rule: a value is divergent when it is above Bound (when Bound > 0), or,
// after Warmup values, above Factor times the exponential moving average (weight Alpha) of the
// earlier values that were not divergent, and above Floor. Divergent values stay out of the
// average, so a run that has blown up keeps being flagged instead of the average catching up.
// Its state (N, EMA) is saved with a checkpoint, so a resumed run flags what the uninterrupted
// one would.
type Divergence struct {
	Name   string  `json:"name"`   // the series, for messages ("loss", "approx_kl")
	Factor float64 `json:"factor"` // how far above its running level a value explodes
	Alpha  float64 `json:"alpha"`  // weight of a new value in the moving average
	Warmup int     `json:"warmup"` // values averaged before the ratio rule applies
	Floor  float64 `json:"floor"`  // values at or below it are never divergent by the ratio (noise near 0)
	Bound  float64 `json:"bound"`  // values above it are always divergent (0: no bound)
	N      int     `json:"n"`      // values averaged so far
	EMA    float64 `json:"ema"`    // their moving average (their mean during the warm-up)
}

// SFTLossDivergence is the watch on the SFT loss of a vocabulary of v tokens: 10x its moving
// average (α = 0.1) after 10 steps, or above 2 ln v, twice the loss of a uniform guess, at any
// step.
func SFTLossDivergence(v int) Divergence {
	return Divergence{Name: "loss", Factor: 10, Alpha: 0.1, Warmup: 10, Bound: 2 * math.Log(float64(max(v, 2)))}
}

// RLKLDivergence is the watch on an RL update's approx_kl (KL of the updated policy from the
// one that sampled): above 1 nat at any step, fifty times PPO's usual trust region (a clip of
// 0.2 holds it near 0.02), or 10x its moving average (α = 0.1) after 5 steps when above 0.05.
func RLKLDivergence() Divergence {
	return Divergence{Name: "approx_kl", Factor: 10, Alpha: 0.1, Warmup: 5, Floor: 0.05, Bound: 1}
}

// Observe adds x to the series and returns why it is divergent, or "" when it is not. A value
// that is not finite is left to the numeric guards and returns "".
func (d *Divergence) Observe(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	if d.Bound > 0 && x > d.Bound {
		return fmt.Sprintf("%s %.4g above its bound %.4g", d.Name, x, d.Bound)
	}
	if d.N >= d.Warmup && x > d.Floor && x > d.Factor*d.EMA {
		return fmt.Sprintf("%s %.4g above %g x its running level %.4g", d.Name, x, d.Factor, d.EMA)
	}
	d.N++
	if d.N <= d.Warmup {
		d.EMA += (x - d.EMA) / float64(d.N) // the mean of the warm-up values
	} else {
		d.EMA += d.Alpha * (x - d.EMA)
	}
	return ""
}
