package tensor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestBroadcastShape(t *testing.T) {
	cases := []struct {
		x, y, want []int
		err        string // a part of the error, "" for none
	}{
		{[]int{3, 1}, []int{2, 3, 5}, []int{2, 3, 5}, ""},
		{[]int{2, 3, 5}, []int{3, 1}, []int{2, 3, 5}, ""},
		{[]int{4, 1, 5}, []int{3, 1}, []int{4, 3, 5}, ""},
		{[]int{}, []int{2, 3}, []int{2, 3}, ""}, // a scalar
		{[]int{1}, []int{1}, []int{1}, ""},
		{[]int{0, 1}, []int{3}, []int{0, 3}, ""},
		{[]int{5}, []int{2, 1}, []int{2, 5}, ""},
		{[]int{3, 2}, []int{2, 3, 5}, nil, "shapes [3 2] and [2 3 5] do not broadcast: size 2 against 5 at dimension -1"},
		{[]int{2, 4}, []int{3, 4}, nil, "size 2 against 3 at dimension -2"},
		{[]int{0}, []int{2}, nil, "size 0 against 2"},
	}
	for _, c := range cases {
		got, err := BroadcastShape(c.x, c.y)
		switch {
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("BroadcastShape(%v, %v) = %v, %v; want %v", c.x, c.y, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("BroadcastShape(%v, %v) error = %v, want one containing %q", c.x, c.y, err, c.err)
		}
	}
}

// TestBroadcastByHand checks add and multiply, forward and backward, on a (2, 1) x against a
// (3) y, worked out by hand: z (2, 3).
func TestBroadcastByHand(t *testing.T) {
	x, y := FromSlice([]float32{1, 2}, 2, 1), FromSlice([]float32{10, 20, 30}, 3)
	dz := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	for _, c := range []struct {
		name       string
		z, dx, dy  []float32
		forward    func(z, x, y *Tensor)
		backward   func(dx, dy *Tensor)
		zShapeWant []int
	}{
		{"add", []float32{11, 21, 31, 12, 22, 32}, []float32{1 + 2 + 3, 4 + 5 + 6}, []float32{1 + 4, 2 + 5, 3 + 6},
			BroadcastAddForward, func(dx, dy *Tensor) { BroadcastAddBackward(dx, dy, dz) }, []int{2, 3}},
		{"mul", []float32{10, 20, 30, 20, 40, 60}, []float32{1*10 + 2*20 + 3*30, 4*10 + 5*20 + 6*30}, []float32{1*1 + 4*2, 2*1 + 5*2, 3*1 + 6*2},
			BroadcastMulForward, func(dx, dy *Tensor) { BroadcastMulBackward(dx, dy, dz, x, y) }, []int{2, 3}},
	} {
		z := New(c.zShapeWant...)
		c.forward(z, x, y)
		if !slices.Equal(z.Data, c.z) {
			t.Errorf("%s: z = %v, want %v", c.name, z.Data, c.z)
		}
		dx, dy := New(2, 1), New(3)
		c.backward(dx, dy)
		if !slices.Equal(dx.Data, c.dx) || !slices.Equal(dy.Data, c.dy) {
			t.Errorf("%s: dx = %v, dy = %v; want %v, %v", c.name, dx.Data, dy.Data, c.dx, c.dy)
		}
		c.backward(nil, dy) // a nil gradient is skipped
		if want := []float32{2 * c.dy[0], 2 * c.dy[1], 2 * c.dy[2]}; !slices.Equal(dy.Data, want) {
			t.Errorf("%s: dy after a second backward = %v, want %v", c.name, dy.Data, want)
		}
	}
}

// TestBroadcastRule checks the broadcast add and multiply on random broadcastable shapes (the
// (3, 1) against (2, 3, 5) case first) against PyTorch's rule written out independently: the
// operand element of result index idx is at idx_d mod size_d along each aligned dimension (the
// size being 1 or the result's), and its gradient is the sum of the result's gradient over
// every result index that reads it.
func TestBroadcastRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	pairs := [][2][]int{{{3, 1}, {2, 3, 5}}, {{1, 4, 1}, {3, 1, 2}}, {{}, {2, 2}}}
	for range 20 { // random pairs: a result shape, each operand dropping leading dims and setting 1s
		out := make([]int, 1+rng.IntN(4))
		for d := range out {
			out[d] = 1 + rng.IntN(4)
		}
		var pair [2][]int
		for o := range pair {
			s := slices.Clone(out[rng.IntN(len(out)+1):])
			for d := range s {
				if rng.IntN(3) == 0 {
					s[d] = 1
				}
			}
			pair[o] = s
		}
		pairs = append(pairs, pair)
	}
	for _, p := range pairs {
		xs, ys := p[0], p[1]
		shape, err := BroadcastShape(xs, ys)
		if err != nil {
			t.Fatalf("%v and %v: %v", xs, ys, err)
		}
		x, y := FromSlice(randSlice(rng, numelOf("x", xs)), xs...), FromSlice(randSlice(rng, numelOf("y", ys)), ys...)
		dz := FromSlice(randSlice(rng, numelOf("z", shape)), shape...)
		add, mul := New(shape...), New(shape...)
		BroadcastAddForward(add, x, y)
		BroadcastMulForward(mul, x, y)
		dxAdd, dyAdd, dxMul, dyMul := New(xs...), New(ys...), New(xs...), New(ys...)
		BroadcastAddBackward(dxAdd, dyAdd, dz)
		BroadcastMulBackward(dxMul, dyMul, dz, x, y)
		wantDx, wantDy, wantDxMul, wantDyMul := New(xs...), New(ys...), New(xs...), New(ys...)
		name := fmt.Sprintf("%v with %v", xs, ys)
		for i := range dz.Data {
			idx := unravel(i, shape)
			ix, iy := operandIndex(idx, xs), operandIndex(idx, ys)
			if a := x.Data[ix] + y.Data[iy]; add.Data[i] != a {
				t.Fatalf("%s: add z%v = %v, want %v", name, idx, add.Data[i], a)
			}
			if m := x.Data[ix] * y.Data[iy]; mul.Data[i] != m {
				t.Fatalf("%s: mul z%v = %v, want %v", name, idx, mul.Data[i], m)
			}
			wantDx.Data[ix] += dz.Data[i]
			wantDy.Data[iy] += dz.Data[i]
			wantDxMul.Data[ix] += dz.Data[i] * y.Data[iy]
			wantDyMul.Data[iy] += dz.Data[i] * x.Data[ix]
		}
		for _, g := range []struct {
			name      string
			got, want *Tensor
		}{{"add dx", dxAdd, wantDx}, {"add dy", dyAdd, wantDy}, {"mul dx", dxMul, wantDxMul}, {"mul dy", dyMul, wantDyMul}} {
			if !slices.Equal(g.got.Data, g.want.Data) {
				t.Errorf("%s: %s = %v, want %v", name, g.name, g.got.Data, g.want.Data)
			}
		}
	}
}

