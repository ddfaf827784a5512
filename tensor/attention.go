package tensor

import (
	"fmt"
	"math"
	"sync"

	"agentr1/tensor/ref"
)

// Causal grouped-query attention with a key-padding mask (Vaswani et al. 2017, eq. 1;
// Ainslie et al. 2023 for grouped queries; Hugging Face Qwen2 eager attention). Tensors are in
// the model's layout, one row per token with its heads side by side:
//
//	q:       (B, T, Hq, D)     k, v: (B, T, Hkv, D)     out: (B, T, Hq, D)
//	keyMask: (B, T)            1 = real token, 0 = padding
//	probs:   (B, Hq, T, T)     attention weights, saved by the forward pass for the backward
//
// Query head h reads key/value head h / (Hq/Hkv). For query position i the weights are
//
//	P_ij = softmax_j(q_i . k_j / sqrt(D))   over keys j <= i with keyMask[j] = 1
//
// and exactly 0 elsewhere; out_i = sum_j P_ij v_j. A padded query (keyMask[i] = 0), or a row
// with no valid key, has P_i = 0 and outputs 0, so it also passes back no gradient.
// The score and output products run through Gemm with row strides Hq*D and Hkv*D, so no head
// is ever copied out of the interleaved layout.

// AttentionForward computes out and probs, overwriting both. Heads run in parallel.
// It panics if a slice length does not match its dimensions or Hkv does not divide Hq.
func AttentionForward(out, probs, q, k, v, keyMask []float32, B, T, Hq, Hkv, D int) {
	checkAttention("AttentionForward", B, T, Hq, Hkv, D)
	mustLen("AttentionForward", "out", out, B*T*Hq*D)
	mustLen("AttentionForward", "probs", probs, B*Hq*T*T)
	checkAttentionInputs("AttentionForward", q, k, v, keyMask, B, T, Hq, Hkv, D)
	if active.ref {
		ref.AttentionForward(out, probs, nil, q, k, v, keyMask, B, T, Hq, Hkv, D)
		return
	}
	attentionForward(out, probs, nil, q, k, v, keyMask, B, T, Hq, Hkv, D)
}

// AttentionForwardStats computes out as AttentionForward does, bit for bit, without keeping
// the attention weights: each query row's softmax is summarised by two numbers,
//
//	stats: (B, Hq, T, 2)   [max_j S_ij, 1/sum_j exp(S_ij - max)] per query row, or [+Inf, 0]
//	                       for a row whose weights are all zero (padded query, no valid key)
//
// from which AttentionBackwardStats recomputes the weights a block of rows at a time, exactly
// as they were (the recomputation of FlashAttention, Dao et al. 2022, sec. 3.1, with the
// maximum and the reciprocal sum kept instead of their log-sum-exp so that the weights come out
// identical). The weights of a (B, Hq, T, T) batch never exist at once: T*T floats per worker.
// It panics if a slice length does not match its dimensions or Hkv does not divide Hq.
func AttentionForwardStats(out, stats, q, k, v, keyMask []float32, B, T, Hq, Hkv, D int) {
	checkAttention("AttentionForwardStats", B, T, Hq, Hkv, D)
	mustLen("AttentionForwardStats", "out", out, B*T*Hq*D)
	mustLen("AttentionForwardStats", "stats", stats, B*Hq*T*2)
	checkAttentionInputs("AttentionForwardStats", q, k, v, keyMask, B, T, Hq, Hkv, D)
	if active.ref {
		ref.AttentionForward(out, nil, stats, q, k, v, keyMask, B, T, Hq, Hkv, D)
		return
	}
	attentionForward(out, nil, stats, q, k, v, keyMask, B, T, Hq, Hkv, D)
}

