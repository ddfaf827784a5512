package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gemmCase is one Gemm problem; the pads make lda, ldb, ldc larger than the rows they stride.
type gemmCase struct {
	m, n, k          int
	padA, padB, padC int
}

// gemmShapes covers the awkward corners of the blocked driver: dimensions of 1, primes, exact
// and off-by-one register tiles of every kernel (2x4, 6x16, 12x32), depth above kc (several pc
// blocks, unequal split), rows above mc (several ic blocks), columns above nc (several jc
// blocks), problems large enough to be split across workers, one of them over several column
// blocks and depth slices, a stored B wide enough to be packed row by row (packBRowsMinLd),
// the part kernels' rows (4 of 6, 8 of 12) alone and after full tiles, and empty products
// (m, n or k = 0).
var gemmShapes = []gemmCase{
	{1, 1, 1, 0, 0, 0},
	{1, 1, 7, 1, 0, 2},
	{1, 17, 3, 0, 3, 0},
	{17, 1, 3, 2, 0, 1},
	{2, 3, 4, 0, 0, 0},
	{5, 7, 1, 3, 1, 5},
	{4, 4, 4, 0, 0, 0},
	{6, 16, 8, 0, 0, 0},
	{7, 17, 9, 1, 2, 3},
	{12, 32, 5, 0, 0, 0},
	{13, 33, 3, 4, 0, 7},
	{11, 29, 257, 0, 5, 0},
	{31, 47, 300, 2, 2, 2},
	{64, 64, 64, 0, 0, 0},
	{97, 89, 113, 3, 0, 1},
	{149, 37, 23, 0, 1, 0},
	{3, 5, 1031, 1, 1, 1},
	{2, 9, 13, 1, 2, 1},
	{3, 40, 33, 1, 3, 2},
	{5, 33, 64, 0, 1, 0},
	{1, 1, 1025, 0, 0, 0},
	{9, 3100, 7, 0, 3, 4},
	{130, 131, 70, 1, 0, 2},
	{19, 601, 97, 0, 0, 9},
	{14, 3100, 260, 1, 2, 3},
	{13, 4100, 37, 1, 0, 2},
	{8, 33, 64, 0, 1, 0},
	{20, 70, 300, 1, 2, 0},
	{0, 5, 3, 0, 0, 0},
	{4, 0, 3, 0, 0, 1},
	{3, 4, 0, 0, 0, 1},
}

// gemmScalars are the (alpha, beta) pairs tried on every shape; beta == 0 also poisons C's
// region with NaN, which Gemm must ignore. alpha == 1 with a transposed A is read in place
// where the kernel set has a strided micro-kernel: with beta 0 the first depth slice stores
// (gemmKernelStridedSet), with beta 0.5 it adds (gemmKernelStrided).
var gemmScalars = []struct{ alpha, beta float32 }{
	{1, 0},
	{1, 0.5},
	{0.5, 1},
	{-1.5, 0.25},
	{2, -1},
	{0, 0.5},
}

// fillMatrix returns rows x cols random values in [-1, 1) at stride ld, with NaN in the slack
// of every row (columns cols..ld) and in a tail of guard elements after the last row.
func fillMatrix(r *rand.Rand, rows, cols, ld int) []float32 {
	const guard = 8
	x := make([]float32, rows*ld+guard)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			x[i*ld+j] = 2*r.Float32() - 1
		}
	}
	return x
}

// gemmTolerances bounds |got - want| for every element of C from the magnitude of the terms
// summed, |alpha|*|op(A)|*|op(B)| + |beta|*|C|: float32 rounding of a k-term sum in any order,
// for both the result and the reference. The magnitudes come from gemmGeneric on absolute values,
// whose own rounding is far below the bound's slack.
func gemmTolerances(tc gemmCase, transA, transB bool, alpha, beta float32, a []float32, lda int, b []float32, ldb int, c0 []float32, ldc int) []float32 {
	abs := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(math.Abs(float64(v)))
		}
		return y
	}
	mag := abs(c0)
	absBeta := float32(math.Abs(float64(beta)))
	gemmGeneric(transA, transB, tc.m, tc.n, tc.k, float32(math.Abs(float64(alpha))), abs(a), lda, abs(b), ldb, absBeta, mag, ldc)
	for i := range mag {
		mag[i] = 2*float32(tc.k+2)*6e-8*mag[i] + 1e-30
	}
	return mag
}

