package tensor

import (
	"fmt"
	"math"
	"sync"
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
	mustLen("AttentionForward", "q", q, B*T*Hq*D)
	mustLen("AttentionForward", "k", k, B*T*Hkv*D)
	mustLen("AttentionForward", "v", v, B*T*Hkv*D)
	mustLen("AttentionForward", "keyMask", keyMask, B*T)
	if B*T*Hq == 0 {
		return
	}
	group := Hq / Hkv
	scale := float32(1 / math.Sqrt(float64(D)))
	Parallel(B*Hq, 1, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/Hq, bh%Hq
			qOff := (b*T*Hq + h) * D         // q[b, 0, h, :]; rows Hq*D apart
			kvOff := (b*T*Hkv + h/group) * D // k[b, 0, h/group, :]; rows Hkv*D apart
			p := probs[bh*T*T : (bh+1)*T*T]  // (T, T)
			mask := keyMask[b*T : (b+1)*T]   // (T)
			// Causal: query rows [i0, i1) only need keys [0, i1), so work in row blocks.
			for i0 := 0; i0 < T; i0 += attnBlock {
				i1 := min(i0+attnBlock, T)
				pb := p[i0*T:] // rows i0.. of P, row stride T
				if D == 0 {
					clear(pb[:(i1-i0)*T])
				} else {
					// scores (i1-i0, i1) = scale * q_h[i0:i1] @ k_h[:i1]^T
					Gemm(false, true, i1-i0, i1, D, scale, q[qOff+i0*Hq*D:], Hq*D, k[kvOff:], Hkv*D, 0, pb, T)
				}
				for i := i0; i < i1; i++ {
					maskedSoftmaxRow(p[i*T:(i+1)*T], mask, i)
				}
				if D > 0 {
					// out_h[i0:i1] (i1-i0, D) = P[i0:i1, :i1] @ v_h[:i1] (i1, D)
					Gemm(false, false, i1-i0, D, i1, 1, pb, T, v[kvOff:], Hkv*D, 0, out[qOff+i0*Hq*D:], Hq*D)
				}
			}
		}
	})
}

// maskedSoftmaxRow turns the scores row (T) of query i into attention weights in place: a
// max-shifted softmax over keys j <= i with mask[j] != 0, exactly 0 for every other key, and
// an all-zero row when query i is itself padding or has no valid key.
func maskedSoftmaxRow(row, mask []float32, i int) {
	if mask[i] == 0 {
		clear(row)
		return
	}
	m := float32(math.Inf(-1))
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
	sum := expShiftSum(row[:i+1], row[:i+1], 1, m) // row_j = exp(row_j - m)
	clear(row[i+1:])
	if sum == 0 || math.IsNaN(sum) {
		clear(row[:i+1])
		return
	}
	active.scal(float32(1/sum), row[:i+1])
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
	mustLenOrNil("AttentionBackward", "dq", dq, B*T*Hq*D)
	mustLenOrNil("AttentionBackward", "dk", dk, B*T*Hkv*D)
	mustLenOrNil("AttentionBackward", "dv", dv, B*T*Hkv*D)
	mustLen("AttentionBackward", "dout", dout, B*T*Hq*D)
	mustLen("AttentionBackward", "probs", probs, B*Hq*T*T)
	mustLen("AttentionBackward", "q", q, B*T*Hq*D)
	mustLen("AttentionBackward", "k", k, B*T*Hkv*D)
	mustLen("AttentionBackward", "v", v, B*T*Hkv*D)
	if B*T*Hq*D == 0 {
		return
	}
	group := Hq / Hkv
	scale := float32(1 / math.Sqrt(float64(D)))
	Parallel(B*Hkv, 1, func(lo, hi int) {
		var ds []float32 // (attnBlock, T): dP, then dS in place, for one block of query rows
		if dq != nil || dk != nil {
			buf := attnScratchPool.Get().(*[]float32)
			defer attnScratchPool.Put(buf)
			*buf = grow(*buf, min(attnBlock, T)*T)
			ds = *buf
		}
		for bg := lo; bg < hi; bg++ {
			b, kh := bg/Hkv, bg%Hkv
			kvOff := (b*T*Hkv + kh) * D // k[b, 0, kh, :]; rows Hkv*D apart
			for h := kh * group; h < (kh+1)*group; h++ {
				bh := b*Hq + h
				qOff := (b*T*Hq + h) * D        // q[b, 0, h, :]; rows Hq*D apart
				p := probs[bh*T*T : (bh+1)*T*T] // (T, T)
				// Causal: query rows [i0, i1) only touch keys [0, i1), so work in row blocks.
				for i0 := 0; i0 < T; i0 += attnBlock {
					i1 := min(i0+attnBlock, T)
					pb := p[i0*T:]               // P[i0:i1, :i1], row stride T
					doutb := dout[qOff+i0*Hq*D:] // dout_h[i0:i1]
					if dv != nil {
						// dv_h[:i1] += P[i0:i1, :i1]^T @ dout_h[i0:i1]
						Gemm(true, false, i1, D, i1-i0, 1, pb, T, doutb, Hq*D, 1, dv[kvOff:], Hkv*D)
					}
					if ds == nil {
						continue
					}
					// dP[i0:i1, :i1] = dout_h[i0:i1] @ v_h[:i1]^T, into ds rows 0..i1-i0
					Gemm(false, true, i1-i0, i1, D, 1, doutb, Hq*D, v[kvOff:], Hkv*D, 0, ds, T)
					for i := i0; i < i1; i++ {
						pr, dr := p[i*T:i*T+i1], ds[(i-i0)*T:(i-i0)*T+i1] // (i1)
						var dot float64
						for j, pj := range pr {
							dot += float64(pj) * float64(dr[j])
						}
						for j, pj := range pr {
							dr[j] = pj * (dr[j] - float32(dot))
						}
					}
					if dq != nil {
						// dq_h[i0:i1] += scale * dS[i0:i1, :i1] @ k_h[:i1]
						Gemm(false, false, i1-i0, D, i1, scale, ds, T, k[kvOff:], Hkv*D, 1, dq[qOff+i0*Hq*D:], Hq*D)
					}
					if dk != nil {
						// dk_h[:i1] += scale * dS[i0:i1, :i1]^T @ q_h[i0:i1]
						Gemm(true, false, i1, D, i1-i0, scale, ds, T, q[qOff+i0*Hq*D:], Hq*D, 1, dk[kvOff:], Hkv*D)
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

// checkAttention panics on negative dimensions or a key/value head count not dividing Hq.
func checkAttention(fn string, B, T, Hq, Hkv, D int) {
	mustDims(fn, B, T, Hq, Hkv, D)
	if Hkv == 0 || Hq%Hkv != 0 {
		panic(fmt.Sprintf("tensor.%s: Hkv=%d must divide Hq=%d", fn, Hkv, Hq))
	}
}
