package tensor

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// vecLengths covers every tail length of the 8- and 16-wide loops and both unrolled main loops.
func vecLengths() []int {
	var ns []int
	for n := 0; n <= 70; n++ {
		ns = append(ns, n)
	}
	return append(ns, 127, 128, 129, 1000, 1031)
}

// guarded returns a buffer of n random values in [-1, 1) starting at offset off (so the data
// is not 32- or 64-byte aligned), with NaN guards before and after, and the slice of the data.
func guarded(r *rand.Rand, n, off int) (buf, x []float32) {
	const guard = 16
	buf = make([]float32, off+n+guard)
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	x = buf[off : off+n]
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return buf, x
}

// bitDiff returns the first index at which got and want (len(want) <= len(got)) differ bit for
// bit, or -1 if they are identical.
func bitDiff(got, want []float32) int {
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

// checkGuards reports an error for any element of buf outside [off, off+n) that is not NaN.
func checkGuards(t *testing.T, name string, buf []float32, off, n int) {
	t.Helper()
	for i, v := range buf {
		if (i < off || i >= off+n) && !math.IsNaN(float64(v)) {
			t.Errorf("%s: guard element %d (data at %d:%d) = %v, was NaN", name, i, off, off+n, v)
		}
	}
}

// TestVecKernels checks Dot, dot4, dot4x2, strip4x16, strip2x32, Axpy and Scal of every kernel set this machine supports against
// plain Go loops, over lengths 0..70 and longer, at unaligned offsets, with NaN guards.
func TestVecKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ks := range supportedKernels {
		for _, n := range vecLengths() {
			for _, off := range []int{0, 1, 3, 5} {
				name := fmt.Sprintf("impl=%s/n=%d/off=%d", ks.name, n, off)
				_, x := guarded(r, n, off+2)
				_, y := guarded(r, n, off)

				var want, mag float64
				for i := range x {
					want += float64(x[i]) * float64(y[i])
					mag += math.Abs(float64(x[i]) * float64(y[i]))
				}
				if got := ks.dot(x, y); math.Abs(float64(got)-want) > float64(n+1)*6e-8*mag {
					t.Errorf("%s: dot = %v, want %v", name, got, want)
				}

				// dot4: four rows at stride n+3, NaN in the slack between rows and after the last,
				// so reading past a row's end shows up as NaN.
				lda := n + 3
				abuf, _ := guarded(r, 0, off+3*lda+n)
				for row := 0; row < 4; row++ {
					for p := 0; p < n; p++ {
						abuf[off+row*lda+p] = 2*r.Float32() - 1
					}
				}
				var dots [4]float32
				ks.dot4(abuf[off:], lda, y, &dots)
				for row := range dots {
					var want4, mag4 float64
					for p := 0; p < n; p++ {
						want4 += float64(abuf[off+row*lda+p]) * float64(y[p])
						mag4 += math.Abs(float64(abuf[off+row*lda+p]) * float64(y[p]))
					}
					if got := dots[row]; !(math.Abs(float64(got)-want4) <= float64(n+1)*6e-8*mag4) {
						t.Errorf("%s: dot4 row %d = %v, want %v", name, row, got, want4)
					}
				}

				// dot4x2: the same four rows of A against two rows of B at stride ldb, NaN in the
				// slack after each B row, so reading past k elements of either shows up as NaN.
				ldb := n + 5
				bbuf, _ := guarded(r, 0, off+ldb+n)
				for c := 0; c < 2; c++ {
					for p := 0; p < n; p++ {
						bbuf[off+c*ldb+p] = 2*r.Float32() - 1
					}
				}
				var dots8 [8]float32
				ks.dot4x2(abuf[off:], lda, bbuf[off:], ldb, n, &dots8)
				for c := 0; c < 2; c++ {
					for row := 0; row < 4; row++ {
						var want8, mag8 float64
						for p := 0; p < n; p++ {
							prod := float64(abuf[off+row*lda+p]) * float64(bbuf[off+c*ldb+p])
							want8 += prod
							mag8 += math.Abs(prod)
						}
						if got := dots8[c*4+row]; !(math.Abs(float64(got)-want8) <= float64(n+1)*6e-8*mag8) {
							t.Errorf("%s: dot4x2 A row %d . B row %d = %v, want %v", name, row, c, got, want8)
						}
					}
				}

				// strip4x16 and strip2x32: four (two) rows of length n against the first cols
				// columns of an (n, cols) B at stride ldb, NaN in the slack of each B row and
				// after each A row.
				if ks.strip4x16 != nil {
					for _, cols := range []int{16, 1, 7, 8, 9, 15} {
						rows, b, ldb := stripInputs(r, 4, n, cols, off)
						var out [64]float32
						ks.strip4x16(n, (*[4][]float32)(rows), b, ldb, cols, &out)
						checkStrip(t, fmt.Sprintf("%s/cols=%d: strip4x16", name, cols), rows, b, ldb, cols, 16, out[:])
					}
				}
				if ks.strip2x32 != nil {
					for _, cols := range []int{32, 1, 7, 8, 15, 16, 17, 24, 31} {
						rows, b, ldb := stripInputs(r, 2, n, cols, off)
						var out [64]float32
						ks.strip2x32(n, rows[0], rows[1], b, ldb, cols, &out)
						checkStrip(t, fmt.Sprintf("%s/cols=%d: strip2x32", name, cols), rows, b, ldb, cols, 32, out[:])
					}
				}

				const alpha = float32(-0.75)
				ybuf, y2 := guarded(r, n, off)
				wantY := make([]float32, n)
				for i := range y2 {
					wantY[i] = y2[i] + alpha*x[i]
				}
				ks.axpy(alpha, x, y2)
				for i := range y2 {
					// One rounding (fused) or two (multiply, then add).
					if d := math.Abs(float64(y2[i]) - float64(wantY[i])); d > 2.4e-7*(math.Abs(float64(wantY[i]))+math.Abs(float64(alpha*x[i]))) {
						t.Errorf("%s: axpy y[%d] = %v, want %v", name, i, y2[i], wantY[i])
						break
					}
				}
				checkGuards(t, name+"/axpy", ybuf, off, n)

				xbuf, x2 := guarded(r, n, off)
				wantX := make([]float32, n)
				for i := range x2 {
					wantX[i] = 1.5 * x2[i]
				}
				ks.scal(1.5, x2)
				for i := range x2 {
					if x2[i] != wantX[i] {
						t.Errorf("%s: scal x[%d] = %v, want %v", name, i, x2[i], wantX[i])
						break
					}
				}
				checkGuards(t, name+"/scal", xbuf, off, n)
			}
		}
	}
}

