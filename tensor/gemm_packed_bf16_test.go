package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"agentr1/tensor/ref"
)

// TestBF16Conversions checks the rounding of Float32ToBF16 (to nearest, ties to even, a carry
// into the exponent, overflow to infinity, NaN kept) against values worked out by hand, and
// that BF16ToFloat32 inverts it on every value it produces.
func TestBF16Conversions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"below half, down", 0x3f807fff, 0x3f80},
		{"tie to even, down", 0x3f808000, 0x3f80},
		{"tie to even, up", 0x3f818000, 0x3f82},
		{"above half, up", 0x3f808001, 0x3f81},
		{"negative", 0xc0490fdb, 0xc049},
		{"minus two", 0xc0000000, 0xc000},
		{"carry into the exponent", 0x3fffffff, 0x4000},
		{"rounds to infinity", 0x7f7fffff, 0x7f80},
		{"infinity", 0x7f800000, 0x7f80},
		{"minus infinity", 0xff800000, 0xff80},
		{"nan", 0x7fc00001, 0x7fc0},
		{"signalling nan stays nan", 0x7f800001, 0x7fc0},
	} {
		got := Float32ToBF16(math.Float32frombits(tc.in))
		if got != tc.want {
			t.Errorf("%s: Float32ToBF16(%#08x) = %#04x, want %#04x", tc.name, tc.in, got, tc.want)
		}
		if back := math.Float32bits(BF16ToFloat32(got)); back != uint32(got)<<16 {
			t.Errorf("%s: BF16ToFloat32(%#04x) = %#08x, want %#08x", tc.name, got, back, uint32(got)<<16)
		}
	}
}

// TestWidenBF16 checks widenBF16 (the assembly blocks and the Go tail) against the plain
// conversion, on every length up to 100, with a guard after dst left untouched.
func TestWidenBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 101 {
		src := make([]uint16, n)
		for i := range src {
			src[i] = uint16(r.Uint32())
		}
		dst := make([]float32, n+1)
		dst[n] = 7
		widenBF16(dst[:n], src)
		for i, h := range src {
			if math.Float32bits(dst[i]) != uint32(h)<<16 {
				t.Fatalf("n=%d: dst[%d] = %#08x, want %#08x", n, i, math.Float32bits(dst[i]), uint32(h)<<16)
			}
		}
		if dst[n] != 7 {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

// TestGemmPackedBF16 checks products by PackBF16 and PackCopy panels on every kernel set: on
// at least packedRowsMin rows they give bit for bit what Pack of the widened B gives (the
// blocked driver's sums); below it, where neither keeps B, PackBF16 gives bit for bit what
// PackCopy gives, and both agree with the reference within float32 rounding. Under the ref
// set both give ref.Gemm's product exactly.
func TestGemmPackedBF16(t *testing.T) {
	shapes := []gemmCase{{1, 256, 256, 0, 0, 0}, {5, 100, 37, 0, 0, 0}, {16, 300, 300, 0, 0, 0},
		{8, 64, 70, 0, 0, 0}, {30, 130, 33, 0, 0, 0}, {3, 520, 9, 0, 0, 0}}
	sets := append(append([]*kernels{refKernels}, supportedKernels...), tileTwins...)
	for _, ks := range sets {
		var p16, pc PackedB // reused across shapes: every packing must replace the last
		for _, tc := range shapes {
			for _, transB := range []bool{false, true} {
				for _, threads := range []int{1, 2} {
					name := fmt.Sprintf("impl=%s/threads=%d/%dx%dx%d/transB=%v", ks.name, threads, tc.m, tc.k, tc.n, transB)
					r := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.k)))
					rows, cols := tc.k, tc.n
					if transB {
						rows, cols = tc.n, tc.k
					}
					ldb := cols + 3 // a stride wider than a row
					b16 := make([]uint16, rows*ldb)
					b := make([]float32, rows*ldb)
					for i := range b16 {
						b16[i] = Float32ToBF16(2*r.Float32() - 1)
						b[i] = BF16ToFloat32(b16[i])
					}
					a := fillMatrix(r, tc.m, tc.k, tc.k)
					old := SetWorkers(threads)
					want := make([]float32, tc.m*tc.n)
					switch {
					case ks.ref:
						ref.Gemm(false, transB, tc.m, tc.n, tc.k, 0.5, a, tc.k, b, ldb, 0, want, tc.n)
					case tc.m >= ks.packedRowsMin():
						gemmBlocked(ks, false, transB, tc.m, tc.n, tc.k, 0.5, a, tc.k, b, ldb, 0, want, tc.n)
					default:
						ref.Gemm(false, transB, tc.m, tc.n, tc.k, 0.5, a, tc.k, b, ldb, 0, want, tc.n)
					}
					exact := ks.ref || tc.m >= ks.packedRowsMin()
					p16.packBF16(ks, transB, tc.k, tc.n, b16, ldb)
					pc.pack(ks, transB, tc.k, tc.n, b, ldb)
					pc.dropSource()
					got16, gotCopy := make([]float32, tc.m*tc.n), make([]float32, tc.m*tc.n)
					for i := range got16 {
						got16[i], gotCopy[i] = float32(math.NaN()), float32(math.NaN())
					}
					GemmPacked(false, tc.m, 0.5, a, tc.k, &p16, 0, got16, tc.n)
					GemmPacked(false, tc.m, 0.5, a, tc.k, &pc, 0, gotCopy, tc.n)
					SetWorkers(old)
					if i := bitDiff(got16, gotCopy); i >= 0 {
						t.Errorf("%s: BF16 C[%d] = %v, PackCopy's %v: want bit for bit", name, i, got16[i], gotCopy[i])
					}
					for i := range want {
						d := math.Abs(float64(gotCopy[i] - want[i]))
						if (exact && d != 0) || d > 1e-5*float64(tc.k) || gotCopy[i] != gotCopy[i] {
							t.Errorf("%s: C[%d] = %v, want %v (exact: %v)", name, i, gotCopy[i], want[i], exact)
							break
						}
					}
				}
			}
		}
	}
}