// gemmFunc has Gemm's signature: the exported function, or one driver on one kernel set.
type gemmFunc func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// namedGemm is one implementation under test, named for failure messages.
type namedGemm struct {
	name    string
	threads int
	gemm    gemmFunc
}

// checkGemmAgainstGeneric builds one problem, computes it with gemmGeneric and, for each
// implementation, compares the result element by element and checks that every NaN guard
// around C's region is still NaN. Inputs, reference and tolerances are computed once.
func checkGemmAgainstGeneric(t *testing.T, name string, tc gemmCase, transA, transB bool, alpha, beta float32, impls []namedGemm) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(tc.m*1000003+tc.n*1009+tc.k), 7))
	ar, ac := tc.m, tc.k
	if transA {
		ar, ac = tc.k, tc.m
	}
	br, bc := tc.k, tc.n
	if transB {
		br, bc = tc.n, tc.k
	}
	lda, ldb, ldc := ac+tc.padA, bc+tc.padB, tc.n+tc.padC
	a := fillMatrix(r, ar, ac, lda)
	b := fillMatrix(r, br, bc, ldb)
	c0 := fillMatrix(r, tc.m, tc.n, ldc)
	if beta == 0 {
		for i := 0; i < tc.m; i++ {
			for j := 0; j < tc.n; j++ {
				c0[i*ldc+j] = float32(math.NaN())
			}
		}
	}
	want := append([]float32(nil), c0...)
	gemmGeneric(transA, transB, tc.m, tc.n, tc.k, alpha, a, lda, b, ldb, beta, want, ldc)
	tol := gemmTolerances(tc, transA, transB, alpha, beta, a, lda, b, ldb, c0, ldc)

	defer SetWorkers(SetWorkers(1))
	got := make([]float32, len(c0))
	for _, impl := range impls {
		name := fmt.Sprintf("impl=%s/threads=%d/%s", impl.name, impl.threads, name)
		SetWorkers(impl.threads)
		copy(got, c0)
		impl.gemm(transA, transB, tc.m, tc.n, tc.k, alpha, a, lda, b, ldb, beta, got, ldc)
		bad := 0
		for idx := range got {
			i, j := idx/ldc, idx%ldc
			if i >= tc.m || j >= tc.n {
				if !math.IsNaN(float64(got[idx])) {
					t.Errorf("%s: guard C[%d] (row %d col %d) = %v, was NaN: written outside C", name, idx, i, j, got[idx])
					bad++
				}
			} else if d := math.Abs(float64(got[idx]) - float64(want[idx])); !(d <= float64(tol[idx])) {
				t.Errorf("%s: C(%d,%d) = %v, want %v", name, i, j, got[idx], want[idx])
				bad++
			}
			if bad >= 5 {
				t.Errorf("%s: stopping after 5 errors", name)
				break
			}
		}
	}
}

// loopKernel returns a plain-loop micro-kernel for an (mr, nr) tile, the Go equivalent each
// assembly stub documents: loopStridedKernel on a packed panel, whose step is mr.
func loopKernel(mr, nr int) func(k int, a, b, c []float32, ldc int) {
	strided := loopStridedKernel(mr, nr)
	return func(k int, a, b, c []float32, ldc int) { strided(k, a, mr, b, c, ldc) }
}

// loopStridedKernel returns a plain-loop micro-kernel for an (mr, nr) tile reading the A panel
// at a step of lda floats, A(i, p) = a[p*lda+i]: the Go equivalent of the strided assembly
// kernels.
func loopStridedKernel(mr, nr int) func(k int, a []float32, lda int, b, c []float32, ldc int) {
	return func(k int, a []float32, lda int, b, c []float32, ldc int) {
		for i := 0; i < mr; i++ {
			for j := 0; j < nr; j++ {
				var acc float32
				for p := 0; p < k; p++ {
					acc += a[p*lda+i] * b[p*nr+j]
				}
				c[i*ldc+j] += acc
			}
		}
	}
}

