package tensor

import (
	"fmt"
	"slices"
)

// Elementwise add and multiply under PyTorch's broadcasting rules in general (the NumPy rules
// PyTorch documents in "Broadcasting semantics"): the two shapes are aligned at their last
// dimensions, a missing leading dimension counts as 1, and each aligned pair must be equal or
// contain a 1; the result takes the larger size, and an operand of size 1 along a dimension is
// read at index 0 for every index of the result. For example
//
//	x: (3, 1)   y: (2, 3, 5)   z = x + y: (2, 3, 5),   z[a, b, c] = x[b, 0] + y[a, b, c]
//
// The backward sums the result's gradient over every dimension an operand was broadcast along.
// AddForward and MulForward above are the common case of a y whose shape is a trailing part
// of x's (a bias or a scale), on flat slices.

// BroadcastShape returns the shape x and y broadcast to, or an error naming both shapes and the
// first dimension (counted from the end, -1 the last) where neither size is 1 and they differ.
func BroadcastShape(x, y []int) ([]int, error) {
	out := make([]int, max(len(x), len(y)))
	for d := 1; d <= len(out); d++ { // d-th dimension from the end
		sx, sy := dimFromEnd(x, d), dimFromEnd(y, d)
		switch {
		case sx == sy || sy == 1:
			out[len(out)-d] = sx
		case sx == 1:
			out[len(out)-d] = sy
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast: size %d against %d at dimension %d", x, y, sx, sy, -d)
		}
	}
	return out, nil
}

// dimFromEnd returns the d-th dimension of shape from the end (d = 1 the last), or 1 where the
// shape has fewer than d dimensions.
func dimFromEnd(shape []int, d int) int {
	if d > len(shape) {
		return 1
	}
	return shape[len(shape)-d]
}

// broadcastWalk calls f(i, ix, iy) for every element i of the broadcast shape, in row-major
// order, with ix and iy the elements of x (shape xShape) and y (shape yShape) it combines.
func broadcastWalk(shape, xShape, yShape []int, f func(i, ix, iy int)) {
	xStride, yStride := broadcastStrides(xShape, shape), broadcastStrides(yShape, shape)
	idx := make([]int, len(shape)) // the multi-index of element i
	for i := range numelOf("tensor.broadcastWalk", shape) {
		ix, iy := 0, 0
		for d, k := range idx {
			ix += k * xStride[d]
			iy += k * yStride[d]
		}
		f(i, ix, iy)
		for d := len(idx) - 1; d >= 0; d-- { // the next multi-index, last dimension fastest
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// broadcastStrides returns, for each dimension of the broadcast shape out, the step in an
// operand of shape s (right-aligned against out) for one step of that dimension: the operand's
// row-major stride, or 0 where it has size 1 or no such dimension (it is broadcast).
func broadcastStrides(s, out []int) []int {
	strides := make([]int, len(out))
	step := 1
	for d := 1; d <= len(s); d++ {
		if size := s[len(s)-d]; size != 1 {
			strides[len(out)-d] = step
		}
		step *= s[len(s)-d]
	}
	return strides
}

// mustBroadcastTo panics unless x and y broadcast to z's shape.
func mustBroadcastTo(fn string, z, x, y *Tensor) []int {
	shape, err := BroadcastShape(x.Shape, y.Shape)
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: %v", fn, err))
	}
	if !slices.Equal(z.Shape, shape) {
		panic(fmt.Sprintf("tensor.%s: result has shape %v, want %v (x %v, y %v)", fn, z.Shape, shape, x.Shape, y.Shape))
	}
	return shape
}

// BroadcastAddForward computes z = x + y with x and y broadcast to z's shape, overwriting z.
// It panics if the shapes do not broadcast or z's shape is not BroadcastShape(x, y).
func BroadcastAddForward(z, x, y *Tensor) {
	shape := mustBroadcastTo("BroadcastAddForward", z, x, y)
	broadcastWalk(shape, x.Shape, y.Shape, func(i, ix, iy int) {
		z.Data[i] = x.Data[ix] + y.Data[iy]
	})
}

// BroadcastAddBackward accumulates the gradients of z = x + y (broadcast):
//
//	dx += dz summed over the dimensions x was broadcast along;   dy likewise
//
// dx and dy have x's and y's shapes; either may be nil. It panics as BroadcastAddForward does.
func BroadcastAddBackward(dx, dy, dz *Tensor) {
	xShape, yShape := gradShapes(dx, dy, dz)
	shape := mustBroadcastTo("BroadcastAddBackward", dz, &Tensor{Shape: xShape}, &Tensor{Shape: yShape})
	broadcastWalk(shape, xShape, yShape, func(i, ix, iy int) {
		if dx != nil {
			dx.Data[ix] += dz.Data[i]
		}
		if dy != nil {
			dy.Data[iy] += dz.Data[i]
		}
	})
}

// BroadcastMulForward computes z = x * y with x and y broadcast to z's shape, overwriting z.
// It panics if the shapes do not broadcast or z's shape is not BroadcastShape(x, y).
func BroadcastMulForward(z, x, y *Tensor) {
	shape := mustBroadcastTo("BroadcastMulForward", z, x, y)
	broadcastWalk(shape, x.Shape, y.Shape, func(i, ix, iy int) {
		z.Data[i] = x.Data[ix] * y.Data[iy]
	})
}

// BroadcastMulBackward accumulates the gradients of z = x * y (broadcast):
//
//	dx += dz * y summed over the dimensions x was broadcast along;   dy += dz * x likewise
//
// dx and dy have x's and y's shapes; either may be nil. It panics as BroadcastMulForward does,
// or if dx or dy does not have its operand's shape.
func BroadcastMulBackward(dx, dy, dz, x, y *Tensor) {
	shape := mustBroadcastTo("BroadcastMulBackward", dz, x, y)
	for _, g := range []struct {
		name     string
		grad, of *Tensor
	}{{"dx", dx, x}, {"dy", dy, y}} {
		if g.grad != nil && !slices.Equal(g.grad.Shape, g.of.Shape) {
			panic(fmt.Sprintf("tensor.BroadcastMulBackward: %s has shape %v, want %v", g.name, g.grad.Shape, g.of.Shape))
		}
	}
	broadcastWalk(shape, x.Shape, y.Shape, func(i, ix, iy int) {
		if dx != nil {
			dx.Data[ix] += dz.Data[i] * y.Data[iy]
		}
		if dy != nil {
			dy.Data[iy] += dz.Data[i] * x.Data[ix]
		}
	})
}

// gradShapes returns the operand shapes of an add's backward from its gradients: a nil
// gradient's operand is taken as dz's shape, which broadcasts with anything dz's shape holds.
func gradShapes(dx, dy, dz *Tensor) (xShape, yShape []int) {
	xShape, yShape = dz.Shape, dz.Shape
	if dx != nil {
		xShape = dx.Shape
	}
	if dy != nil {
		yShape = dy.Shape
	}
	return xShape, yShape
}
