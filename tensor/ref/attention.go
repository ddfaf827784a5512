package ref

import (
	"math"

	"golang.org/x/exp/constraints"
)

// Causal grouped-query attention with a key-padding mask (Vaswani et al. 2017, "Attention Is
// All You Need", eq. 1; Ainslie et al. 2023, "GQA", for grouped queries; Hugging Face Qwen2
// eager attention). Tensors are in the model's layout, one row per token, heads side by side:
//
//	q:       (B, T, Hq, D)     k, v: (B, T, Hkv, D)     out: (B, T, Hq, D)
//	keyMask: (B, T)            1 = real token, 0 = padding
//	probs:   (B, Hq, T, T)     the attention weights
//
// Query head h reads key/value head h / (Hq/Hkv). For query position i the weights are
//
//	S_ij = q_i . k_j / sqrt(D)
//	P_ij = softmax_j(S_ij)   over the keys j <= i with keyMask_j = 1, and 0 elsewhere
//	out_i = sum_j P_ij v_j
//
// A padded query (keyMask_i = 0), or a row with no valid key, has P_i = 0 and outputs 0.

// AttentionForward computes out and the weights P, overwriting both. probs may be nil when the
// weights are not wanted; stats (B, Hq, T, 2), when not nil, gets each row's softmax summary
// [max_j S_ij, 1/sum_j exp(S_ij - max)], or [+Inf, 0] for a row with no weights.
func AttentionForward[F constraints.Float](out, probs, stats, q, k, v, keyMask []F, B, T, Hq, Hkv, D int) {
	group := Hq / Hkv
	scale := 1 / math.Sqrt(float64(D))
	p := make([]float64, T) // (T) the weights of one query row
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kh := h / group
			for i := 0; i < T; i++ {
				// Scores of the valid keys, and their maximum.
				m := math.Inf(-1)
				for j := 0; j < T; j++ {
					p[j] = math.Inf(-1)
					if j > i || keyMask[b*T+i] == 0 || keyMask[b*T+j] == 0 {
						continue
					}
					var s float64
					for d := 0; d < D; d++ {
						s += float64(q[((b*T+i)*Hq+h)*D+d]) * float64(k[((b*T+j)*Hkv+kh)*D+d])
					}
					p[j] = s * scale
					m = max(m, p[j])
				}
				// Softmax, shifted by the maximum so that no exponential overflows.
				var sum float64
				for j := 0; j < T; j++ {
					if !math.IsInf(p[j], -1) {
						p[j] = math.Exp(p[j] - m)
						sum += p[j]
					} else {
						p[j] = 0
					}
				}
				inv := 0.0
				if sum > 0 {
					inv = 1 / sum
				} else {
					m = math.Inf(1) // no weights: the summary [+Inf, 0]
				}
				if stats != nil {
					stats[((b*Hq+h)*T+i)*2], stats[((b*Hq+h)*T+i)*2+1] = F(m), F(inv)
				}
				for j := 0; j < T; j++ {
					p[j] *= inv
					if probs != nil {
						probs[((b*Hq+h)*T+i)*T+j] = F(p[j])
					}
				}
				// out_i = sum_j P_ij v_j
				for d := 0; d < D; d++ {
					var o float64
					for j := 0; j <= i; j++ {
						o += p[j] * float64(v[((b*T+j)*Hkv+kh)*D+d])
					}
					out[((b*T+i)*Hq+h)*D+d] = F(o)
				}
			}
		}
	}
}

// AttentionBackward accumulates the gradients of AttentionForward given its weights probs.
// With dP_ij = dout_i . v_j and the softmax backward dS_ij = P_ij (dP_ij - sum_l P_il dP_il),
//
//	dv_j += sum_i P_ij dout_i
//	dq_i += scale * sum_j dS_ij k_j
//	dk_j += scale * sum_i dS_ij q_i        (scale = 1/sqrt(D))
//
// summed over the query heads that share a key/value head. Any of dq, dk, dv may be nil.
func AttentionBackward[F constraints.Float](dq, dk, dv, dout, probs, q, k, v []F, B, T, Hq, Hkv, D int) {
	group := Hq / Hkv
	scale := 1 / math.Sqrt(float64(D))
	dS := make([]float64, T) // (T) the scores' gradient of one query row
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kh := h / group
			for i := 0; i < T; i++ {
				P := probs[((b*Hq+h)*T+i)*T : ((b*Hq+h)*T+i+1)*T] // (T) row i of the weights
				dO := dout[((b*T+i)*Hq+h)*D : ((b*T+i)*Hq+h+1)*D] // (D)
				var pdp float64                                   // sum_l P_il dP_il
				for j := 0; j < T; j++ {
					var dp float64 // dP_ij = dout_i . v_j
					for d := 0; d < D; d++ {
						dp += float64(dO[d]) * float64(v[((b*T+j)*Hkv+kh)*D+d])
					}
					dS[j] = dp
					pdp += float64(P[j]) * dp
				}
				for j := 0; j < T; j++ {
					dS[j] = float64(P[j]) * (dS[j] - pdp)
				}
				for j := 0; j < T; j++ {
					for d := 0; d < D; d++ {
						kv := ((b*T+j)*Hkv+kh)*D + d
						qi := ((b*T+i)*Hq+h)*D + d
						if dv != nil {
							dv[kv] += F(float64(P[j]) * float64(dO[d]))
						}
						if dq != nil {
							dq[qi] += F(scale * dS[j] * float64(k[kv]))
						}
						if dk != nil {
							dk[kv] += F(scale * dS[j] * float64(q[qi]))
						}
					}
				}
			}
		}
	}
}

// AttentionDecode computes the attention output of one new token for G query heads that share
// one key/value head, against the L positions of the cache (all of them earlier than or equal
// to the token's, so no causal mask applies):
//
//	out_g = sum_j softmax_j(scale * q_g . k_j) v_j
//
//	q: (G, D)   k, v: (L, D)   out: (G, D), overwritten
func AttentionDecode[F constraints.Float](out, q, k, v []F, G, D, L int, scale F) {
	p := make([]float64, L) // (L) the weights of one head
	for g := 0; g < G; g++ {
		m := math.Inf(-1)
		for j := 0; j < L; j++ {
			var s float64
			for d := 0; d < D; d++ {
				s += float64(q[g*D+d]) * float64(k[j*D+d])
			}
			p[j] = float64(scale) * s
			m = max(m, p[j])
		}
		var sum float64
		for j := 0; j < L; j++ {
			p[j] = math.Exp(p[j] - m)
			sum += p[j]
		}
		for d := 0; d < D; d++ {
			var o float64
			for j := 0; j < L; j++ {
				o += p[j] * float64(v[j*D+d])
			}
			out[g*D+d] = F(o / sum)
		}
	}
}