// tileTwins run the blocked driver with the tile and block sizes of the assembly kernel sets
// (6x16 avx2 and 12x32 avx512, each with its in-place transposed A) but plain-loop kernels,
// so the driver's handling of those shapes is tested on every machine, including ones that
// cannot run the assembly.
var tileTwins = []*kernels{
	{name: "loop6x16", mr: 6, nr: 16, kc: 256, mc: 120, nc: 3072, gemmKernel: loopKernel(6, 16),
		gemmKernelStrided: loopStridedKernel(6, 16),
		dot:               dotGeneric, dot4: dot4Generic, dot4x2: dot4x2Generic, max: rowMax, axpy: axpyGeneric, scal: scalGeneric},
	{name: "loop12x32", mr: 12, nr: 32, kc: 256, mc: 144, nc: 3072, gemmKernel: loopKernel(12, 32),
		gemmKernelStrided: loopStridedKernel(12, 32),
		dot:               dotGeneric, dot4: dot4Generic, dot4x2: dot4x2Generic, max: rowMax, axpy: axpyGeneric, scal: scalGeneric},
}

// gemmImpls lists every driver on every kernel set this machine supports, on one worker and on
// two and three (uneven bands), and the blocked driver on the tile twins.
func gemmImpls() []namedGemm {
	paths := []struct {
		name string
		run  func(ks *kernels, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	}{
		{"blocked", gemmBlocked},
		{"rows", gemmSmallRows},
	}
	var impls []namedGemm
	for _, ks := range tileTwins {
		for _, threads := range []int{1, 2} {
			impls = append(impls, namedGemm{ks.name + "/path=blocked", threads,
				func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
					gemmBlocked(ks, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
				}})
		}
	}
	for _, ks := range supportedKernels {
		for _, path := range paths {
			for _, threads := range []int{1, 2, 3} {
				impls = append(impls, namedGemm{ks.name + "/path=" + path.name, threads,
					func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
						path.run(ks, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
					}})
			}
		}
	}
	return impls
}

// TestGemmKernels checks both drivers of every kernel set this machine supports, on one and
// several workers, against gemmGeneric on every shape, transpose and scalar pair.
func TestGemmKernels(t *testing.T) { checkEveryGemmCase(t, gemmImpls()) }

// checkEveryGemmCase checks impls against gemmGeneric on every shape of gemmShapes, every
// transpose pair and every scalar pair of gemmScalars.
func checkEveryGemmCase(t *testing.T, impls []namedGemm) {
	t.Helper()
	for _, tc := range gemmShapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, s := range gemmScalars {
				name := fmt.Sprintf("%dx%dx%d/pad=%d,%d,%d/transA=%v/transB=%v/alpha=%v/beta=%v",
					tc.m, tc.k, tc.n, tc.padA, tc.padB, tc.padC, tr[0], tr[1], s.alpha, s.beta)
				checkGemmAgainstGeneric(t, name, tc, tr[0], tr[1], s.alpha, s.beta, impls)
			}
		}
	}
}

// TestGemmPublic checks the exported Gemm (the selected kernel set and driver, argument checks,
// early returns) against gemmGeneric.
func TestGemmPublic(t *testing.T) {
	impls := []namedGemm{{"Gemm:" + KernelName(), 1, Gemm}, {"Gemm:" + KernelName(), 2, Gemm}}
	for _, tc := range gemmShapes {
		for _, tr := range [][2]bool{{false, false}, {true, true}} {
			name := fmt.Sprintf("%dx%dx%d/transA=%v/transB=%v", tc.m, tc.k, tc.n, tr[0], tr[1])
			checkGemmAgainstGeneric(t, name+"/beta=0.5", tc, tr[0], tr[1], 0.75, 0.5, impls)
			checkGemmAgainstGeneric(t, name+"/beta=0", tc, tr[0], tr[1], 1, 0, impls)
		}
	}
}

// TestGemmAlphaZero checks that alpha == 0 leaves A and B unread, as BLAS does: NaN and Inf in
// them do not reach C, which becomes beta*C.
func TestGemmAlphaZero(t *testing.T) {
	const m, n, k = 7, 9, 5
	a := make([]float32, m*k) // (m, k)
	b := make([]float32, k*n) // (k, n)
	for i := range a {
		a[i] = float32(math.NaN())
	}
	for i := range b {
		b[i] = float32(math.Inf(1))
	}
	for _, beta := range []float32{0, 1, -2} {
		c := make([]float32, m*n) // (m, n)
		for i := range c {
			c[i] = float32(i)
		}
		Gemm(false, false, m, n, k, 0, a, k, b, n, beta, c, n)
		for i, v := range c {
			if want := beta * float32(i); v != want {
				t.Errorf("beta=%v: C[%d] = %v, want %v", beta, i, v, want)
				break
			}
		}
	}
}