// TestVecPublic checks the exported functions, their length checks and Scal's NaN semantics.
func TestVecPublic(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	y := make([]float32, len(x))
	for i := range y {
		y[i] = 1
	}
	if got := Dot(x, y); got != 153 {
		t.Errorf("Dot = %v, want 153", got)
	}
	Axpy(2, x, y)
	for i := range y {
		if want := 1 + 2*x[i]; y[i] != want {
			t.Errorf("Axpy: y[%d] = %v, want %v", i, y[i], want)
		}
	}
	z := []float32{float32(math.NaN()), float32(math.Inf(1)), 3}
	Scal(0, z)
	if !math.IsNaN(float64(z[0])) || !math.IsNaN(float64(z[1])) || z[2] != 0 {
		t.Errorf("Scal(0) = %v, want [NaN NaN 0]", z)
	}
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"Dot", func() { Dot(x, y[:3]) }},
		{"Axpy", func() { Axpy(1, x[:2], y) }},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); len(msg) < len("tensor.")+len(tc.name) || msg[:len("tensor.")+len(tc.name)] != "tensor."+tc.name {
					t.Errorf("%s with mismatched lengths: panic %q, want tensor.%s: ...", tc.name, msg, tc.name)
				}
			}()
			tc.call()
		}()
	}
}

