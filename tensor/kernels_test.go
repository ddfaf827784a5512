package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStableWithLargeLogits feeds rows with huge and tiny logits to every per-row kernel and
// checks the results against closed forms.
func TestStableWithLargeLogits(t *testing.T) {
	const V = 3
	cases := []struct {
		name    string
		logits  []float32 // (1, V)
		label   int
		logp    float64 // log softmax at label
		entropy float64
	}{
		{"huge-equal", []float32{3e4, 3e4, -3e4}, 0, -math.Ln2, math.Ln2},
		{"huge-gap", []float32{3e4, 0, 0}, 1, -3e4, 0},
		{"overflow-range", []float32{3e38, 3e38, 0}, 2, -3e38, math.Ln2},
		{"uniform", []float32{-7, -7, -7}, 2, -math.Log(3), math.Log(3)},
		{"minus-inf", []float32{0, float32(math.Inf(-1)), 0}, 0, -math.Ln2, math.Ln2},
	}
	for _, c := range cases {
		logp, ent, sm := make([]float32, 1), make([]float32, 1), make([]float32, V)
		LogProbsForward(logp, c.logits, []int{c.label}, 1, V)
		EntropyForward(ent, c.logits, 1, V)
		SoftmaxForward(sm, c.logits, 1, V)
		if math.Abs(float64(logp[0])-c.logp) > 1e-5*(1+math.Abs(c.logp)) {
			t.Errorf("%s: logprob %v, want %v", c.name, logp[0], c.logp)
		}
		if math.Abs(float64(ent[0])-c.entropy) > 1e-5 {
			t.Errorf("%s: entropy %v, want %v", c.name, ent[0], c.entropy)
		}
		var sum float64
		for _, p := range sm {
			sum += float64(p)
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("%s: softmax sums to %v", c.name, sum)
		}
		dl := make([]float32, V)
		LogProbsBackward(dl, []float32{1}, c.logits, logp, []int{c.label}, 1, V)
		EntropyBackward(dl, []float32{1}, c.logits, ent, 1, V)
		CrossEntropyMaskedBackward(dl, 1, c.logits, []int{c.label}, []float32{1}, 1, V)
		for j, g := range dl {
			if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
				t.Errorf("%s: gradient[%d] = %v", c.name, j, g)
			}
		}
	}
}

func TestMaskedReductionsEmptyMask(t *testing.T) {
	x, mask := []float32{1, 2}, []float32{0, 0}
	if got := MaskedMean(x, mask); got != 0 {
		t.Errorf("MaskedMean with an all-zero mask = %v, want 0", got)
	}
	logits := []float32{1, 2, 3, 4}
	if got := CrossEntropyMaskedForward(logits, []int{0, 1}, mask, 2, 2); got != 0 {
		t.Errorf("CrossEntropyMaskedForward with an all-zero mask = %v, want 0", got)
	}
	dx := []float32{5, 5}
	MaskedMeanBackward(dx, 1, mask)
	if dx[0] != 5 || dx[1] != 5 {
		t.Errorf("MaskedMeanBackward with an all-zero mask changed dx to %v", dx)
	}
}

// TestRoPEInverse checks that Backward undoes Forward (the rotation is orthogonal) and that
// position 0 is the identity.
func TestRoPEInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	for _, theta := range []float64{10000, 1e6} {
		rope := NewRoPE(8, 4096, theta)
		positions := []int{0, 1, 4095}
		x := randSlice(rng, 3*2*8) // (3, 2, 8)
		y := append([]float32(nil), x...)
		rope.Forward(y, positions, 3, 2)
		for i := 0; i < 16; i++ {
			if y[i] != x[i] {
				t.Fatalf("theta %g: position 0 changed x[%d] from %v to %v", theta, i, x[i], y[i])
			}
		}
		rope.Backward(y, positions, 3, 2)
		for i := range x {
			if math.Abs(float64(y[i]-x[i])) > 1e-5 {
				t.Fatalf("theta %g: Backward(Forward(x))[%d] = %v, want %v", theta, i, y[i], x[i])
			}
		}
	}
}

