package rl

import "fmt"

// AggMode is how a per-token loss matrix is reduced to a scalar (verl's loss_agg_mode).
type AggMode string

// The four aggregation modes of verl's agg_loss.
const (
	// TokenMean: Σ x·m / T · dp_size, T = batch_num_tokens (default Σ m). No epsilon.
	TokenMean AggMode = "token-mean"
	// SeqMeanTokenSum: Σ_i (Σ_t x·m)·e_i / G · dp_size, e_i = 1 if row i has a valid token,
	// G = global_batch_size (default Σ e_i: fully masked rows are excluded).
	SeqMeanTokenSum AggMode = "seq-mean-token-sum"
	// SeqMeanTokenMean: as SeqMeanTokenSum with each row's sum divided by (n_i + 1e-8).
	SeqMeanTokenMean AggMode = "seq-mean-token-mean"
	// SeqMeanTokenSumNorm: Σ_{i,t} x·m / F, F = loss_scale_factor (default L, the padded width).
	// It divides by neither B nor the number of sequences and ignores dp_size (Dr.GRPO's
	// constant normaliser).
	SeqMeanTokenSumNorm AggMode = "seq-mean-token-sum-norm"
)

// ParseAggMode returns the mode named s, or an error naming the four valid ones.
func ParseAggMode(s string) (AggMode, error) {
	switch m := AggMode(s); m {
	case TokenMean, SeqMeanTokenSum, SeqMeanTokenMean, SeqMeanTokenSumNorm:
		return m, nil
	}
	return "", fmt.Errorf("rl: invalid loss_agg_mode %q (want %s, %s, %s or %s)", s, TokenMean, SeqMeanTokenSum, SeqMeanTokenMean, SeqMeanTokenSumNorm)
}

// AggOptions are verl agg_loss's arguments for data-parallel and gradient-accumulation
// invariance. The zero value means verl's defaults (dp_size 1, the others computed from this
// micro-batch's mask), which makes the loss a plain mean over this batch.
type AggOptions struct {
	DPSize          int     // data-parallel world size; 0 means 1
	BatchNumTokens  float64 // token-mean denominator over the global batch; 0 means Σ m
	GlobalBatchSize float64 // seq-mean denominator over the global batch; 0 means Σ_i e_i
	LossScaleFactor float64 // seq-mean-token-sum-norm denominator; 0 means L
}

// AggLoss reduces the per-token loss x (B, L) under mask to verl's scalar and returns it with its
// gradient dloss/dx (B, L), which does not depend on x (every mode is linear in x):
//
//	token-mean               w = m / T · dp
//	seq-mean-token-sum       w = m·e_i / G · dp
//	seq-mean-token-mean      w = m / (n_i + 1e-8) · e_i / G · dp
//	seq-mean-token-sum-norm  w = m / F
//
// with T, G, F, e_i as in the AggMode constants; the gradient is 0 on masked positions.
// token-mean over an all-masked batch divides by zero (NaN), as verl does.
//
// Source: verl core_algos.agg_loss (with dp_size, batch_num_tokens, global_batch_size,
// loss_scale_factor). It returns an error for an unknown mode; it panics if the shapes differ.
func AggLoss(x, mask Matrix, mode AggMode, opt AggOptions) (loss float64, grad Matrix, err error) {
	sameShape("AggLoss", x, mask)
	dp := float64(max(opt.DPSize, 1))
	grad = NewMatrix(x.B, x.L)
	counts := rowCounts(mask) // (B) n_i
	switch mode {
	case TokenMean:
		tokens := opt.BatchNumTokens
		if tokens == 0 {
			tokens = maskCount(mask)
		}
		loss = MaskedSum(x, mask) / tokens * dp
		for k, m := range mask.Data {
			grad.Data[k] = m / tokens * dp
		}
	case SeqMeanTokenSum, SeqMeanTokenMean:
		rowLoss := MaskedRowSums(x, mask) // (B)
		rowScale := make([]float64, x.B)  // (B) d(row loss)/d(row token sum)
		seqs := 0.0
		for i, n := range counts {
			rowScale[i] = 1
			if mode == SeqMeanTokenMean {
				rowScale[i] = 1 / (n + maskEps)
				rowLoss[i] /= n + maskEps
			}
			if n > 0 {
				seqs++
			} else {
				rowScale[i] = 0
			}
		}
		g := opt.GlobalBatchSize
		if g == 0 {
			g = seqs
		}
		sum := 0.0
		for i, n := range counts {
			if n > 0 {
				sum += rowLoss[i]
			}
		}
		loss = sum / g * dp
		for i := 0; i < x.B; i++ {
			gr, mr := grad.Row(i), mask.Row(i)
			for t, m := range mr {
				gr[t] = m * rowScale[i] / g * dp
			}
		}
	case SeqMeanTokenSumNorm:
		f := opt.LossScaleFactor
		if f == 0 {
			f = float64(x.L)
		}
		loss = MaskedSum(x, mask) / f
		for k, m := range mask.Data {
			grad.Data[k] = m / f
		}
	default:
		_, err := ParseAggMode(string(mode))
		return 0, Matrix{}, err
	}
	return loss, grad, nil
}

// String returns the mode's name (verl's loss_agg_mode value).
func (m AggMode) String() string { return string(m) }

// MarshalText writes the mode's name.
func (m AggMode) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText parses a mode's name (ParseAggMode), so a misspelt loss_agg_mode in a
// configuration file is refused where it is read.
func (m *AggMode) UnmarshalText(b []byte) error {
	v, err := ParseAggMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
