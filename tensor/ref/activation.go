package ref

import (
	"math"

	"golang.org/x/exp/constraints"
)

// sigmoid returns 1 / (1 + exp(-x)).
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// SiLUForward computes y = silu(x) = x * sigmoid(x) elementwise (Elfwing et al. 2018,
// "Sigmoid-Weighted Linear Units"; torch.nn.SiLU), overwriting y (len(x)).
func SiLUForward[F constraints.Float](y, x []F) {
	for i := range x {
		xi := float64(x[i])
		y[i] = F(xi * sigmoid(xi))
	}
}

// SiLUBackward accumulates the gradient of y = silu(x). With s = sigmoid(x) and s' = s(1-s),
//
//	dx += dy * (s + x s (1 - s)) = dy * s * (1 + x (1 - s))
//
// dx may be nil.
func SiLUBackward[F constraints.Float](dx, dy, x []F) {
	if dx == nil {
		return
	}
	for i := range x {
		xi := float64(x[i])
		s := sigmoid(xi)
		dx[i] += F(float64(dy[i]) * s * (1 + xi*(1-s)))
	}
}

// SwiGLUForward computes the gated activation of the Qwen2 MLP elementwise (Shazeer 2020, "GLU
// Variants Improve Transformer"; Hugging Face Qwen2MLP: act_fn(gate_proj(x)) * up_proj(x)),
// overwriting y:
//
//	y = silu(gate) * up          y, gate, up: (n)
func SwiGLUForward[F constraints.Float](y, gate, up []F) {
	for i := range gate {
		g := float64(gate[i])
		y[i] = F(g * sigmoid(g) * float64(up[i]))
	}
}

// SwiGLUBackward accumulates the gradients of y = silu(gate) * up, with s = sigmoid(gate):
//
//	dgate += dy * up * s * (1 + gate (1 - s))     (silu's derivative, see SiLUBackward)
//	dup   += dy * silu(gate)
//
// dgate or dup may be nil.
func SwiGLUBackward[F constraints.Float](dgate, dup, dy, gate, up []F) {
	for i := range gate {
		g, s := float64(gate[i]), sigmoid(float64(gate[i]))
		if dgate != nil {
			dgate[i] += F(float64(dy[i]) * float64(up[i]) * s * (1 + g*(1-s)))
		}
		if dup != nil {
			dup[i] += F(float64(dy[i]) * g * s)
		}
	}
}
