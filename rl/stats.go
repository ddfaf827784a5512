package rl

import (
	"fmt"
	"math"
)

// maskEps is the 1e-8 verl adds to every masked-mean denominator (torch_functional.masked_mean),
// including row means and fully masked rows, and inside the square root of masked_whiten.
const maskEps = 1e-8

// MaskedSum returns Σ_{i,t} x·m over the whole batch, reading x only where m != 0 (so NaN or
// garbage at masked positions is harmless).
//
// Source: verl torch_functional.masked_sum (axis=None). It panics if the shapes differ.
func MaskedSum(x, mask Matrix) float64 {
	sameShape("MaskedSum", x, mask)
	s := 0.0
	for k, m := range mask.Data {
		if m != 0 {
			s += x.Data[k] * m
		}
	}
	return s
}

// MaskedRowSums returns S_i = Σ_t x_{i,t}·m_{i,t}, shape (B). Source: verl
// torch_functional.masked_sum with axis=-1. It panics if the shapes differ.
func MaskedRowSums(x, mask Matrix) []float64 {
	sameShape("MaskedRowSums", x, mask)
	out := make([]float64, x.B) // (B)
	for i := range out {
		xr, mr := x.Row(i), mask.Row(i)
		for t, m := range mr {
			if m != 0 {
				out[i] += xr[t] * m
			}
		}
	}
	return out
}

// maskCount returns N = Σ m.
func maskCount(mask Matrix) float64 {
	n := 0.0
	for _, m := range mask.Data {
		n += m
	}
	return n
}

// rowCounts returns n_i = Σ_t m_{i,t}, shape (B).
func rowCounts(mask Matrix) []float64 {
	out := make([]float64, mask.B) // (B)
	for i := range out {
		for _, m := range mask.Row(i) {
			out[i] += m
		}
	}
	return out
}

// MaskedMean returns Σ x·m / (Σ m + 1e-8) over the whole batch. The 1e-8 is always added, as in
// verl, so a fully masked batch gives 0 rather than NaN.
//
// Source: verl torch_functional.masked_mean (axis=None). It panics if the shapes differ.
func MaskedMean(x, mask Matrix) float64 {
	return MaskedSum(x, mask) / (maskCount(mask) + maskEps)
}

// MaskedMeanBackward returns dL/dx (the mask's shape) given g = dL/d MaskedMean(x, mask):
// g·m / (Σ m + 1e-8) at every position, 0 where the mask is. Not used by the trainer; it gives
// the gradient of verl's masked mean of log-probs for the golden cases (package golden/verl).
func MaskedMeanBackward(mask Matrix, g float64) Matrix {
	out := NewMatrix(mask.B, mask.L)
	den := maskCount(mask) + maskEps
	for k, m := range mask.Data {
		out.Data[k] = g * m / den
	}
	return out
}

// MaskedRowMeans returns the per-row masked means S_i / (n_i + 1e-8), shape (B); a fully masked
// row gives 0. Source: verl torch_functional.masked_mean with axis=-1. It panics if the shapes
// differ.
func MaskedRowMeans(x, mask Matrix) []float64 {
	s := MaskedRowSums(x, mask)
	n := rowCounts(mask)
	for i := range s {
		s[i] /= n[i] + maskEps
	}
	return s
}

// MaskedVar returns the masked variance of x over the whole batch:
//
//	μ = MaskedMean(x, m),  v = MaskedMean((x-μ)², m),  and if unbiased v·N/(N-1)  (N = Σ m).
//
// The Bessel factor carries no epsilon; the means carry verl's 1e-8. With unbiased set it
// returns an error when N is 0 or 1, where verl raises ValueError.
//
// Source: verl torch_functional.masked_var. It panics if the shapes differ.
func MaskedVar(x, mask Matrix, unbiased bool) (float64, error) {
	sameShape("MaskedVar", x, mask)
	mu := MaskedMean(x, mask)
	ss := 0.0
	for k, m := range mask.Data {
		if m != 0 {
			d := x.Data[k] - mu
			ss += d * d * m
		}
	}
	n := maskCount(mask)
	v := ss / (n + maskEps)
	if unbiased {
		if n == 0 {
			return 0, fmt.Errorf("rl.MaskedVar: no valid token in the mask (verl raises here)")
		}
		if n == 1 {
			return 0, fmt.Errorf("rl.MaskedVar: one valid token only, the unbiased variance divides by zero (verl raises here)")
		}
		v *= n / (n - 1)
	}
	return v, nil
}

// MaskedWhiten returns (x − μ)/sqrt(v + 1e-8) at every position, masked ones included (the result
// is not re-masked), where μ is the masked mean and v the unbiased masked variance over the whole
// batch: token-level statistics, so long responses weigh more. With shiftMean false, μ is added
// back. It returns MaskedVar's error when the mask has fewer than two valid tokens.
//
// Source: verl torch_functional.masked_whiten. It panics if the shapes differ.
func MaskedWhiten(x, mask Matrix, shiftMean bool) (Matrix, error) {
	mu := MaskedMean(x, mask)
	v, err := MaskedVar(x, mask, true)
	if err != nil {
		return Matrix{}, fmt.Errorf("whiten: %w", err)
	}
	inv := 1 / math.Sqrt(v+maskEps)
	out := NewMatrix(x.B, x.L)
	for k, xv := range x.Data {
		out.Data[k] = (xv - mu) * inv
		if !shiftMean {
			out.Data[k] += mu
		}
	}
	return out, nil
}

// ExplainedVariance returns 1 − Var(R − V)/(Var(R) + 1e-5) over the valid tokens, with unbiased
// variances (torch.var): how much of the return the critic explains (1 perfect, 0 no better
// than a constant, negative worse). It returns NaN when fewer than two tokens are valid.
//
// Source: verl trainer/ppo/metric_utils.compute_data_metrics ("critic/vf_explained_var"); CleanRL
// ppo.py logs the same figure. It panics if the shapes differ.
func ExplainedVariance(values, returns, mask Matrix) float64 {
	sameShape("ExplainedVariance", values, returns, mask)
	var r, d []float64
	for k, m := range mask.Data {
		if m != 0 {
			r = append(r, returns.Data[k])
			d = append(d, returns.Data[k]-values.Data[k])
		}
	}
	return 1 - sampleVar(d)/(sampleVar(r)+1e-5)
}

// sampleVar is the unbiased variance of xs (NaN for fewer than two values), as torch.var.
func sampleVar(xs []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 2 {
		return math.NaN()
	}
	mu := 0.0
	for _, x := range xs {
		mu += x
	}
	mu /= n
	ss := 0.0
	for _, x := range xs {
		ss += (x - mu) * (x - mu)
	}
	return ss / (n - 1)
}
