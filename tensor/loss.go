package tensor

import (
	"fmt"
	"math"

	"agentr1/tensor/ref"
)

// Per-token log-probabilities, entropies and masked reductions over logits (n, V): the
// quantities the RL losses consume (verl's logprobs_from_logits, entropy_from_logits,
// masked_mean). Rows are independent and run in parallel; each is max-shifted and summed in
// float64.

// LogProbsForward computes the log-probability of each row's label, overwriting logp (n):
//
//	logp_i = logits_i[labels_i] - logsumexp(logits_i)
//
// It panics if a slice length does not match its dimensions or a label is outside [0, V).
func LogProbsForward(logp, logits []float32, labels []int, n, V int) {
	checkLabels("LogProbsForward", logits, labels, n, V)
	mustLen("LogProbsForward", "logp", logp, n)
	if active.ref {
		ref.LogProbsForward(logp, logits, labels, n, V)
		return
	}
	Parallel(n, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := logits[i*V : (i+1)*V] // (V)
			logp[i] = float32(float64(row[labels[i]]) - logSumExp(row))
		}
	})
}

// LogProbsBackward accumulates the gradient of LogProbsForward given its output logp (n),
// from which the log-normaliser is recovered (lse_i = logits_i[label] - logp_i):
//
//	dlogits_ij += dlogp_i * (1[j == labels_i] - softmax(logits_i)_j)
//
// dlogits may be nil. It panics as LogProbsForward does.
func LogProbsBackward(dlogits, dlogp, logits, logp []float32, labels []int, n, V int) {
	checkLabels("LogProbsBackward", logits, labels, n, V)
	mustLenOrNil("LogProbsBackward", "dlogits", dlogits, n*V)
	mustLen("LogProbsBackward", "dlogp", dlogp, n)
	mustLen("LogProbsBackward", "logp", logp, n)
	if active.ref {
		ref.LogProbsBackward(dlogits, dlogp, logits, labels, n, V)
		return
	}
	if dlogits == nil {
		return
	}
	Parallel(n, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := dlogp[i]
			if g == 0 {
				continue
			}
			row, drow := logits[i*V:(i+1)*V], dlogits[i*V:(i+1)*V] // (V)
			lse := float64(row[labels[i]]) - float64(logp[i])
			// softmax_j = exp(x_j - m) * exp(m - lse), m the row maximum (exact in float32)
			m := rowMax(row)
			scale := expF64(float64(m) - lse)
			expChunks(row, m, func(c0 int, e []float32) {
				for j, ej := range e {
					drow[c0+j] -= g * float32(float64(ej)*scale)
				}
			})
			drow[labels[i]] += g
		}
	})
}

// EntropyForward computes the entropy of each row's softmax distribution, overwriting ent (n)
// (verl entropy_from_logits):
//
//	H_i = logsumexp(logits_i) - sum_j p_ij logits_ij,   p_i = softmax(logits_i)
//
// It panics if a slice length does not match its dimensions.
func EntropyForward(ent, logits []float32, n, V int) {
	checkRows("EntropyForward", logits, n, V)
	mustLen("EntropyForward", "ent", ent, n)
	if active.ref {
		ref.EntropyForward(ent, logits, n, V)
		return
	}
	Parallel(n, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := logits[i*V : (i+1)*V] // (V)
			m := rowMax(row)
			var sum, px float64 // sum_j e_j, sum_j e_j (x_j - m), e_j = exp(x_j - m)
			expChunks(row, m, func(c0 int, e []float32) {
				for j, ej := range e {
					if ej == 0 {
						continue // p_j = 0 contributes nothing (and -Inf logits must not give 0*Inf)
					}
					sum += float64(ej)
					px += float64(ej) * (float64(row[c0+j]) - float64(m))
				}
			})
			ent[i] = float32(math.Log(sum) - px/sum)
		}
	})
}

// EntropyBackward accumulates the gradient of EntropyForward given its output ent (n).
// With log p_j = x_j - lse, dH/dx_j = -p_j (log p_j + H):
//
//	dlogits_ij += -dent_i * p_ij * (log p_ij + H_i)
//
// dlogits may be nil. It panics if a slice length does not match its dimensions.
func EntropyBackward(dlogits, dent, logits, ent []float32, n, V int) {
	checkRows("EntropyBackward", logits, n, V)
	mustLenOrNil("EntropyBackward", "dlogits", dlogits, n*V)
	mustLen("EntropyBackward", "dent", dent, n)
	mustLen("EntropyBackward", "ent", ent, n)
	if active.ref {
		ref.EntropyBackward(dlogits, dent, logits, n, V)
		return
	}
	if dlogits == nil {
		return
	}
	Parallel(n, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := float64(dent[i])
			if g == 0 {
				continue
			}
			row, drow := logits[i*V:(i+1)*V], dlogits[i*V:(i+1)*V] // (V)
			lse := logSumExp(row)
			h := float64(ent[i])
			// p_j = exp(x_j - m) * exp(m - lse), m the row maximum (exact in float32)
			m := rowMax(row)
			scale := expF64(float64(m) - lse)
			expChunks(row, m, func(c0 int, e []float32) {
				for j, ej := range e {
					if p := float64(ej) * scale; p != 0 { // p_j = 0: no gradient (avoids 0*Inf)
						logp := float64(row[c0+j]) - lse
						drow[c0+j] += float32(-g * p * (logp + h))
					}
				}
			})
		}
	})
}

