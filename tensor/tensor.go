package tensor

import (
	"fmt"
	"strings"
)

// Tensor is a dense row-major float32 array with a shape. It is a thin convenience for code
// that wants to carry dimensions with its data (tests, the golden cases of golden/torchops);
// the kernels themselves take flat slices and explicit dimensions.
//
// The zero Tensor is a scalar-less empty tensor. Data is shared, not copied, by FromSlice and
// Reshape: a Tensor is a view onto its Data.
type Tensor struct {
	Shape []int     // dimensions, outermost first; empty for a scalar
	Data  []float32 // row-major values, len(Data) == product of Shape
}

// New returns a zero-filled tensor of the given shape (a scalar when no dimension is given).
// It panics if a dimension is negative.
func New(shape ...int) *Tensor {
	n := numelOf("tensor.New", shape)
	return &Tensor{Shape: append([]int(nil), shape...), Data: make([]float32, n)}
}

// FromSlice returns a tensor of the given shape viewing data (not copied). It panics if a
// dimension is negative or len(data) does not match the shape.
func FromSlice(data []float32, shape ...int) *Tensor {
	n := numelOf("tensor.FromSlice", shape)
	if len(data) != n {
		panic(fmt.Sprintf("tensor.FromSlice: shape %v needs %d values, got %d", shape, n, len(data)))
	}
	return &Tensor{Shape: append([]int(nil), shape...), Data: data}
}

// Numel returns the number of elements, the product of the shape.
func (t *Tensor) Numel() int { return len(t.Data) }

// Dim returns the size of dimension i, counting from the end when i is negative.
// It panics if i is out of range.
func (t *Tensor) Dim(i int) int {
	j := i
	if j < 0 {
		j += len(t.Shape)
	}
	if j < 0 || j >= len(t.Shape) {
		panic(fmt.Sprintf("tensor.Tensor.Dim: dimension %d out of range for shape %v", i, t.Shape))
	}
	return t.Shape[j]
}

// Reshape returns a view of the same data with a new shape. At most one dimension may be -1,
// meaning "whatever is left". It panics if the element counts differ or the shape is invalid.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	shape = append([]int(nil), shape...)
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			panic(fmt.Sprintf("tensor.Tensor.Reshape: invalid shape %v", shape))
		default:
			known *= d
		}
	}
	if infer >= 0 {
		if known == 0 || len(t.Data)%known != 0 {
			panic(fmt.Sprintf("tensor.Tensor.Reshape: cannot reshape %v (%d values) to %v", t.Shape, len(t.Data), shape))
		}
		shape[infer] = len(t.Data) / known
		known = len(t.Data)
	}
	if known != len(t.Data) {
		panic(fmt.Sprintf("tensor.Tensor.Reshape: cannot reshape %v (%d values) to %v", t.Shape, len(t.Data), shape))
	}
	return &Tensor{Shape: shape, Data: t.Data}
}

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{Shape: append([]int(nil), t.Shape...), Data: append([]float32(nil), t.Data...)}
}

// At returns the element at the given multi-index. It panics if the index does not match
// the shape.
func (t *Tensor) At(idx ...int) float32 { return t.Data[t.offset("At", idx)] }

// Set stores v at the given multi-index. It panics if the index does not match the shape.
func (t *Tensor) Set(v float32, idx ...int) { t.Data[t.offset("Set", idx)] = v }

// offset returns the flat row-major position of idx.
func (t *Tensor) offset(method string, idx []int) int {
	if len(idx) != len(t.Shape) {
		panic(fmt.Sprintf("tensor.Tensor.%s: %d indices for shape %v", method, len(idx), t.Shape))
	}
	off := 0
	for i, x := range idx {
		if x < 0 || x >= t.Shape[i] {
			panic(fmt.Sprintf("tensor.Tensor.%s: index %v out of range for shape %v", method, idx, t.Shape))
		}
		off = off*t.Shape[i] + x
	}
	return off
}

// String describes the tensor's shape and, for small tensors, its values.
func (t *Tensor) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tensor%v", t.Shape)
	if len(t.Data) <= 16 {
		fmt.Fprintf(&b, "%v", t.Data)
	}
	return b.String()
}

// numelOf returns the product of shape. It panics (naming fn) on a negative dimension.
func numelOf(fn string, shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("%s: negative dimension in shape %v", fn, shape))
		}
		n *= d
	}
	return n
}

// mustLen panics with "fn: name has len L, want n" unless len(s) == n.
func mustLen(fn, name string, s []float32, n int) {
	if len(s) != n {
		panic(fmt.Sprintf("tensor.%s: %s has len %d, want %d", fn, name, len(s), n))
	}
}

// mustLenOrNil is mustLen for optional (gradient) slices: nil means "not wanted".
func mustLenOrNil(fn, name string, s []float32, n int) {
	if s != nil {
		mustLen(fn, name, s, n)
	}
}

// mustDims panics unless every dimension is non-negative.
func mustDims(fn string, dims ...int) {
	for _, d := range dims {
		if d < 0 {
			panic(fmt.Sprintf("tensor.%s: negative dimension in %v", fn, dims))
		}
	}
}

// mustIDs panics unless every id is in [0, limit).
func mustIDs(fn, name string, ids []int, limit int) {
	for i, id := range ids {
		if id < 0 || id >= limit {
			panic(fmt.Sprintf("tensor.%s: %s[%d] = %d out of range [0, %d)", fn, name, i, id, limit))
		}
	}
}