// attentionForward is both forward passes: the weights of each block of query rows go to
// probs when it is not nil, else to a per-worker scratch block, with their row statistics in
// stats.
func attentionForward(out, probs, stats, q, k, v, keyMask []float32, B, T, Hq, Hkv, D int) {
	if B*T*Hq == 0 {
		return
	}
	group := Hq / Hkv
	scale := float32(1 / math.Sqrt(float64(D)))
	Parallel(B*Hq, 1, func(lo, hi int) {
		var scratch []float32 // (attnBlock, T) weights of one block of rows, when not kept
		if probs == nil {
			buf := attnScratchPool.Get().(*[]float32)
			defer attnScratchPool.Put(buf)
			*buf = grow(*buf, min(attnBlock, T)*T)
			scratch = *buf
		}
		for bh := lo; bh < hi; bh++ {
			b, h := bh/Hq, bh%Hq
			qOff := (b*T*Hq + h) * D         // q[b, 0, h, :]; rows Hq*D apart
			kvOff := (b*T*Hkv + h/group) * D // k[b, 0, h/group, :]; rows Hkv*D apart
			mask := keyMask[b*T : (b+1)*T]   // (T)
			first, run := keySpan(mask)
			// Causal: query rows [i0, i1) only need keys [0, i1), so work in row blocks.
			for i0 := 0; i0 < T; i0 += attnBlock {
				i1 := min(i0+attnBlock, T)
				pb := scratch // rows i0.. of P, row stride T
				if probs != nil {
					pb = probs[(bh*T+i0)*T:]
				}
				attnScores(pb, q, k, qOff, kvOff, i0, i1, T, Hq, Hkv, D, scale)
				for i := i0; i < i1; i++ {
					m, inv := maskedSoftmaxRow(pb[(i-i0)*T:(i-i0+1)*T], mask, i, first, run)
					if stats != nil {
						stats[(bh*T+i)*2], stats[(bh*T+i)*2+1] = m, inv
					}
				}
				if D > 0 {
					// out_h[i0:i1] (i1-i0, D) = P[i0:i1, :i1] @ v_h[:i1] (i1, D)
					Gemm(false, false, i1-i0, D, i1, 1, pb, T, v[kvOff:], Hkv*D, 0, out[qOff+i0*Hq*D:], Hq*D)
				}
			}
		}
	})
}

// attnScores writes the scaled scores of query rows [i0, i1) of one head against keys [0, i1)
// into pb (i1-i0, i1) at row stride T: pb = scale * q_h[i0:i1] @ k_h[:i1]^T. The forward pass
// and the recomputation in backward call it identically, so the scores agree bit for bit.
func attnScores(pb, q, k []float32, qOff, kvOff, i0, i1, T, Hq, Hkv, D int, scale float32) {
	if D == 0 {
		for r := range i1 - i0 {
			clear(pb[r*T : r*T+i1])
		}
		return
	}
	Gemm(false, true, i1-i0, i1, D, scale, q[qOff+i0*Hq*D:], Hq*D, k[kvOff:], Hkv*D, 0, pb, T)
}

// keySpan describes a key mask (T): first is its first valid key (T if none), and run
// reports whether the valid keys form one contiguous run from first on, as with left padding,
// right padding or both (mdp.Collate pads prompts on the left and responses on the right).
// Then the valid keys j <= i of a valid query i are exactly [first, i], and the masked softmax
// of its row is a plain softmax over that run.
func keySpan(mask []float32) (first int, run bool) {
	first = len(mask)
	for j, v := range mask {
		if v != 0 {
			first = j
			break
		}
	}
	end := first // one past the run's last key
	for end < len(mask) && mask[end] != 0 {
		end++
	}
	for _, v := range mask[end:] {
		if v != 0 {
			return first, false
		}
	}
	return first, true
}