// TestPackRows checks pack6 and pack12 (where this build and CPU have them) against their Go
// definition, with NaN guards after the destination that they must leave alone and NaN in the
// source outside the rows' first columns, which they must not read into the panel.
func TestPackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	nan := float32(math.NaN())
	for _, pk := range []struct {
		rows int
		pack func(dst, src []float32, ld, blocks int, scale float32)
	}{{6, pack6}, {12, pack12}} {
		if pk.pack == nil {
			t.Logf("no pack%d in this build", pk.rows)
			continue
		}
		rows := pk.rows
		for _, tc := range []struct {
			blocks, ld int
			scale      float32
		}{{1, 8, 1}, {1, 11, -0.5}, {3, 24, 2}, {5, 41, 1}} {
			name := fmt.Sprintf("pack%d/blocks=%d/ld=%d/scale=%v", rows, tc.blocks, tc.ld, tc.scale)
			n := tc.blocks * 8
			src := make([]float32, (rows-1)*tc.ld+n)
			for i := range src {
				src[i] = nan
			}
			for i := range rows {
				for p := range n {
					src[i*tc.ld+p] = 2*r.Float32() - 1
				}
			}
			dst := make([]float32, rows*n+16)
			for i := range dst {
				dst[i] = nan
			}
			pk.pack(dst, src, tc.ld, tc.blocks, tc.scale)
			for p := range n {
				for i := range rows {
					if got, want := dst[p*rows+i], tc.scale*src[i*tc.ld+p]; got != want {
						t.Errorf("%s: dst[%d] (column %d, row %d) = %v, want %v", name, p*rows+i, p, i, got, want)
					}
				}
			}
			for i := rows * n; i < len(dst); i++ {
				if !math.IsNaN(float64(dst[i])) {
					t.Errorf("%s: guard dst[%d] = %v, written past the panel", name, i, dst[i])
				}
			}
		}
	}
}

// TestActivationKernels checks every kernel set's sigmoid and SwiGLU arithmetic against the
// generic loops bit for bit, over lengths with and without a tail past the last full vector, at
// an unaligned offset, with exponentials from 0 to +Inf and guard elements after the end that
// must stay as they were.
func TestActivationKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, 1, float32(math.Inf(1)), 1e-30, 3e38}
	for _, ks := range supportedKernels {
		for _, n := range []int{0, 1, 7, 8, 9, 16, 29, 515} {
			const off, guard = 3, 4
			// bufs: the output (y or dgate or dup) and four inputs (dy, gate, up, e or s).
			bufs := make([][]float32, 5)
			for i := range bufs {
				bufs[i] = make([]float32, off+n+guard)
				for j := range bufs[i] {
					bufs[i][j] = float32(rng.NormFloat64() * 4)
				}
			}
			for j := range bufs[4] {
				e := float32(math.Exp(float64(bufs[4][j])))
				if j%3 == 0 {
					e = special[j/3%len(special)]
				}
				bufs[4][j] = e
			}
			sl := func(b []float32) []float32 { return b[off : off+n] }
			run := func(name string, generic, kernel func(b [][]float32)) {
				checkElementwise(t, ks.name+" "+name, n, off, bufs, generic, kernel)
			}
			run("sigmoidFinish", func(b [][]float32) { sigmoidFinishGeneric(sl(b[4])) },
				func(b [][]float32) { ks.sigmoidFinish(sl(b[4])) })
			run("swiGLUFinish", func(b [][]float32) { swiGLUFinishGeneric(sl(b[0]), sl(b[2]), sl(b[3]), sl(b[4])) },
				func(b [][]float32) { ks.swiGLUFinish(sl(b[0]), sl(b[2]), sl(b[3]), sl(b[4])) })
			run("swiGLUGradGate", func(b [][]float32) { swiGLUGradGateGeneric(sl(b[0]), sl(b[1]), sl(b[2]), sl(b[3]), sl(b[4])) },
				func(b [][]float32) { ks.swiGLUGradGate(sl(b[0]), sl(b[1]), sl(b[2]), sl(b[3]), sl(b[4])) })
			run("swiGLUGradUp", func(b [][]float32) { swiGLUGradUpGeneric(sl(b[0]), sl(b[1]), sl(b[2]), sl(b[4])) },
				func(b [][]float32) { ks.swiGLUGradUp(sl(b[0]), sl(b[1]), sl(b[2]), sl(b[4])) })
		}
	}
}

