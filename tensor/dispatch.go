package tensor

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// kernelEnv is the environment variable that forces a kernel set: ref, generic, avx2 or avx512.
const kernelEnv = "AGENTR1_KERNELS"

// kernels is one implementation of the SIMD-accelerated primitives: the sgemm micro-kernel with
// its tile and cache-block sizes, and the vector primitives behind Dot, Axpy and Scal.
//
// The micro-kernel contract (all implementations, Go and assembly alike):
//
//	gemmKernel(k, a, b, c, ldc): C(mr, nr) += Apanel(mr, k) * Bpanel(k, nr)
//	a: (k, mr) packed A micro-panel, a[p*mr+i] = A(i, p)
//	b: (k, nr) packed B micro-panel, b[p*nr+j] = B(p, j)
//	c: the tile's first element, row i at c[i*ldc:], mr full rows of nr columns
//
// The tile is always full: the driver pads panels with zeros and routes edge tiles through a
// scratch tile, so no kernel ever needs a masked or partial path.
type kernels struct {
	name string // "ref", "generic", "avx2" or "avx512": what KernelName reports

	// ref makes every operation run tensor/ref's plain loop instead of the loops below: each
	// exported operation checks it once on entry (see refKernels).
	ref bool

	mr, nr int // register tile: rows of C (A panel height) and columns of C (B panel width)
	kc     int // depth of one packed block: a (kc, nr) B micro-panel should sit in L1
	mc     int // rows of a packed A block (mc, kc), sized for L2; a multiple of mr
	nc     int // columns of a packed B block (kc, nc), sized for L3; a multiple of nr

	gemmKernel func(k int, a, b, c []float32, ldc int)

	// gemmKernelSet, when not nil, is gemmKernel overwriting the tile (C = Apanel * Bpanel)
	// instead of adding to it; the driver uses it for the first k slice of a product with
	// beta = 0, which then never clears or reads C. Without it the driver clears C first.
	gemmKernelSet func(k int, a, b, c []float32, ldc int)

	// gemmKernelPart and gemmKernelPartSet, when not nil, are gemmKernel and gemmKernelSet for
	// the first partRows rows of an mr-row A panel only, C(partRows, nr): the driver uses them
	// for a last row panel of exactly partRows rows instead of a full tile through the scratch
	// tile.
	partRows                          int
	gemmKernelPart, gemmKernelPartSet func(k int, a, b, c []float32, ldc int)

	// packedMinRows is the fewest rows for which GemmPacked multiplies by the packed B rather
	// than by gemmSmallRows on the unpacked one: mr, or partRows where a part kernel makes a
	// panel of that many rows cheap.
	packedMinRows int

	// gemmKernelStrided and gemmKernelStridedSet, when not nil, are gemmKernel and
	// gemmKernelSet reading the A micro-panel in place at a step of lda floats, A(i, p) =
	// a[p*lda+i], instead of packed at a step of mr. The rows of a transposed A's stored matrix
	// are the columns of op(A), so its full panels are multiplied where they lie, unpacked.
	// Without gemmKernelStridedSet the driver clears C first, as without gemmKernelSet.
	gemmKernelStrided, gemmKernelStridedSet func(k int, a []float32, lda int, b, c []float32, ldc int)

	dot  func(x, y []float32) float32
	dot4 func(a []float32, lda int, b []float32, out *[4]float32) // rows 0-3 of a (stride lda) . b
	// dot4x2: out[c*4+r] = row r of a (stride lda) . row c of b (stride ldb), first k elements
	dot4x2 func(a []float32, lda int, b []float32, ldb, k int, out *[8]float32)
	// strip4x16: out[i*16+j] = sum_p a[i][p] * b[p*ldb+j], four rows of A against the first
	// cols (<= 16) columns of an unpacked B, over k, 0 in the other columns; nil where the
	// kernel set has none.
	strip4x16 func(k int, a *[4][]float32, b []float32, ldb, cols int, out *[64]float32)
	// strip2x32: out[i*32+j] = sum_p a_i[p] * b[p*ldb+j], two rows of A against the first cols
	// (<= 32) columns of an unpacked B, over k, 0 in the other columns; nil where the kernel
	// set has none.
	strip2x32 func(k int, a0, a1 []float32, b []float32, ldb, cols int, out *[64]float32)
	// max returns the largest element of x ignoring NaN (-Inf if none), as rowMax does up to
	// the sign of a zero maximum.
	max  func(x []float32) float32
	axpy func(alpha float32, x, y []float32)
	scal func(alpha float32, x []float32)
	// softmaxGrad sets d[i] = p[i] * (d[i] - c), len(d) >= len(p): a row of the softmax
	// backward dS = P ⊙ (dP − rowsum(P ⊙ dP)), given c, the row's P·dP.
	softmaxGrad func(p, d []float32, c float32)

	// expSum writes y[i] = exp(scale*x[i] - shift) and returns sum_i y[i] accumulated in
	// float64; len(y) == len(x), and y may be x (see expShiftSum).
	expSum func(y, x []float32, scale, shift float32) float64

	// adamw updates p, m and v (all len(p)) by one AdamW step from the gradient g, in float64
	// per element (see adamwGeneric, whose results every implementation matches bit for bit).
	adamw func(p, g, m, v []float32, c *adamStep)

	rowKernels
}