// maskedSoftmaxRow turns the scores row (T) of query i into attention weights in place: a
// max-shifted softmax over keys j <= i with mask[j] != 0, exactly 0 for every other key, and
// an all-zero row when query i is itself padding or has no valid key. first and run are the
// mask's keySpan: with a run mask the valid keys are [first, i], which the vector kernels
// handle directly, otherwise masked keys are set to -Inf (exp gives 0). It
// returns the row's maximum and the reciprocal of its sum of exponentials, the statistics
// maskedSoftmaxRowAgain needs, or (+Inf, 0) for an all-zero row.
func maskedSoftmaxRow(row, mask []float32, i, first int, run bool) (m, inv float32) {
	zero := float32(math.Inf(1))
	if mask[i] == 0 {
		clear(row)
		return zero, 0
	}
	lo := 0 // the softmax runs over row[lo:i+1]
	if run {
		lo = first
		clear(row[:lo])
		m = active.max(row[lo : i+1])
	} else {
		m = float32(math.Inf(-1))
		for j := 0; j <= i; j++ {
			if mask[j] != 0 && row[j] > m {
				m = row[j]
			}
		}
		for j := 0; j <= i; j++ {
			if mask[j] == 0 {
				row[j] = float32(math.Inf(-1)) // exp gives exactly 0
			}
		}
	}
	sum := expShiftSum(row[lo:i+1], row[lo:i+1], 1, m) // row_j = exp(row_j - m)
	clear(row[i+1:])
	if sum == 0 || math.IsNaN(sum) || math.IsInf(float64(m), 1) {
		clear(row[:i+1])
		return zero, 0
	}
	inv = float32(1 / sum)
	active.scal(inv, row[lo:i+1])
	return m, inv
}

// maskedSoftmaxRowAgain recomputes from the same scores row (T) the weights maskedSoftmaxRow
// produced, given the statistics it returned: the same operations in the same order, so the
// same bits.
func maskedSoftmaxRowAgain(row, mask []float32, i, first int, run bool, m, inv float32) {
	if math.IsInf(float64(m), 1) {
		clear(row)
		return
	}
	lo := 0
	if run {
		lo = first
		clear(row[:lo])
	} else {
		for j := 0; j <= i; j++ {
			if mask[j] == 0 {
				row[j] = float32(math.Inf(-1))
			}
		}
	}
	expShiftSum(row[lo:i+1], row[lo:i+1], 1, m)
	clear(row[i+1:])
	active.scal(inv, row[lo:i+1])
}

// AttentionBackward accumulates the gradients of AttentionForward given its saved probs.
// With S the scaled scores and dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik) the softmax backward,
//
//	dv_h (T, D) += P^T @ dout_h        dP (T, T) = dout_h @ v_h^T
//	dq_h (T, D) += scale * dS @ k_h    dk_h (T, D) += scale * dS^T @ q_h
//
// summed over the query heads sharing a key/value head. Key/value heads run in parallel (each
// worker owns its dk, dv heads). Any of dq, dk, dv may be nil. It panics if a slice length does
// not match its dimensions or Hkv does not divide Hq.
func AttentionBackward(dq, dk, dv, dout, probs, q, k, v []float32, B, T, Hq, Hkv, D int) {
	checkAttention("AttentionBackward", B, T, Hq, Hkv, D)
	mustLen("AttentionBackward", "probs", probs, B*Hq*T*T)
	checkAttentionGrads("AttentionBackward", dq, dk, dv, dout, B, T, Hq, Hkv, D)
	checkAttentionInputs("AttentionBackward", q, k, v, nil, B, T, Hq, Hkv, D)
	if active.ref {
		ref.AttentionBackward(dq, dk, dv, dout, probs, q, k, v, B, T, Hq, Hkv, D)
		return
	}
	attentionBackward(dq, dk, dv, dout, probs, nil, nil, q, k, v, B, T, Hq, Hkv, D)
}