// TestSelectKernels checks the AGENTR1_KERNELS parsing: empty picks the fastest, a supported
// name (any case) picks that set, anything else falls back to the fastest.
func TestSelectKernels(t *testing.T) {
	best := supportedKernels[len(supportedKernels)-1]
	if env, sel := os.Getenv(kernelEnv), selectKernels(os.Getenv(kernelEnv), io.Discard).name; KernelName() != sel {
		t.Errorf("KernelName() = %q, but %s=%q selects %q", KernelName(), kernelEnv, env, sel)
	}
	cases := []struct {
		want string
		name string
	}{
		{"", best.name},
		{"generic", "generic"},
		{" GENERIC ", "generic"},
		{"ref", "ref"},
		{"Ref", "ref"},
		{"avx1024", best.name},
	}
	for _, ks := range supportedKernels {
		cases = append(cases, struct{ want, name string }{ks.name, ks.name})
	}
	for _, tc := range cases {
		var warn strings.Builder
		if got := selectKernels(tc.want, &warn).name; got != tc.name {
			t.Errorf("selectKernels(%q) = %q, want %q", tc.want, got, tc.name)
		}
		// A warning exactly when the request was not honoured.
		honoured := strings.TrimSpace(strings.ToLower(tc.want)) == tc.name || tc.want == ""
		if got := warn.String(); honoured != (got == "") {
			t.Errorf("selectKernels(%q) warned %q", tc.want, got)
		}
	}
}

// TestSoftmaxGradKernels checks every kernel set's softmaxGrad against the Go loop, bit for
// bit (a subtraction and a product, no fused operation to round differently), over lengths
// around the vector widths at unaligned offsets, with NaN guards around d.
func TestSoftmaxGradKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, ks := range supportedKernels {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 64, 100, 257} {
			for _, off := range []int{0, 3} {
				_, p := guarded(r, n, off)
				buf, d := guarded(r, n, off)
				want := slices.Clone(d)
				c := 2*r.Float32() - 1
				for i := range want {
					want[i] = p[i] * (want[i] - c)
				}
				ks.softmaxGrad(p, d, c)
				name := fmt.Sprintf("impl=%s/n=%d/off=%d", ks.name, n, off)
				if i := bitDiff(d, want); i >= 0 {
					t.Errorf("%s: d[%d] = %v, want %v", name, i, d[i], want[i])
				}
				checkGuards(t, name, buf, off, n)
			}
		}
	}
}

// TestMaxKernels checks every kernel set's max against rowMax over lengths around the vector
// widths, with NaN (which both ignore), infinities and all-NaN rows.
func TestMaxKernels(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	r := rand.New(rand.NewPCG(31, 32))
	for _, ks := range supportedKernels {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 257} {
			for variant := range 5 {
				x := make([]float32, n)
				for i := range x {
					x[i] = 20*r.Float32() - 10
				}
				if n > 0 {
					switch variant {
					case 1: // NaN at the front, the maximum behind it
						x[0] = nan
					case 2: // NaN everywhere but one element
						for i := range x {
							x[i] = nan
						}
						x[r.IntN(n)] = -3
					case 3: // every element NaN: -Inf
						for i := range x {
							x[i] = nan
						}
					case 4: // infinities
						x[r.IntN(n)] = -inf
						x[r.IntN(n)] = inf
					}
				}
				got, want := ks.max(x), rowMax(x)
				if got != want && !(got == 0 && want == 0) {
					t.Errorf("impl=%s/n=%d/variant=%d: max = %v, want %v", ks.name, n, variant, got, want)
				}
			}
		}
	}
}

