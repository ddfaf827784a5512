package tensor

// elemChunk is the minimum number of elements one worker takes in elementwise kernels.
const elemChunk = 1 << 14

// sigmoid returns 1/(1+exp(-x)), evaluated in float64 (no overflow: exp(-x) may reach +Inf,
// giving 0).
func sigmoid(x float32) float32 {
	return float32(1 / (1 + expF64(-float64(x))))
}

// SiLUForward computes y = silu(x) = x * sigmoid(x) (Elfwing et al. 2018; torch.nn.SiLU),
// elementwise, overwriting y. It panics if len(y) != len(x).
func SiLUForward(y, x []float32) {
	mustLen("SiLUForward", "y", y, len(x))
	Parallel(len(x), elemChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			y[i] = x[i] * sigmoid(x[i])
		}
	})
}

// SiLUBackward accumulates the gradient of y = silu(x):
//
//	dx += dy * s * (1 + x * (1 - s)),   s = sigmoid(x)
//
// dx may be nil. It panics if the lengths differ.
func SiLUBackward(dx, dy, x []float32) {
	mustLenOrNil("SiLUBackward", "dx", dx, len(x))
	mustLen("SiLUBackward", "dy", dy, len(x))
	if dx == nil {
		return
	}
	Parallel(len(x), elemChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := sigmoid(x[i])
			dx[i] += dy[i] * s * (1 + x[i]*(1-s))
		}
	})
}

// SwiGLUForward computes the gated activation of the Qwen2 MLP (Shazeer 2020, "GLU Variants
// Improve Transformer"; Hugging Face Qwen2MLP: act_fn(gate_proj(x)) * up_proj(x)), elementwise,
// overwriting y:
//
//	y = silu(gate) * up
//
// It panics if the lengths differ.
func SwiGLUForward(y, gate, up []float32) {
	mustLen("SwiGLUForward", "y", y, len(gate))
	mustLen("SwiGLUForward", "up", up, len(gate))
	Parallel(len(gate), elemChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := gate[i]
			y[i] = g * sigmoid(g) * up[i]
		}
	})
}

// SwiGLUBackward accumulates the gradients of y = silu(gate) * up:
//
//	dgate += dy * up * s * (1 + gate * (1 - s)),   s = sigmoid(gate)
//	dup   += dy * silu(gate)
//
// dgate or dup may be nil. It panics if the lengths differ.
func SwiGLUBackward(dgate, dup, dy, gate, up []float32) {
	n := len(gate)
	mustLenOrNil("SwiGLUBackward", "dgate", dgate, n)
	mustLenOrNil("SwiGLUBackward", "dup", dup, n)
	mustLen("SwiGLUBackward", "dy", dy, n)
	mustLen("SwiGLUBackward", "up", up, n)
	if dgate == nil && dup == nil {
		return
	}
	Parallel(n, elemChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := gate[i]
			s := sigmoid(g)
			if dgate != nil {
				dgate[i] += dy[i] * up[i] * s * (1 + g*(1-s))
			}
			if dup != nil {
				dup[i] += dy[i] * g * s
			}
		}
	})
}