// TestRMSNormRowChains checks that RMSNormForward and RMSNormBackward, which take the float64
// sums of four rows at a time (rowSquareSums, rowWeightedDots), give bit for bit what one row
// at a time gives (the loops below, the formulas of rmsnorm.go's comments, with the sums in
// its lane order, laneSum), for row counts that leave 0-3 rows after the last group of four, on
// one worker and on two.
func TestRMSNormRowChains(t *testing.T) {
	skipOnRef(t)
	rng := rand.New(rand.NewPCG(41, 42))
	const eps = 1e-6
	for _, threads := range []int{1, 2} {
		for _, n := range []int{1, 3, 4, 5, 8, 11, 130} {
			d := 37
			x, w, dy := randSlice(rng, n*d), randSlice(rng, d), randSlice(rng, n*d)
			wantY, wantR, wantDx := make([]float32, n*d), make([]float32, n), randSlice(rng, n*d)
			for i := range n {
				xr := x[i*d : (i+1)*d]
				ss := laneSum(d, func(j int) float64 { return float64(xr[j]) * float64(xr[j]) })
				r := float32(1 / math.Sqrt(ss/float64(d)+eps))
				wantR[i] = r
				for j, v := range xr {
					wantY[i*d+j] = w[j] * (v * r)
				}
			}
			gotDx := slices.Clone(wantDx)
			for i := range n {
				xr, gr := x[i*d:(i+1)*d], dy[i*d:(i+1)*d]
				gx := laneSum(d, func(j int) float64 { return float64(gr[j]) * float64(w[j]) * float64(xr[j]) })
				r := wantR[i]
				c := float32(gx) * r * r / float32(d)
				for j, v := range xr { // rounded as written: no fused multiply-adds
					wantDx[i*d+j] += float32(r * float32(float32(gr[j]*w[j])-float32(v*c)))
				}
			}
			old := SetWorkers(threads)
			gotY, gotR := make([]float32, n*d), make([]float32, n)
			RMSNormForward(gotY, gotR, x, w, n, d, eps)
			RMSNormBackward(gotDx, nil, dy, x, w, gotR, n, d)
			SetWorkers(old)
			for _, c := range []struct {
				name      string
				got, want []float32
			}{{"y", gotY, wantY}, {"rstd", gotR, wantR}, {"dx", gotDx, wantDx}} {
				if i := bitDiff(c.got, c.want); i >= 0 {
					t.Errorf("threads=%d n=%d: %s[%d] = %v, want %v (one row at a time)", threads, n, c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
}

// laneSum returns sum_{j<n} term(j) in rmsnorm.go's lane order, written out independently of
// it: eight partial sums by j%8, then ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)).
func laneSum(n int, term func(j int) float64) float64 {
	var s [8]float64
	for j := range n {
		t := float64(term(j)) // rounded before the addition: no fused multiply-add
		s[j%8] += t
	}
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}

// TestRMSNormRowSums checks every kernel set's float64 row sums of RMSNorm against laneSum bit
// for bit, for one to four rows, lengths with and without a tail past the last eight, and
// terms from 1e-9 to 1e9 in size, where any other order of the additions shows.
func TestRMSNormRowSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	wide := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*9-4.5))
		}
		return x
	}
	for _, ks := range supportedKernels {
		for _, d := range []int{0, 1, 7, 8, 9, 16, 29, 256, 515} {
			for rows := 1; rows <= 4; rows++ {
				x, g, w := wide(rows*d), wide(rows*d), wide(d)
				var ss, gx [4]float64
				ks.rowSquareSums(&ss, x, rows, d)
				ks.rowWeightedDots(&gx, g, w, x, rows, d)
				for r := range rows {
					xr, gr := x[r*d:(r+1)*d], g[r*d:(r+1)*d]
					wantSS := laneSum(d, func(j int) float64 { return float64(xr[j]) * float64(xr[j]) })
					wantGX := laneSum(d, func(j int) float64 { return float64(gr[j]) * float64(w[j]) * float64(xr[j]) })
					if math.Float64bits(ss[r]) != math.Float64bits(wantSS) {
						t.Errorf("impl=%s d=%d rows=%d: square sum of row %d = %v, want %v", ks.name, d, rows, r, ss[r], wantSS)
					}
					if math.Float64bits(gx[r]) != math.Float64bits(wantGX) {
						t.Errorf("impl=%s d=%d rows=%d: weighted dot of row %d = %v, want %v", ks.name, d, rows, r, gx[r], wantGX)
					}
				}
			}
		}
	}
}

