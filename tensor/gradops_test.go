package tensor

import (
	"fmt"
	"math/rand/v2"

	"agentr1/tensor/ref"
)

// gradOps returns every backward kernel of the package as a gradOp; s scales the shapes
// (s = 1: tiny shapes for finite differences; larger s: enough work to split across workers).
// Where package ref has the operation, forward64 is its float64 instantiation, on which the
// finite differences are then taken.
func gradOps(s int) []gradOp {
	rng := rand.New(rand.NewPCG(42, 1))
	r := func(n int) []float32 { return randSlice(rng, n) }
	var ops []gradOp

	{ // matmul (m, k) @ (k, n)
		m, k, n := 3*s, 4*s, 5*s
		a, b := r(m*k), r(k*n)
		ops = append(ops, gradOp{name: "MatMul", inputs: map[string][]float32{"a": a, "b": b}, nOut: m * n,
			forward: func(y []float32) { MatMulForward(y, a, b, m, k, n) },
			backward: func(dy []float32, g map[string][]float32) {
				MatMulBackward(g["a"], g["b"], dy, a, b, m, k, n)
			},
			forward64: func(y []float64, in map[string][]float64) { ref.MatMulForward(y, in["a"], in["b"], m, k, n) }})
	}
	for _, withBias := range []bool{true, false} {
		n, in, out := 4*s, 3*s, 5*s
		x, w := r(n*in), r(out*in)
		inputs := map[string][]float32{"x": x, "w": w}
		var bias []float32
		if withBias {
			bias = r(out)
			inputs["bias"] = bias
		}
		ops = append(ops, gradOp{name: fmt.Sprintf("Linear/bias=%v", withBias), inputs: inputs, nOut: n * out,
			forward: func(y []float32) { LinearForward(y, x, w, bias, n, in, out) },
			backward: func(dy []float32, g map[string][]float32) {
				LinearBackward(g["x"], g["w"], g["bias"], dy, x, w, n, in, out)
			},
			forward64: func(y []float64, v map[string][]float64) { ref.LinearForward(y, v["x"], v["w"], v["bias"], n, in, out) }})
	}
	{ // broadcasting add and mul: x (3, 4) with y (4)
		x, y := r(12*s*s), r(4*s)
		ops = append(ops, gradOp{name: "Add", inputs: map[string][]float32{"x": x, "y": y}, nOut: len(x),
			forward:  func(z []float32) { AddForward(z, x, y) },
			backward: func(dz []float32, g map[string][]float32) { AddBackward(g["x"], g["y"], dz) }})
		x2, y2 := r(12*s*s), r(4*s)
		ops = append(ops, gradOp{name: "Mul", inputs: map[string][]float32{"x": x2, "y": y2}, nOut: len(x2),
			forward:  func(z []float32) { MulForward(z, x2, y2) },
			backward: func(dz []float32, g map[string][]float32) { MulBackward(g["x"], g["y"], dz, x2, y2) }})
	}
	{ // softmax and log-softmax over rows of (3, 5)
		n, d := 3*s, 5*s
		x := r(n * d)
		sm := make([]float32, n*d)
		ops = append(ops, gradOp{name: "Softmax", inputs: map[string][]float32{"x": x}, nOut: n * d,
			forward: func(y []float32) { SoftmaxForward(y, x, n, d) },
			backward: func(dy []float32, g map[string][]float32) {
				SoftmaxForward(sm, x, n, d)
				SoftmaxBackward(g["x"], dy, sm, n, d)
			},
			forward64: func(y []float64, in map[string][]float64) { ref.SoftmaxForward(y, in["x"], n, d) }})
		x2 := r(n * d)
		lsm := make([]float32, n*d)
		ops = append(ops, gradOp{name: "LogSoftmax", inputs: map[string][]float32{"x": x2}, nOut: n * d,
			forward: func(y []float32) { LogSoftmaxForward(y, x2, n, d) },
			backward: func(dy []float32, g map[string][]float32) {
				LogSoftmaxForward(lsm, x2, n, d)
				LogSoftmaxBackward(g["x"], dy, lsm, n, d)
			},
			forward64: func(y []float64, in map[string][]float64) { ref.LogSoftmaxForward(y, in["x"], n, d) }})
	}
	{ // RMSNorm over rows of (3, 6)
		n, d := 3*s, 6*s
		x, w := r(n*d), r(d)
		rstd := make([]float32, n)
		ops = append(ops, gradOp{name: "RMSNorm", inputs: map[string][]float32{"x": x, "w": w}, nOut: n * d,
			forward: func(y []float32) { RMSNormForward(y, rstd, x, w, n, d, 1e-6) },
			backward: func(dy []float32, g map[string][]float32) {
				RMSNormBackward(g["x"], g["w"], dy, x, w, rstd, n, d)
			},
			forward64: func(y []float64, in map[string][]float64) {
				ref.RMSNormForward(y, make([]float64, n), in["x"], in["w"], n, d, 1e-6)
			}})
	}
	{ // SiLU and SwiGLU, including large |x| where the sigmoid saturates
		x := append(r(8*s*s), -30, 30, -5, 5)
		ops = append(ops, gradOp{name: "SiLU", inputs: map[string][]float32{"x": x}, nOut: len(x),
			forward:   func(y []float32) { SiLUForward(y, x) },
			backward:  func(dy []float32, g map[string][]float32) { SiLUBackward(g["x"], dy, x) },
			forward64: func(y []float64, in map[string][]float64) { ref.SiLUForward(y, in["x"]) }})
		gate, up := append(r(8*s*s), -20, 20), r(8*s*s+2)
		ops = append(ops, gradOp{name: "SwiGLU", inputs: map[string][]float32{"gate": gate, "up": up}, nOut: len(up),
			forward: func(y []float32) { SwiGLUForward(y, gate, up) },
			backward: func(dy []float32, g map[string][]float32) {
				SwiGLUBackward(g["gate"], g["up"], dy, gate, up)
			},
			forward64: func(y []float64, in map[string][]float64) { ref.SwiGLUForward(y, in["gate"], in["up"]) }})
	}
	{ // RoPE on (n=4, heads=2, D=6): Backward rotates in place, so the closure accumulates.
		n, heads, d := 4*s, 2, 6*s
		rope := NewRoPE(d, 16, 10000)
		positions := make([]int, n)
		for i := range positions {
			positions[i] = (i * 5) % 16
		}
		x := r(n * heads * d)
		ops = append(ops, gradOp{name: "RoPE", inputs: map[string][]float32{"x": x}, nOut: len(x),
			forward: func(y []float32) {
				copy(y, x)
				rope.Forward(y, positions, n, heads)
			},
			backward: func(dy []float32, g map[string][]float32) {
				if g["x"] == nil {
					return
				}
				tmp := append([]float32(nil), dy...)
				rope.Backward(tmp, positions, n, heads)
				Axpy(1, tmp, g["x"])
			},
			forward64: func(y []float64, in map[string][]float64) {
				copy(y, in["x"])
				ref.RoPEForward(y, positions, n, heads, d, 10000)
			}})
	}
	for _, c := range []struct {
		name             string
		B, T, Hq, Hkv, D int
		keyMask          []float32 // (B, T)
	}{
		{"Attention/gqa-leftpad", 2, 4, 4, 2, 3, []float32{1, 1, 1, 1, 0, 0, 1, 1}},
		{"Attention/mha-midpad", 1, 5, 2, 2, 4, []float32{1, 0, 1, 1, 0}},
		{"Attention/mqa", 1, 3, 3, 1, 2, []float32{1, 1, 1}},
		{"Attention/blocks", 1, 2*attnBlock + 3, 2, 1, 2, nil}, // several causal row blocks
	} {
		if c.keyMask == nil {
			if s > 1 {
				continue // already large
			}
			c.keyMask = make([]float32, c.B*c.T)
			for i := 5; i < len(c.keyMask); i++ {
				c.keyMask[i] = 1
			}
		}
		B, T, Hq, Hkv, D := c.B, c.T*s, c.Hq, c.Hkv, c.D*s
		keyMask := make([]float32, B*T) // c.keyMask's pattern, each entry repeated s times
		for i := range keyMask {
			keyMask[i] = c.keyMask[i/s]
		}
		q, k, v := r(B*T*Hq*D), r(B*T*Hkv*D), r(B*T*Hkv*D)
		probs := make([]float32, B*Hq*T*T)
		ops = append(ops, gradOp{name: c.name, inputs: map[string][]float32{"q": q, "k": k, "v": v}, nOut: B * T * Hq * D,
			forward: func(y []float32) { AttentionForward(y, probs, q, k, v, keyMask, B, T, Hq, Hkv, D) },
			backward: func(dy []float32, g map[string][]float32) {
				AttentionBackward(g["q"], g["k"], g["v"], dy, probs, q, k, v, B, T, Hq, Hkv, D)
			},
			forward64: func(y []float64, in map[string][]float64) {
				ref.AttentionForward(y, nil, nil, in["q"], in["k"], in["v"], to64(keyMask), B, T, Hq, Hkv, D)
			}})
	}
	{ // embedding with a repeated id
		d := 3 * s
		table := r(5 * d)
		ids := make([]int, 4*s)
		for i := range ids {
			ids[i] = []int{4, 0, 4, 2}[i%4]
		}
		ops = append(ops, gradOp{name: "Embedding", inputs: map[string][]float32{"table": table}, nOut: len(ids) * d,
			forward:   func(y []float32) { EmbeddingForward(y, table, ids, d) },
			backward:  func(dy []float32, g map[string][]float32) { EmbeddingBackward(g["table"], dy, ids, d) },
			forward64: func(y []float64, in map[string][]float64) { ref.EmbeddingForward(y, in["table"], ids, d) }})
	}
	{ // per-row log-probs, entropy, masked cross entropy and masked mean over logits (4, 6)
		n, V := 4*s, 6*s
		labels := make([]int, n)
		for i := range labels {
			labels[i] = (i * 7) % V
		}
		logits := r(n * V)
		logp := make([]float32, n)
		ops = append(ops, gradOp{name: "LogProbs", inputs: map[string][]float32{"logits": logits}, nOut: n,
			forward: func(y []float32) { LogProbsForward(y, logits, labels, n, V) },
			backward: func(dy []float32, g map[string][]float32) {
				LogProbsForward(logp, logits, labels, n, V)
				LogProbsBackward(g["logits"], dy, logits, logp, labels, n, V)
			},
			forward64: func(y []float64, in map[string][]float64) { ref.LogProbsForward(y, in["logits"], labels, n, V) }})
		logits2 := r(n * V)
		ent := make([]float32, n)
		ops = append(ops, gradOp{name: "Entropy", inputs: map[string][]float32{"logits": logits2}, nOut: n,
			forward: func(y []float32) { EntropyForward(y, logits2, n, V) },
			backward: func(dy []float32, g map[string][]float32) {
				EntropyForward(ent, logits2, n, V)
				EntropyBackward(g["logits"], dy, logits2, ent, n, V)
			},
			forward64: func(y []float64, in map[string][]float64) { ref.EntropyForward(y, in["logits"], n, V) }})
		logits3 := r(n * V)
		mask := make([]float32, n)
		for i := range mask {
			mask[i] = []float32{1, 0, 0.5, 1}[i%4]
		}
		ops = append(ops, gradOp{name: "CrossEntropyMasked", inputs: map[string][]float32{"logits": logits3}, nOut: 1,
			forward: func(y []float32) { y[0] = CrossEntropyMaskedForward(logits3, labels, mask, n, V) },
			backward: func(dy []float32, g map[string][]float32) {
				CrossEntropyMaskedBackward(g["logits"], dy[0], logits3, labels, mask, n, V)
			}})
		x := r(6 * s)
		mmask := make([]float32, len(x))
		for i := range mmask {
			mmask[i] = []float32{0, 1, 1, 0, 2, 1}[i%6]
		}
		ops = append(ops, gradOp{name: "MaskedMean", inputs: map[string][]float32{"x": x}, nOut: 1,
			forward:  func(y []float32) { y[0] = MaskedMean(x, mmask) },
			backward: func(dy []float32, g map[string][]float32) { MaskedMeanBackward(g["x"], dy[0], mmask) }})
	}
	return ops
}