// stripInputs returns the operands of a strip kernel test: nrows rows of length n, each
// followed by NaNs, and an (n, cols) B at stride ldb = cols+off+1 whose slack is NaN (b starts
// at its first value).
func stripInputs(r *rand.Rand, nrows, n, cols, off int) (rows [][]float32, b []float32, ldb int) {
	ldb = cols + off + 1
	buf, _ := guarded(r, 0, off+max(n-1, 0)*ldb+cols)
	for p := 0; p < n; p++ {
		for j := 0; j < cols; j++ {
			buf[off+p*ldb+j] = 2*r.Float32() - 1
		}
	}
	rows = make([][]float32, nrows)
	for i := range rows {
		_, rows[i] = guarded(r, n, off)
	}
	return rows, buf[off:], ldb
}

// checkStrip compares a strip kernel's out (len(rows) x width) with float64 sums: out[i][j] is
// row i . column j of B for j < cols and 0 beyond, within (n+1) ulp-scale of the magnitudes.
func checkStrip(t *testing.T, label string, rows [][]float32, b []float32, ldb, cols, width int, out []float32) {
	t.Helper()
	for i, row := range rows {
		n := len(row)
		for j := 0; j < width; j++ {
			var want, mag float64
			for p := 0; p < n && j < cols; p++ {
				prod := float64(row[p]) * float64(b[p*ldb+j])
				want += prod
				mag += math.Abs(prod)
			}
			if got := out[i*width+j]; !(math.Abs(float64(got)-want) <= float64(n+1)*6e-8*mag) {
				t.Errorf("%s out[%d][%d] = %v, want %v", label, i, j, got, want)
			}
		}
	}
}

// TestArgmax checks argmax on every kernel set against the loop of Argmax's comment: random
// rows with repeated maxima, -Inf, zeros of both signs and NaN anywhere but the first element,
// lengths around the vector width; every element NaN gives 0; an empty x panics.
func TestArgmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, ks := range supportedKernels {
		for _, n := range []int{1, 2, 7, 8, 9, 16, 17, 33, 4096} {
			for trial := range 20 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.IntN(7) - 3) // small integers: repeated maxima
					switch rng.IntN(12) {
					case 0:
						x[i] = -inf
					case 1:
						x[i] = float32(math.Copysign(0, -1))
					case 2:
						if i > 0 {
							x[i] = nan
						}
					}
				}
				if trial == 0 {
					for i := range x {
						x[i] = -inf
					}
				}
				want := 0
				for i, v := range x {
					if v > x[want] {
						want = i
					}
				}
				if got := argmax(ks, x); got != want {
					t.Fatalf("%s n=%d trial %d: argmax = %d, want %d (x = %v)", ks.name, n, trial, got, want, x)
				}
			}
		}
		if got := argmax(ks, []float32{nan, nan, nan}); got != 0 {
			t.Errorf("%s: argmax of all NaN = %d, want 0", ks.name, got)
		}
	}
	defer func() {
		if msg, _ := recover().(string); msg != "tensor.Argmax: empty x" {
			t.Errorf("Argmax(nil) panicked with %q", msg)
		}
	}()
	Argmax(nil)
}

// TestSetKernels checks that SetKernels swaps the active set, returns the previous one, and
// refuses a name this machine cannot run without changing the set.
func TestSetKernels(t *testing.T) {
	start := KernelName()
	prev, err := SetKernels("ref")
	if err != nil || prev != start || KernelName() != "ref" || !active.ref {
		t.Errorf("SetKernels(ref) = %q, %v; KernelName() = %q, want %q, nil; ref", prev, err, KernelName(), start)
	}
	if _, err := SetKernels("avx1024"); err == nil || KernelName() != "ref" {
		t.Errorf("SetKernels(avx1024): err = %v, KernelName() = %q; want an error and ref kept", err, KernelName())
	}
	if prev, err := SetKernels(start); err != nil || prev != "ref" || KernelName() != start {
		t.Errorf("SetKernels(%s) = %q, %v; KernelName() = %q", start, prev, err, KernelName())
	}
}