// TestRMSNormKernels checks every kernel set's RMSNorm row loops against the generic ones bit
// for bit, over lengths with and without a tail past the last full vector, at an unaligned
// offset, with values from 1e-30 to 3e38 and guard elements after the end that must stay as
// they were.
func TestRMSNormKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	special := []float32{0, 1e-30, 3e38, -2.5e-8}
	for _, ks := range supportedKernels {
		for _, n := range []int{0, 1, 7, 8, 9, 16, 29, 515} {
			const off, guard = 3, 4
			// bufs: the output (y or dx) and three inputs (x, w, g).
			bufs := make([][]float32, 4)
			for i := range bufs {
				bufs[i] = make([]float32, off+n+guard)
				for j := range bufs[i] {
					bufs[i][j] = float32(rng.NormFloat64() * 3)
					if j%5 == 0 {
						bufs[i][j] = special[j/5%len(special)]
					}
				}
			}
			r, c := float32(rng.Float64()*4), float32(rng.NormFloat64())
			sl := func(b []float32) []float32 { return b[off : off+n] }
			run := func(name string, generic, kernel func(b [][]float32)) {
				checkElementwise(t, ks.name+" "+name, n, off, bufs, generic, kernel)
			}
			run("rmsScale", func(b [][]float32) { rmsScaleGeneric(sl(b[0]), sl(b[1]), sl(b[2]), r) },
				func(b [][]float32) { ks.rmsScale(sl(b[0]), sl(b[1]), sl(b[2]), r) })
			run("rmsGrad", func(b [][]float32) { rmsGradGeneric(sl(b[0]), sl(b[3]), sl(b[1]), sl(b[2]), r, c) },
				func(b [][]float32) { ks.rmsGrad(sl(b[0]), sl(b[3]), sl(b[1]), sl(b[2]), r, c) })
			run("rmsWeightGrad", func(b [][]float32) { rmsWeightGradGeneric(sl(b[0]), sl(b[3]), sl(b[1]), r) },
				func(b [][]float32) { ks.rmsWeightGrad(sl(b[0]), sl(b[3]), sl(b[1]), r) })
		}
	}
}

// TestRoPEKernels checks every kernel set's RoPE row rotation against the generic one bit for
// bit, forward and backward, for halves that are and are not a multiple of the vector width,
// one and several heads, at an unaligned offset with guard elements that must stay as they
// were.
func TestRoPEKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	for _, ks := range supportedKernels {
		for _, half := range []int{1, 4, 8, 16, 24, 36} {
			for _, heads := range []int{1, 3} {
				for _, sign := range []float32{1, -1} {
					const off, guard = 3, 4
					n := heads * 2 * half
					// bufs: x (heads, 2*half), then cos and sin (half).
					bufs := make([][]float32, 3)
					for i, l := range []int{n, half, half} {
						bufs[i] = make([]float32, off+l+guard)
						for j := range bufs[i] {
							bufs[i][j] = float32(rng.NormFloat64() * 3)
						}
					}
					x := func(b [][]float32) []float32 { return b[0][off : off+n] }
					cs := func(b [][]float32, i int) []float32 { return b[i][off : off+half] }
					name := fmt.Sprintf("%s ropeRow half=%d heads=%d sign=%v", ks.name, half, heads, sign)
					checkElementwise(t, name, n, off, bufs,
						func(b [][]float32) { ropeRowGeneric(x(b), heads, cs(b, 1), cs(b, 2), sign) },
						func(b [][]float32) { ks.ropeRow(x(b), heads, cs(b, 1), cs(b, 2), sign) })
				}
			}
		}
	}
}

// checkElementwise runs generic and kernel, each on its own copy of bufs, and fails at the
// first element of any buffer where the two differ in any bit: the check of every kernel set's
// elementwise loops against their generic versions (off is where the n elements under test
// start in each buffer, for the message).
func checkElementwise(t *testing.T, name string, n, off int, bufs [][]float32, generic, kernel func(b [][]float32)) {
	t.Helper()
	want, got := make([][]float32, len(bufs)), make([][]float32, len(bufs))
	for i := range bufs {
		want[i], got[i] = slices.Clone(bufs[i]), slices.Clone(bufs[i])
	}
	generic(want)
	kernel(got)
	for i := range got {
		if j := bitDiff(got[i], want[i]); j >= 0 {
			t.Fatalf("%s: n=%d: buffer %d [%d] = %v, want %v (generic)", name, n, i, j-off, got[i][j], want[i][j])
		}
	}
}

// skipOnRef skips a test of the fast sets' bit-level contract (an order of summation or
// rounding that the generic, avx2 and avx512 sets share) when AGENTR1_KERNELS=ref is active:
// ref's loops define the operation, not those bits. ref_oracle_test.go holds every fast set to
// ref instead.
func skipOnRef(t *testing.T) {
	t.Helper()
	if active.ref {
		t.Skip("a bit-level contract of the fast kernel sets; the ref set is active")
	}
}
