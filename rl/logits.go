package rl

import (
	"fmt"
	"math"
)

// logSumExp returns log Σ_k e^{z_k}, computed stably around max z.
func logSumExp(z []float64) float64 {
	m := math.Inf(-1)
	for _, x := range z {
		m = math.Max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, x := range z {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// softmaxInto writes p = softmax(z) into p and returns logsumexp(z).
func softmaxInto(p, z []float64) float64 {
	lse := logSumExp(z)
	for k, x := range z {
		p[k] = math.Exp(x - lse)
	}
	return lse
}

// EntropyFromLogits returns the entropy of each token's categorical distribution, shape (B, L):
//
//	H = logsumexp(z) − Σ_k softmax(z)_k·z_k.
//
// Not used by the trainer, whose model head computes log-probs and entropies fused
// (model/head.go); reproduces verl's entropy_from_logits for the golden cases (package
// golden/verl).
//
// Source: verl torch_functional.entropy_from_logits. It panics if the logits are malformed.
func EntropyFromLogits(z Logits) Matrix {
	z.check("EntropyFromLogits")
	h := NewMatrix(z.B, z.L)
	p := make([]float64, z.V) // (V)
	for i := 0; i < z.B; i++ {
		for t := 0; t < z.L; t++ {
			zr := z.row(i, t)
			lse := softmaxInto(p, zr)
			dot := 0.0
			for k, x := range zr {
				dot += p[k] * x
			}
			h.Data[i*z.L+t] = lse - dot
		}
	}
	return h
}

// EntropyFromLogitsBackward accumulates into dLogits (B, L, V) the gradient of Σ dH·H through
// EntropyFromLogits:
//
//	∂H/∂z_k = −p_k·(z_k − Σ_j p_j z_j).
//
// Not used by the trainer, whose model head computes log-probs and entropies fused
// (model/head.go); the golden cases (package golden/verl) run it inside EntropyLoss (verl's
// compute_entropy_loss, backward by torch autograd).
//
// dH is (B, L). It panics if the shapes differ.
func EntropyFromLogitsBackward(dLogits []float64, z Logits, dH Matrix) {
	z.check("EntropyFromLogitsBackward")
	if len(dLogits) != len(z.Data) || dH.B != z.B || dH.L != z.L {
		panic(fmt.Sprintf("rl.EntropyFromLogitsBackward: dLogits %d values, dH (%d, %d), logits (%d, %d, %d)", len(dLogits), dH.B, dH.L, z.B, z.L, z.V))
	}
	p := make([]float64, z.V) // (V)
	for i := 0; i < z.B; i++ {
		for t := 0; t < z.L; t++ {
			g := dH.Data[i*z.L+t]
			if g == 0 {
				continue
			}
			zr := z.row(i, t)
			softmaxInto(p, zr)
			dot := 0.0
			for k, x := range zr {
				dot += p[k] * x
			}
			o := (i*z.L + t) * z.V
			for k, x := range zr {
				dLogits[o+k] += g * -p[k] * (x - dot)
			}
		}
	}
}

// EntropyLoss returns AggLoss(EntropyFromLogits(z), m, mode, opt) and its gradient with respect to
// the logits, (B, L, V).
//
// Not used by the trainer, which aggregates the model head's entropies with AggLoss itself
// (rl/trainer/update.go); reproduces verl's compute_entropy_loss for the golden cases (package
// golden/verl).
//
// Source: verl core_algos.compute_entropy_loss. It returns an error for an unknown mode; it
// panics if the shapes differ.
func EntropyLoss(z Logits, mask Matrix, mode AggMode, opt AggOptions) (float64, []float64, error) {
	h := EntropyFromLogits(z)
	loss, w, err := AggLoss(h, mask, mode, opt)
	if err != nil {
		return 0, nil, fmt.Errorf("rl.EntropyLoss: %w", err)
	}
	dLogits := make([]float64, len(z.Data)) // (B, L, V)
	EntropyFromLogitsBackward(dLogits, z, w)
	return loss, dLogits, nil
}

// LogProbsFromLogits returns log softmax(z)_y at each token's label, shape (B, L):
// z_y − logsumexp(z). labels is (B, L) row-major.
//
// Not used by the trainer, whose model head computes log-probs and entropies fused
// (model/head.go); reproduces verl's logprobs_from_logits for the golden cases (package
// golden/verl).
//
// Source: verl torch_functional.logprobs_from_logits (the logprobs_from_logits_v2 path).
// It panics if the shapes differ or a label is outside [0, V).
func LogProbsFromLogits(z Logits, labels []int) Matrix {
	z.check("LogProbsFromLogits")
	if len(labels) != z.B*z.L {
		panic(fmt.Sprintf("rl.LogProbsFromLogits: %d labels for (%d, %d)", len(labels), z.B, z.L))
	}
	out := NewMatrix(z.B, z.L)
	for i := 0; i < z.B; i++ {
		for t := 0; t < z.L; t++ {
			y := labels[i*z.L+t]
			if y < 0 || y >= z.V {
				panic(fmt.Sprintf("rl.LogProbsFromLogits: label %d at (%d, %d) outside [0, %d)", y, i, t, z.V))
			}
			zr := z.row(i, t)
			out.Data[i*z.L+t] = zr[y] - logSumExp(zr)
		}
	}
	return out
}

// LogProbsFromLogitsBackward accumulates into dLogits (B, L, V) the gradient of Σ dLogp·logp
// through LogProbsFromLogits: ∂logp/∂z_k = onehot(y)_k − softmax(z)_k. dLogp is (B, L).
// It panics if the shapes differ.
//
// Not used by the trainer, whose model head computes log-probs and entropies fused
// (model/head.go); reproduces the torch autograd gradient of verl's logprobs_from_logits for the
// golden cases (package golden/verl).
func LogProbsFromLogitsBackward(dLogits []float64, z Logits, labels []int, dLogp Matrix) {
	z.check("LogProbsFromLogitsBackward")
	if len(dLogits) != len(z.Data) || len(labels) != z.B*z.L || dLogp.B != z.B || dLogp.L != z.L {
		panic(fmt.Sprintf("rl.LogProbsFromLogitsBackward: dLogits %d, labels %d, dLogp (%d, %d) for logits (%d, %d, %d)", len(dLogits), len(labels), dLogp.B, dLogp.L, z.B, z.L, z.V))
	}
	p := make([]float64, z.V) // (V)
	for i := 0; i < z.B; i++ {
		for t := 0; t < z.L; t++ {
			g := dLogp.Data[i*z.L+t]
			if g == 0 {
				continue
			}
			softmaxInto(p, z.row(i, t))
			o := (i*z.L + t) * z.V
			for k := range p {
				dLogits[o+k] -= g * p[k]
			}
			dLogits[o+labels[i*z.L+t]] += g
		}
	}
}