// CrossEntropyMaskedForward returns the mean negative log-likelihood of the labels over the
// positions where mask (n) is non-zero (mask acts as a weight):
//
//	loss = sum_i mask_i * -logp_i / sum_i mask_i
//
// It returns 0 when the mask sums to 0. It panics if a slice length does not match its
// dimensions or a label is outside [0, V).
func CrossEntropyMaskedForward(logits []float32, labels []int, mask []float32, n, V int) float32 {
	checkLabels("CrossEntropyMaskedForward", logits, labels, n, V)
	mustLen("CrossEntropyMaskedForward", "mask", mask, n)
	msum := sumFloat64(mask)
	if msum == 0 {
		return 0
	}
	var total float64
	for i, w := range mask {
		if w == 0 {
			continue
		}
		row := logits[i*V : (i+1)*V] // (V)
		total += float64(w) * (logSumExp(row) - float64(row[labels[i]]))
	}
	return float32(total / msum)
}

// CrossEntropyMaskedBackward accumulates the gradient of CrossEntropyMaskedForward:
//
//	dlogits_ij += dloss * mask_i / sum(mask) * (softmax(logits_i)_j - 1[j == labels_i])
//
// dlogits may be nil. It panics as the forward does.
func CrossEntropyMaskedBackward(dlogits []float32, dloss float32, logits []float32, labels []int, mask []float32, n, V int) {
	checkLabels("CrossEntropyMaskedBackward", logits, labels, n, V)
	mustLen("CrossEntropyMaskedBackward", "mask", mask, n)
	mustLenOrNil("CrossEntropyMaskedBackward", "dlogits", dlogits, n*V)
	msum := sumFloat64(mask)
	if dlogits == nil || msum == 0 {
		return
	}
	Parallel(n, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if mask[i] == 0 {
				continue
			}
			g := float64(dloss) * float64(mask[i]) / msum
			row, drow := logits[i*V:(i+1)*V], dlogits[i*V:(i+1)*V] // (V)
			lse := logSumExp(row)
			// softmax_j = exp(x_j - m) * exp(m - lse), m the row maximum (exact in float32)
			m := rowMax(row)
			scale := g * expF64(float64(m)-lse)
			expChunks(row, m, func(c0 int, e []float32) {
				for j, ej := range e {
					drow[c0+j] += float32(float64(ej) * scale)
				}
			})
			drow[labels[i]] -= float32(g)
		}
	})
}

// MaskedMean returns sum(x * mask) / sum(mask) (verl masked_mean without its epsilon), or 0
// when the mask sums to 0. Sums are in float64. It panics if len(mask) != len(x).
func MaskedMean(x, mask []float32) float32 {
	mustLen("MaskedMean", "mask", mask, len(x))
	msum := sumFloat64(mask)
	if msum == 0 {
		return 0
	}
	var s float64
	for i, v := range x {
		s += float64(v) * float64(mask[i])
	}
	return float32(s / msum)
}

// MaskedMeanBackward accumulates the gradient of MaskedMean: dx_i += dy * mask_i / sum(mask).
// dx may be nil. It panics if len(mask) != len(dx).
func MaskedMeanBackward(dx []float32, dy float32, mask []float32) {
	if dx == nil {
		return
	}
	mustLen("MaskedMeanBackward", "mask", mask, len(dx))
	msum := sumFloat64(mask)
	if msum == 0 {
		return
	}
	for i, w := range mask {
		dx[i] += float32(float64(dy) * float64(w) / msum)
	}
}

// sumFloat64 returns the sum of x accumulated in float64.
func sumFloat64(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

// checkRows panics unless logits is (n, V) with V > 0.
func checkRows(fn string, logits []float32, n, V int) {
	mustDims(fn, n, V)
	if V == 0 && n > 0 {
		panic(fmt.Sprintf("tensor.%s: V = 0", fn))
	}
	mustLen(fn, "logits", logits, n*V)
}

// checkLabels panics unless logits is (n, V) and labels (n) holds ids in [0, V).
func checkLabels(fn string, logits []float32, labels []int, n, V int) {
	checkRows(fn, logits, n, V)
	if len(labels) != n {
		panic(fmt.Sprintf("tensor.%s: labels has len %d, want %d", fn, len(labels), n))
	}
	mustIDs(fn, "labels", labels, V)
}
