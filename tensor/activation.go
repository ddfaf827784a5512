package tensor

import "agentr1/tensor/ref"

// elemChunk is the minimum number of elements one worker takes in elementwise kernels.
const elemChunk = 1 << 14

// sigmoidChunks calls f(c0, s) for consecutive chunks [c0, c0+len(s)) of x[lo:hi], with
// s[i] = sigmoid(x[c0+i]) = 1/(1+exp(-x[c0+i])) in a stack buffer of at most expChunk values:
// the exponentials of a chunk are one vectorised expShiftSum call. exp(-x) may reach +Inf,
// giving 0, so nothing overflows.
func sigmoidChunks(x []float32, lo, hi int, f func(c0 int, s []float32)) {
	var buf [expChunk]float32
	for c0 := lo; c0 < hi; c0 += expChunk {
		s := buf[:min(expChunk, hi-c0)]
		expShiftSum(s, x[c0:c0+len(s)], -1, 0) // s_i = exp(-x_i)
		active.sigmoidFinish(s)
		f(c0, s)
	}
}

// The elementwise arithmetic of the sigmoid and SwiGLU after the exponentials, in float32 in
// the order written, so that the assembly versions give the same results bit for bit. The
// explicit float32 conversions of products keep the compiler from fusing a product and a sum
// into one multiply-add (the Go spec allows it; the assembly rounds both).

// sigmoidFinishGeneric sets s[i] = 1/(1+s[i]), the sigmoid of x from s[i] = exp(-x[i]).
func sigmoidFinishGeneric(s []float32) {
	for i, e := range s {
		s[i] = 1 / (1 + e)
	}
}

// swiGLUFinishGeneric sets y[i] = gate[i] * (1/(1+e[i])) * up[i], silu(gate) * up from
// e[i] = exp(-gate[i]); all of length len(y).
func swiGLUFinishGeneric(y, gate, up, e []float32) {
	gate, up, e = gate[:len(y)], up[:len(y)], e[:len(y)]
	for i, ei := range e {
		y[i] = gate[i] * (1 / (1 + ei)) * up[i]
	}
}

// swiGLUGradGateGeneric adds dy[i] * up[i] * s[i] * (1 + gate[i]*(1-s[i])) to dgate[i], given
// s[i] = sigmoid(gate[i]); all of length len(dgate).
func swiGLUGradGateGeneric(dgate, dy, gate, up, s []float32) {
	dy, gate, up, s = dy[:len(dgate)], gate[:len(dgate)], up[:len(dgate)], s[:len(dgate)]
	for i, si := range s {
		dgate[i] += float32(dy[i] * up[i] * si * (1 + float32(gate[i]*(1-si))))
	}
}

// swiGLUGradUpGeneric adds dy[i] * gate[i] * s[i] to dup[i], given s[i] = sigmoid(gate[i]);
// all of length len(dup).
func swiGLUGradUpGeneric(dup, dy, gate, s []float32) {
	dy, gate, s = dy[:len(dup)], gate[:len(dup)], s[:len(dup)]
	for i, si := range s {
		dup[i] += float32(dy[i] * gate[i] * si)
	}
}

// SiLUForward computes y = silu(x) = x * sigmoid(x) (Elfwing et al. 2018; torch.nn.SiLU),
// elementwise, overwriting y. It panics if len(y) != len(x).
func SiLUForward(y, x []float32) {
	mustLen("SiLUForward", "y", y, len(x))
	if active.ref {
		ref.SiLUForward(y, x)
		return
	}
	Parallel(len(x), elemChunk, func(lo, hi int) {
		sigmoidChunks(x, lo, hi, func(c0 int, s []float32) {
			xc, yc := x[c0:c0+len(s)], y[c0:c0+len(s)]
			for i, si := range s {
				yc[i] = xc[i] * si
			}
		})
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
	if active.ref {
		ref.SiLUBackward(dx, dy, x)
		return
	}
	if dx == nil {
		return
	}
	Parallel(len(x), elemChunk, func(lo, hi int) {
		sigmoidChunks(x, lo, hi, func(c0 int, s []float32) {
			xc, dyc, dxc := x[c0:c0+len(s)], dy[c0:c0+len(s)], dx[c0:c0+len(s)]
			for i, si := range s {
				dxc[i] += dyc[i] * si * (1 + xc[i]*(1-si))
			}
		})
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
	if active.ref {
		ref.SwiGLUForward(y, gate, up)
		return
	}
	if serial(len(gate), elemChunk) {
		swiGLURange(y, gate, up, 0, len(gate))
		return
	}
	Parallel(len(gate), elemChunk, func(lo, hi int) { swiGLURange(y, gate, up, lo, hi) })
}

// swiGLURange is SwiGLUForward on the elements [lo, hi), expChunk at a time.
func swiGLURange(y, gate, up []float32, lo, hi int) {
	var buf [expChunk]float32
	for c0 := lo; c0 < hi; c0 += expChunk {
		s := buf[:min(expChunk, hi-c0)]
		expShiftSum(s, gate[c0:c0+len(s)], -1, 0) // s_i = exp(-gate_i)
		// silu(gate) * up, the sigmoid as sigmoidChunks forms it
		active.swiGLUFinish(y[c0:c0+len(s)], gate[c0:c0+len(s)], up[c0:c0+len(s)], s)
	}
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
	if active.ref {
		ref.SwiGLUBackward(dgate, dup, dy, gate, up)
		return
	}
	if dgate == nil && dup == nil {
		return
	}
	Parallel(n, elemChunk, func(lo, hi int) {
		sigmoidChunks(gate, lo, hi, func(c0 int, s []float32) {
			gc, uc, dyc := gate[c0:c0+len(s)], up[c0:c0+len(s)], dy[c0:c0+len(s)]
			if dgate != nil {
				active.swiGLUGradGate(dgate[c0:c0+len(s)], dyc, gc, uc, s)
			}
			if dup != nil {
				active.swiGLUGradUp(dup[c0:c0+len(s)], dyc, gc, s)
			}
		})
	})
}