// AttentionBackwardStats accumulates the gradients of AttentionForwardStats, bit for bit those
// AttentionBackward gives from the kept weights: each block of query rows recomputes its scores
// and, from stats, its weights (one more scores product per block than AttentionBackward), then
// proceeds identically. keyMask is the forward pass's. Any of dq, dk, dv may be nil. It panics
// if a slice length does not match its dimensions or Hkv does not divide Hq.
func AttentionBackwardStats(dq, dk, dv, dout, stats, q, k, v, keyMask []float32, B, T, Hq, Hkv, D int) {
	checkAttention("AttentionBackwardStats", B, T, Hq, Hkv, D)
	mustLen("AttentionBackwardStats", "stats", stats, B*Hq*T*2)
	checkAttentionGrads("AttentionBackwardStats", dq, dk, dv, dout, B, T, Hq, Hkv, D)
	checkAttentionInputs("AttentionBackwardStats", q, k, v, keyMask, B, T, Hq, Hkv, D)
	if active.ref {
		// The reference keeps no statistics to recompute from: it runs the forward again for
		// the weights.
		probs := make([]float32, B*Hq*T*T)
		ref.AttentionForward(make([]float32, B*T*Hq*D), probs, nil, q, k, v, keyMask, B, T, Hq, Hkv, D)
		ref.AttentionBackward(dq, dk, dv, dout, probs, q, k, v, B, T, Hq, Hkv, D)
		return
	}
	attentionBackward(dq, dk, dv, dout, nil, stats, keyMask, q, k, v, B, T, Hq, Hkv, D)
}

// attentionBackward is both backward passes: each block of weights is read from probs when it
// is not nil, else recomputed from the scores and stats into a per-worker scratch block.
func attentionBackward(dq, dk, dv, dout, probs, stats, keyMask, q, k, v []float32, B, T, Hq, Hkv, D int) {
	if B*T*Hq*D == 0 {
		return
	}
	group := Hq / Hkv
	scale := float32(1 / math.Sqrt(float64(D)))
	Parallel(B*Hkv, 1, func(lo, hi int) {
		var ds []float32 // (attnBlock, T): scale*dP, then scale*dS in place, for one block of query rows
		if dq != nil || dk != nil {
			buf := attnScratchPool.Get().(*[]float32)
			defer attnScratchPool.Put(buf)
			*buf = grow(*buf, min(attnBlock, T)*T)
			ds = *buf
		}
		var scratch []float32 // (attnBlock, T): recomputed weights of one block of query rows
		if probs == nil {
			buf := attnScratchPool.Get().(*[]float32)
			defer attnScratchPool.Put(buf)
			*buf = grow(*buf, min(attnBlock, T)*T)
			scratch = *buf
		}
		for bg := lo; bg < hi; bg++ {
			b, kh := bg/Hkv, bg%Hkv
			kvOff := (b*T*Hkv + kh) * D // k[b, 0, kh, :]; rows Hkv*D apart
			var mask []float32          // (T), for the recomputation of the weights
			var first int
			var run bool
			if probs == nil {
				mask = keyMask[b*T : (b+1)*T]
				first, run = keySpan(mask)
			}
			for h := kh * group; h < (kh+1)*group; h++ {
				bh := b*Hq + h
				qOff := (b*T*Hq + h) * D // q[b, 0, h, :]; rows Hq*D apart
				// Causal: query rows [i0, i1) only touch keys [0, i1), so work in row blocks.
				for i0 := 0; i0 < T; i0 += attnBlock {
					i1 := min(i0+attnBlock, T)
					pb := scratch // P[i0:i1, :i1], row stride T
					if probs != nil {
						pb = probs[(bh*T+i0)*T:]
					} else {
						attnScores(pb, q, k, qOff, kvOff, i0, i1, T, Hq, Hkv, D, scale)
						for i := i0; i < i1; i++ {
							st := stats[(bh*T+i)*2:]
							maskedSoftmaxRowAgain(pb[(i-i0)*T:(i-i0+1)*T], mask, i, first, run, st[0], st[1])
						}
					}
					doutb := dout[qOff+i0*Hq*D:] // dout_h[i0:i1]
					if ds != nil {
						// scale*dP[i0:i1, :i1] = scale * dout_h[i0:i1] @ v_h[:i1]^T, into ds
						// rows 0..i1-i0. The softmax backward is linear in dP, so the rows
						// below come out as scale*dS, the scores' gradient times the score
						// scale that both products after it need: they then run with alpha =
						// 1, which lets Gemm read the transposed one (dk) in place instead of
						// packing it.
						Gemm(false, true, i1-i0, i1, D, scale, doutb, Hq*D, v[kvOff:], Hkv*D, 0, ds, T)
						for i := i0; i < i1; i++ {
							// scale*dS_i = P_i ⊙ (scale*dP_i − P_i·scale*dP_i)
							pr, dr := pb[(i-i0)*T:(i-i0)*T+i1], ds[(i-i0)*T:(i-i0)*T+i1] // (i1)
							active.softmaxGrad(pr, dr, active.dot(pr, dr))
						}
					}
					if dv != nil {
						// dv_h[:i1] += P[i0:i1, :i1]^T @ dout_h[i0:i1]. After the rows above,
						// which read the kept weights front to back (so the hardware prefetches
						// them) and leave them in cache for this product's strided reads.
						Gemm(true, false, i1, D, i1-i0, 1, pb, T, doutb, Hq*D, 1, dv[kvOff:], Hkv*D)
					}
					if ds == nil {
						continue
					}
					if dq != nil {
						// dq_h[i0:i1] += (scale*dS[i0:i1, :i1]) @ k_h[:i1]
						Gemm(false, false, i1-i0, D, i1, 1, ds, T, k[kvOff:], Hkv*D, 1, dq[qOff+i0*Hq*D:], Hq*D)
					}
					if dk != nil {
						// dk_h[:i1] += (scale*dS[i0:i1, :i1])^T @ q_h[i0:i1]
						Gemm(true, false, i1, D, i1-i0, 1, ds, T, q[qOff+i0*Hq*D:], Hq*D, 1, dk[kvOff:], Hkv*D)
					}
				}
			}
		}
	})
}

