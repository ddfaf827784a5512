//go:build amd64 && !purego

package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExpSumAVX512 checks that the 512-bit exponential gives the 256-bit one's results and sum
// bit for bit, over lengths that leave a masked last group of every size to one or both (or
// none), arguments across the whole range and the special values, with guard elements after
// the end that must stay as they were.
func TestExpSumAVX512(t *testing.T) {
	if !slices.Contains(supportedKernels, avx512Kernels) {
		t.Skip("no AVX-512F on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	special := []float32{0, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 88.72, 88.73, -87.33, -100, -104, -1e30}
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 40, 1000, 1001, 4096} {
		const guard = 5
		// wide: the whole range with the special values (a NaN or +Inf makes the sum NaN or
		// +Inf); plain: finite sums of terms of many sizes, where any change in the order of
		// the additions shows.
		wide, plain := make([]float32, n), make([]float32, n)
		for i := range wide {
			wide[i] = float32(rng.Float64()*200 - 105)
			if i%7 == 0 {
				wide[i] = special[i/7%len(special)]
			}
			plain[i] = float32(rng.Float64()*30 - 20)
		}
		for _, tc := range []struct {
			x            []float32
			scale, shift float32
		}{{wide, 1, 0}, {wide, -1, 0}, {plain, 1, 0}, {plain, 1, 3.5}, {plain, -1, 0}, {plain, 0.125, -2}} {
			want, got := make([]float32, n+guard), make([]float32, n+guard)
			for i := n; i < n+guard; i++ {
				want[i], got[i] = 7, 7
			}
			wantSum := expSumAVX2(want[:n], tc.x, tc.scale, tc.shift)
			gotSum := expSumAVX512(got[:n], tc.x, tc.scale, tc.shift)
			if i := bitDiff(got, want); i >= 0 {
				t.Fatalf("n=%d scale=%v shift=%v: y[%d] = %v, want %v (avx2)", n, tc.scale, tc.shift, i, got[i], want[i])
			}
			if math.Float64bits(gotSum) != math.Float64bits(wantSum) {
				t.Fatalf("n=%d scale=%v shift=%v: sum %v, want %v (avx2)", n, tc.scale, tc.shift, gotSum, wantSum)
			}
		}
	}
}