// TestGemmPanics checks that malformed arguments panic with a message naming Gemm.
func TestGemmPanics(t *testing.T) {
	buf := make([]float32, 64)
	cases := []struct {
		name string
		call func()
	}{
		{"negative m", func() { Gemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }},
		{"lda < k", func() { Gemm(false, false, 2, 2, 3, 1, buf, 2, buf, 2, 0, buf, 2) }},
		{"lda < m with transA", func() { Gemm(true, false, 3, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }},
		{"ldc < n", func() { Gemm(false, false, 2, 3, 2, 1, buf, 2, buf, 3, 0, buf, 2) }},
		{"short a", func() { Gemm(false, false, 9, 2, 8, 1, buf, 8, buf, 2, 0, buf, 2) }},
		{"short b", func() { Gemm(false, true, 2, 9, 8, 1, buf, 8, buf, 8, 0, buf, 9) }},
		{"short c", func() { Gemm(false, false, 2, 40, 1, 1, buf, 1, buf, 40, 0, buf, 40) }},
	}
	for _, tc := range cases {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if len(msg) < 12 || msg[:12] != "tensor.Gemm:" {
					t.Errorf("%s: panic %q, want one starting with tensor.Gemm:", tc.name, msg)
				}
			}()
			tc.call()
		}()
	}
}

// workerShapes adds to gemmShapes products large enough to be split across workers by each
// driver: few rows against many columns (gemmSmallRows splits the columns: four rows or more,
// two or three, and an odd column count, as attention's scores at T = 717 when one decoded
// row's block has 13 queries), and a blocked product of several A blocks and strips.
var workerShapes = []gemmCase{
	{13, 717, 32, 0, 0, 0},
	{3, 1501, 64, 1, 0, 0},
	{5, 2001, 300, 0, 1, 2},
	{40, 700, 300, 0, 0, 0},
	{100, 257, 130, 2, 0, 1},
}

// TestGemmWorkers checks that both drivers of every kernel set give the same bits on two and
// three workers as on one, for every shape and transpose and the scalar pairs that choose
// different kernels (in-place store and add, packed with a scale): a training step's
// results do not depend on how many cores ran it, nor on whether a shard's kernels got a
// second core when another shard finished first (tensor.Available).
func TestGemmWorkers(t *testing.T) {
	defer SetWorkers(SetWorkers(1))
	impls := gemmImpls()
	for _, tc := range append(slices.Clone(gemmShapes), workerShapes...) {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, s := range gemmScalars[:3] {
				r := rand.New(rand.NewPCG(uint64(tc.m*1000003+tc.n*1009+tc.k), 8))
				ar, ac := tc.m, tc.k
				if tr[0] {
					ar, ac = tc.k, tc.m
				}
				br, bc := tc.k, tc.n
				if tr[1] {
					br, bc = tc.n, tc.k
				}
				lda, ldb, ldc := ac+tc.padA, bc+tc.padB, tc.n+tc.padC
				a, b := fillMatrix(r, ar, ac, lda), fillMatrix(r, br, bc, ldb)
				c0 := fillMatrix(r, tc.m, tc.n, ldc)
				one := map[string][]float32{} // each implementation's result on one worker
				for _, impl := range impls {
					SetWorkers(impl.threads)
					got := slices.Clone(c0)
					impl.gemm(tr[0], tr[1], tc.m, tc.n, tc.k, s.alpha, a, lda, b, ldb, s.beta, got, ldc)
					want, ok := one[impl.name]
					if !ok || impl.threads == 1 {
						one[impl.name] = got
						continue
					}
					if i := bitDiff(got, want); i >= 0 {
						t.Errorf("impl=%s m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v: C[%d] = %v on %d workers, %v on one",
							impl.name, tc.m, tc.n, tc.k, tr[0], tr[1], s.alpha, s.beta, i, got[i], impl.threads, want[i])
					}
				}
			}
		}
	}
}