// unravel returns the row-major multi-index of element i of shape.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
	return idx
}

// operandIndex returns the flat index in an operand of shape s (right-aligned against the
// result) of the element that result index idx reads: idx_d mod s_d along each dimension.
func operandIndex(idx, s []int) int {
	off := len(idx) - len(s)
	flat := 0
	for d, size := range s {
		flat = flat*size + idx[off+d]%size
	}
	return flat
}

// TestBroadcastShapeErrors checks that mismatched shapes panic with the shapes named.
func TestBroadcastShapeErrors(t *testing.T) {
	x, y := New(3, 2), New(2, 3, 5)
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"forward", "tensor.BroadcastAddForward: shapes [3 2] and [2 3 5] do not broadcast", func() { BroadcastAddForward(New(2, 3, 5), x, y) }},
		{"result shape", "tensor.BroadcastMulForward: result has shape [3 5], want [2 3 5]", func() { BroadcastMulForward(New(3, 5), New(3, 1), y) }},
		{"gradient shape", "tensor.BroadcastMulBackward: dx has shape [3], want [3 1]", func() {
			BroadcastMulBackward(New(3), nil, New(2, 3, 5), New(3, 1), y)
		}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("%s: panic %v, want one containing %q", c.name, r, c.want)
				}
			}()
			c.f()
		}()
	}
}
