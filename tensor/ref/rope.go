package ref

import (
	"math"

	"golang.org/x/exp/constraints"
)

// RoPEForward applies the rotary position embedding (Su et al. 2021, "RoFormer", eq. 34) in
// place, in the Hugging Face "rotate half" layout Qwen2 uses: each head vector of length D is
// split into halves x1 = x[:D/2], x2 = x[D/2:], and at position p, with angle
// a_i = p * theta^(-2i/D),
//
//	y1_i = x1_i cos a_i - x2_i sin a_i
//	y2_i = x2_i cos a_i + x1_i sin a_i       (i < D/2)
//
//	x: (n, heads, D), token t at position positions[t]   positions: (n)
//
// The angles and the rotation are computed in float64.
func RoPEForward[F constraints.Float](x []F, positions []int, n, heads, D int, theta float64) {
	rotate(x, positions, n, heads, D, theta, 1)
}

// RoPEBackward turns the gradient with respect to RoPEForward's output into the gradient with
// respect to its input, in place on dx (n, heads, D): the rotation is orthogonal, so its
// transpose is the rotation by -a_i.
func RoPEBackward[F constraints.Float](dx []F, positions []int, n, heads, D int, theta float64) {
	rotate(dx, positions, n, heads, D, theta, -1)
}

// rotate rotates every head vector of x (n, heads, D) by sign * a_i(position).
func rotate[F constraints.Float](x []F, positions []int, n, heads, D int, theta float64, sign float64) {
	half := D / 2
	for t := 0; t < n; t++ {
		for h := 0; h < heads; h++ {
			v := x[(t*heads+h)*D : (t*heads+h+1)*D] // (D)
			for i := 0; i < half; i++ {
				a := float64(positions[t]) / math.Pow(theta, float64(2*i)/float64(D))
				sin, cos := math.Sincos(a)
				sin *= sign
				x1, x2 := float64(v[i]), float64(v[half+i])
				v[i] = F(x1*cos - x2*sin)
				v[half+i] = F(x2*cos + x1*sin)
			}
		}
	}
}