// TestPackedBColumn checks that Column returns each column of op(B) from Pack, PackCopy and
// PackBF16 panels on every kernel set, across several depth slices.
func TestPackedBColumn(t *testing.T) {
	const k, n = 530, 45
	r := rand.New(rand.NewPCG(5, 6))
	w16 := make([]uint16, n*k) // W (n, k), packed as op(B) = W^T
	w := make([]float32, n*k)
	for i := range w16 {
		w16[i] = Float32ToBF16(r.Float32())
		w[i] = BF16ToFloat32(w16[i])
	}
	for _, ks := range append([]*kernels{refKernels}, supportedKernels...) {
		var p, pc, p16 PackedB
		p.pack(ks, true, k, n, w, k)
		pc.pack(ks, true, k, n, w, k)
		pc.dropSource()
		p16.packBF16(ks, true, k, n, w16, k)
		got := make([]float32, k)
		for _, c := range []struct {
			name string
			pb   *PackedB
		}{{"Pack", &p}, {"PackCopy", &pc}, {"PackBF16", &p16}} {
			for j := range n {
				c.pb.Column(j, got)
				if i := bitDiff(got, w[j*k:(j+1)*k]); i >= 0 {
					t.Fatalf("impl=%s/%s: column %d [%d] = %v, want %v", ks.name, c.name, j, i, got[i], w[j*k+i])
				}
			}
		}
	}
}

// BenchmarkGemmPackedBF16 times the decoding-step product of BenchmarkGemmPacked with W packed
// in bfloat16 against float32 panels, on one worker: the widening's cost beside the halved
// reads.
func BenchmarkGemmPackedBF16(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, shape := range []struct{ n, k int }{{4864, 896}, {896, 4864}} {
		for _, m := range []int{1, 8, 128} {
			n, k := shape.n, shape.k
			a, w16, c := make([]float32, m*k), make([]uint16, n*k), make([]float32, m*n)
			w := make([]float32, n*k)
			for i := range a {
				a[i] = r.Float32()
			}
			for i := range w16 {
				w16[i] = Float32ToBF16(r.Float32())
				w[i] = BF16ToFloat32(w16[i])
			}
			var p16, p32 PackedB
			p16.PackBF16(true, k, n, w16, k)
			p32.PackCopy(true, k, n, w, k)
			for _, path := range []struct {
				name string
				pb   *PackedB
			}{{"bf16", &p16}, {"f32", &p32}} {
				b.Run(fmt.Sprintf("impl=%s/panels=%s/m=%d/n=%d/k=%d", active.name, path.name, m, n, k), func(b *testing.B) {
					defer SetWorkers(SetWorkers(1))
					for b.Loop() {
						GemmPacked(false, m, 1, a, k, path.pb, 0, c, n)
					}
					reportGFLOPs(b, 2*float64(m*n*k))
				})
			}
		}
	}
}
