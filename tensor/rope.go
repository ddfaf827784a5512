package tensor

import (
	"fmt"
	"math"

	"agentr1/tensor/ref"
)

// RoPE holds the rotary position embedding tables (Su et al. 2021, "RoFormer", eq. 34) in the
// Hugging Face "rotate half" layout used by Qwen2: a head vector x of length D is split into
// halves x1 = x[:D/2], x2 = x[D/2:], and at position p with angle a_i = p * theta^(-2i/D)
//
//	y1_i = x1_i cos a_i - x2_i sin a_i
//	y2_i = x2_i cos a_i + x1_i sin a_i       (i < D/2)
//
// which is HF apply_rotary_pos_emb: x*cos + rotate_half(x)*sin with cos = cat(cos a, cos a).
// The angles are computed in float64 and the tables stored in float32.
type RoPE struct {
	HeadDim int       // D, even
	MaxPos  int       // positions must lie in [0, MaxPos)
	Theta   float64   // base of the frequencies (rope_theta), e.g. 10000 or 1e6
	cos     []float32 // (MaxPos, D/2): cos(p * theta^(-2i/D))
	sin     []float32 // (MaxPos, D/2): sin(p * theta^(-2i/D))
}

// NewRoPE precomputes the tables for head dimension headDim and positions [0, maxPos).
// It panics if headDim is not a positive even number or maxPos is negative.
func NewRoPE(headDim, maxPos int, theta float64) *RoPE {
	if headDim <= 0 || headDim%2 != 0 {
		panic(fmt.Sprintf("tensor.NewRoPE: headDim %d must be positive and even", headDim))
	}
	if maxPos < 0 {
		panic(fmt.Sprintf("tensor.NewRoPE: maxPos %d < 0", maxPos))
	}
	half := headDim / 2
	r := &RoPE{HeadDim: headDim, MaxPos: maxPos, Theta: theta,
		cos: make([]float32, maxPos*half), sin: make([]float32, maxPos*half)}
	for i := 0; i < half; i++ {
		invFreq := 1 / math.Pow(theta, float64(2*i)/float64(headDim))
		for p := 0; p < maxPos; p++ {
			s, c := math.Sincos(float64(p) * invFreq)
			r.cos[p*half+i] = float32(c)
			r.sin[p*half+i] = float32(s)
		}
	}
	return r
}

// Forward rotates x (n, heads, HeadDim) in place, row t at position positions[t] (n).
// It panics if a length does not match or a position is outside [0, MaxPos).
func (r *RoPE) Forward(x []float32, positions []int, n, heads int) {
	r.apply("RoPE.Forward", x, positions, n, heads, 1)
}

// Backward turns the gradient with respect to RoPE's output into the gradient with respect to
// its input, in place on dx (n, heads, HeadDim): the rotation is orthogonal, so this is the
// inverse rotation (angle -a). Unlike the other backward functions it does not accumulate:
// it transforms dx where it lies. It panics as Forward does.
func (r *RoPE) Backward(dx []float32, positions []int, n, heads int) {
	r.apply("RoPE.Backward", dx, positions, n, heads, -1)
}

// apply rotates every head vector of x by angle sign*a(position).
func (r *RoPE) apply(fn string, x []float32, positions []int, n, heads int, sign float32) {
	mustDims(fn, n, heads)
	d := r.HeadDim
	mustLen(fn, "x", x, n*heads*d)
	if len(positions) != n {
		panic(fmt.Sprintf("tensor.%s: positions has len %d, want %d", fn, len(positions), n))
	}
	mustIDs(fn, "positions", positions, r.MaxPos)
	if active.ref && sign > 0 {
		ref.RoPEForward(x, positions, n, heads, d, r.Theta)
		return
	}
	if active.ref {
		ref.RoPEBackward(x, positions, n, heads, d, r.Theta)
		return
	}
	if serial(n, rowChunk(heads*d)) {
		r.rotateRows(x, positions, 0, n, heads, sign)
		return
	}
	Parallel(n, rowChunk(heads*d), func(lo, hi int) { r.rotateRows(x, positions, lo, hi, heads, sign) })
}

// rotateRows is apply on the tokens [lo, hi).
func (r *RoPE) rotateRows(x []float32, positions []int, lo, hi, heads int, sign float32) {
	d, half := r.HeadDim, r.HeadDim/2
	for t := lo; t < hi; t++ {
		p := positions[t]
		cos, sin := r.cos[p*half:(p+1)*half], r.sin[p*half:(p+1)*half] // (D/2)
		active.ropeRow(x[t*heads*d:(t+1)*heads*d], heads, cos, sin, sign)
	}
}

// ropeRowGeneric rotates the heads head vectors of one token, x (heads, 2*len(cos)), by the
// angles whose cosines and sines are cos and sin (len(cos) each), the sines times sign (+1
// forward, -1 backward): RoPE's row loop. Every kernel set's ropeRow matches it bit for bit;
// the conversions round each product to float32, so that no compiler setting fuses them into
// multiply-adds.
func ropeRowGeneric(x []float32, heads int, cos, sin []float32, sign float32) {
	half := len(cos)
	sin = sin[:half]
	for h := 0; h < heads; h++ {
		x1, x2 := x[2*h*half:(2*h+1)*half], x[(2*h+1)*half:(2*h+2)*half] // (D/2) each
		for i, c := range cos {
			s := sign * sin[i]
			a, b := x1[i], x2[i]
			x1[i] = float32(a*c) - float32(b*s)
			x2[i] = float32(b*c) + float32(a*s)
		}
	}
}