// rowKernels are the elementwise row loops of the activations, RMSNorm and RoPE, each
// matching its generic version bit for bit (the same float32 operations in the same order;
// RMSNorm's float64 sums in the lane order of rmsnorm.go). The avx512 set uses the avx2 set's
// (AVX-512F CPUs have AVX2, and these loops are bound by memory, not by vector width).
type rowKernels struct {
	// The arithmetic of the sigmoid and SwiGLU after their exponentials (activation.go).
	sigmoidFinish  func(s []float32)                      // s = 1/(1+s)
	swiGLUFinish   func(y, gate, up, e []float32)         // y = gate * (1/(1+e)) * up
	swiGLUGradGate func(dgate, dy, gate, up, s []float32) // dgate += dy*up*s*(1+gate*(1-s))
	swiGLUGradUp   func(dup, dy, gate, s []float32)       // dup += dy*gate*s

	// A row of RMSNorm's output, of its input gradient given the row's sums, and of its
	// weight gradient (rmsnorm.go).
	rmsScale      func(y, x, w []float32, r float32)        // y = w * (x * r)
	rmsGrad       func(dx, g, x, w []float32, r, c float32) // dx += r * (g*w - x*c)
	rmsWeightGrad func(dw, g, x []float32, r float32)       // dw += (g*x) * r
	// RMSNorm's float64 row sums of up to four rows of length d.
	rowSquareSums   func(ss *[4]float64, x []float32, rows, d int)       // ss[t] = sum x_t^2
	rowWeightedDots func(gx *[4]float64, g, w, x []float32, rows, d int) // gx[t] = sum g_t*w*x_t

	// ropeRow rotates one token's heads (x: heads vectors of 2*len(cos)) by RoPE's angles.
	ropeRow func(x []float32, heads int, cos, sin []float32, sign float32)
}

// packedRowsMin returns the fewest rows for which GemmPacked uses the packed B:
// packedMinRows, or mr where it is not set.
func (ks *kernels) packedRowsMin() int {
	if ks.packedMinRows > 0 {
		return ks.packedMinRows
	}
	return ks.mr
}

// genericKernels is the pure-Go implementation, compiled on every platform and with -tags purego.
var genericKernels = &kernels{
	name: "generic",
	mr:   2, nr: 4,
	kc: 256, mc: 128, nc: 2048,
	gemmKernel:  gemmKernel2x4Generic,
	dot:         dotGeneric,
	dot4:        dot4Generic,
	dot4x2:      dot4x2Generic,
	max:         rowMax,
	axpy:        axpyGeneric,
	scal:        scalGeneric,
	softmaxGrad: softmaxGradGeneric,
	expSum:      expSumGeneric,
	adamw:       adamwGeneric,

	rowKernels: rowKernels{
		sigmoidFinish:  sigmoidFinishGeneric,
		swiGLUFinish:   swiGLUFinishGeneric,
		swiGLUGradGate: swiGLUGradGateGeneric,
		swiGLUGradUp:   swiGLUGradUpGeneric,

		rmsScale:        rmsScaleGeneric,
		rmsGrad:         rmsGradGeneric,
		rmsWeightGrad:   rmsWeightGradGeneric,
		rowSquareSums:   rowSquareSumsGeneric,
		rowWeightedDots: rowWeightedDotsGeneric,

		ropeRow: ropeRowGeneric,
	},
}

// supportedKernels lists every implementation this machine can run, slowest first: generic,
// then what archKernels finds (avx2, avx512). Tests and benchmarks iterate over it.
var supportedKernels = append([]*kernels{genericKernels}, archKernels()...)

// active is the kernel set every operation uses, chosen at start-up (SetKernels swaps it).
var active = selectKernels(os.Getenv(kernelEnv), os.Stderr)

// KernelName reports the kernel set in use: "ref", "generic", "avx2" or "avx512". By default it
// is the fastest the CPU supports (detected with github.com/klauspost/cpuid/v2); the environment
// variable AGENTR1_KERNELS=ref|generic|avx2|avx512 forces one. "ref" runs every operation
// through package tensor/ref's plain loops, slowly, on any machine. Builds with -tags purego,
// and non-amd64 builds, use "generic" unless "ref" is asked for.
func KernelName() string { return active.name }

// selectKernels returns the implementation named by want, or the fastest supported one when want
// is empty. A name this machine cannot run (a typo, or avx512 on a CPU without AVX-512F) is not
// fatal: it writes one line to warn (stderr, at start-up) saying so and falls back to the fastest
// supported set, so a forced setting copied between machines still runs, and KernelName tells
// what was used.
func selectKernels(want string, warn io.Writer) *kernels {
	best := supportedKernels[len(supportedKernels)-1]
	want = strings.TrimSpace(strings.ToLower(want))
	if want == "" {
		return best
	}
	if want == refKernels.name {
		return refKernels
	}
	for _, k := range supportedKernels {
		if k.name == want {
			return k
		}
	}
	names := []string{refKernels.name}
	for _, k := range supportedKernels {
		names = append(names, k.name)
	}
	fmt.Fprintf(warn, "tensor: %s=%q is not supported here (this build and CPU support %s); using %s\n",
		kernelEnv, want, strings.Join(names, ", "), best.name)
	return best
}

// SetKernels makes the kernel set named name ("ref", or one of the sets this machine supports)
// the active one and returns the name of the set it replaces, so that a test can train a model
// on the ref set and restore the previous one. Operations read the active set on entry: call
// SetKernels only while no operation runs. It returns an error, leaving the set unchanged, for
// a name this build and CPU cannot run.
func SetKernels(name string) (previous string, err error) {
	ks := refKernels
	if name != ks.name {
		i := slices.IndexFunc(supportedKernels, func(k *kernels) bool { return k.name == name })
		if i < 0 {
			return active.name, fmt.Errorf("tensor.SetKernels: kernel set %q is not supported here", name)
		}
		ks = supportedKernels[i]
	}
	previous, active = active.name, ks
	return previous, nil
}
