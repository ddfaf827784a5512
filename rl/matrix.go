package rl

import "fmt"

// Matrix is a per-token array of a batch of responses: B rows (one per response) of L token
// positions (the padded response length), stored row-major, so token t of response i is
// Data[i*L+t]. Masks are Matrices of 0.0/1.0 values, exactly as verl passes them around.
type Matrix struct {
	B, L int       // rows (responses) and columns (token positions)
	Data []float64 // (B, L) row-major
}

// NewMatrix returns a zero (B, L) matrix. It panics if b or l is negative.
func NewMatrix(b, l int) Matrix {
	if b < 0 || l < 0 {
		panic(fmt.Sprintf("rl.NewMatrix: negative shape (%d, %d)", b, l))
	}
	return Matrix{B: b, L: l, Data: make([]float64, b*l)}
}

// MatrixOf wraps data (row-major (B, L), not copied) as a Matrix. It panics if len(data) != b*l.
func MatrixOf(b, l int, data []float64) Matrix {
	if b < 0 || l < 0 || len(data) != b*l {
		panic(fmt.Sprintf("rl.MatrixOf: shape (%d, %d) needs %d values, got %d", b, l, b*l, len(data)))
	}
	return Matrix{B: b, L: l, Data: data}
}

// Row returns row i (length L), sharing storage with m. It panics if i is out of range.
func (m Matrix) Row(i int) []float64 {
	if i < 0 || i >= m.B {
		panic(fmt.Sprintf("rl.Matrix.Row: row %d out of range [0, %d)", i, m.B))
	}
	return m.Data[i*m.L : (i+1)*m.L]
}

// At returns token t of response i.
func (m Matrix) At(i, t int) float64 { return m.Data[i*m.L+t] }

// Clone returns a deep copy of m.
func (m Matrix) Clone() Matrix {
	return Matrix{B: m.B, L: m.L, Data: append([]float64(nil), m.Data...)}
}

// sameShape panics unless every matrix in ms has the shape of m. fn names the caller.
func sameShape(fn string, m Matrix, ms ...Matrix) {
	if len(m.Data) != m.B*m.L {
		panic(fmt.Sprintf("rl.%s: matrix of shape (%d, %d) holds %d values", fn, m.B, m.L, len(m.Data)))
	}
	for k, o := range ms {
		if o.B != m.B || o.L != m.L || len(o.Data) != len(m.Data) {
			panic(fmt.Sprintf("rl.%s: argument %d has shape (%d, %d), want (%d, %d)", fn, k+2, o.B, o.L, m.B, m.L))
		}
	}
}

// Logits is a (B, L, V) array of next-token logits: Data[(i*L+t)*V+k] is the logit of vocabulary
// entry k at token t of response i.
type Logits struct {
	B, L, V int       // batch size, response length, vocabulary size
	Data    []float64 // (B, L, V) row-major
}

// row returns the V logits of token t of response i.
func (z Logits) row(i, t int) []float64 {
	o := (i*z.L + t) * z.V
	return z.Data[o : o+z.V]
}

func (z Logits) check(fn string) {
	if z.B < 0 || z.L < 0 || z.V <= 0 || len(z.Data) != z.B*z.L*z.V {
		panic(fmt.Sprintf("rl.%s: logits of shape (%d, %d, %d) hold %d values", fn, z.B, z.L, z.V, len(z.Data)))
	}
}