// attnScratchPool holds the per-worker dS buffers of AttentionBackward, so that a training step
// reuses them across layers and steps instead of allocating one per worker per call.
var attnScratchPool = sync.Pool{New: func() any { return new([]float32) }}

// attnBlock is the number of query rows attention processes together: small enough that the
// causal triangle is not computed twice over, large enough for Gemm to run at speed.
const attnBlock = 64

// checkAttentionInputs panics unless q, k, v (and keyMask, except for AttentionBackward, which
// passes nil) have the lengths of a (B, T) batch of Hq query and Hkv key/value heads of size D.
func checkAttentionInputs(fn string, q, k, v, keyMask []float32, B, T, Hq, Hkv, D int) {
	mustLen(fn, "q", q, B*T*Hq*D)
	mustLen(fn, "k", k, B*T*Hkv*D)
	mustLen(fn, "v", v, B*T*Hkv*D)
	if keyMask != nil || fn != "AttentionBackward" {
		mustLen(fn, "keyMask", keyMask, B*T)
	}
}

// checkAttentionGrads panics unless the gradient buffers have the lengths of their inputs (dq,
// dk, dv may be nil).
func checkAttentionGrads(fn string, dq, dk, dv, dout []float32, B, T, Hq, Hkv, D int) {
	mustLenOrNil(fn, "dq", dq, B*T*Hq*D)
	mustLenOrNil(fn, "dk", dk, B*T*Hkv*D)
	mustLenOrNil(fn, "dv", dv, B*T*Hkv*D)
	mustLen(fn, "dout", dout, B*T*Hq*D)
}

// checkAttention panics on negative dimensions or a key/value head count not dividing Hq.
func checkAttention(fn string, B, T, Hq, Hkv, D int) {
	mustDims(fn, B, T, Hq, Hkv, D)
	if Hkv == 0 || Hq%Hkv != 0 {
		panic(fmt.Sprintf("tensor.%s: Hkv=%d must divide Hq=%d", fn, Hkv, Hq))
	}
}
