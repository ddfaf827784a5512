package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ulpsFrom returns how many float32 ulps got is from the exact value want (float64), measured in
// units of the float32 spacing at want; subnormal results are measured in the smallest subnormal.
func ulpsFrom(got float32, want float64) float64 {
	w := float32(want)
	ulp := float64(math.Nextafter32(w, float32(math.Inf(1))) - w)
	if math.IsInf(float64(w), 0) || w == math.MaxFloat32 {
		ulp = math.Ldexp(1, 104)
	}
	if ulp == 0 {
		ulp = math.Ldexp(1, -149)
	}
	return math.Abs(float64(got)-want) / ulp
}

// TestExpShiftSum checks every kernel set's expSum against math.Exp: a dense sweep of the whole
// range measuring the worst error in ulps, special values, and awkward lengths at unaligned
// offsets with NaN guards around the output, in place and out of place.
func TestExpShiftSum(t *testing.T) {
	for _, ks := range supportedKernels {
		// Dense sweep: every result within 2 ulps (normal) or 1 subnormal ulp.
		const n = 1 << 16
		x := make([]float32, n)
		y := make([]float32, n)
		worst, at := 0.0, float32(0)
		for lo := float32(-104); lo < 89; lo += n * 0.00071 {
			for i := range x {
				x[i] = lo + float32(i)*0.00071
			}
			ks.expSum(y, x, 1, 0)
			for i, v := range x {
				if v > 88.72 { // beyond, the float32 result is +Inf (checked below)
					break
				}
				if u := ulpsFrom(y[i], math.Exp(float64(v))); u > worst {
					worst, at = u, v
				}
			}
		}
		if worst > 2 {
			t.Errorf("impl=%s: worst error %.2f ulp at x=%v, want <= 2", ks.name, worst, at)
		}
		t.Logf("impl=%s: worst error %.2f ulp at x=%v", ks.name, worst, at)

		special := []struct {
			name         string
			x            float32
			scale, shift float32
			want         float64
		}{
			{"zero", 0, 1, 0, 1},
			{"nan", float32(math.NaN()), 1, 0, math.NaN()},
			{"-inf", float32(math.Inf(-1)), 1, 0, 0},
			{"+inf", float32(math.Inf(1)), 1, 0, math.Inf(1)},
			{"-inf scaled", float32(math.Inf(1)), -1, 0, 0},
			{"overflow", 88.73, 1, 0, math.Inf(1)},
			{"largest", 88.72, 1, 0, math.Exp(float64(float32(88.72)))},
			{"underflow", -104, 1, 0, 0},
			{"far below", -1e30, 1, 0, 0},
			{"subnormal", -100, 1, 0, math.Exp(-100)},
			{"smallest normal", -87.33, 1, 0, math.Exp(float64(float32(-87.33)))},
			{"shifted", 3, 1, 5, math.Exp(-2)},
			{"sigmoid arg", 2, -1, 0, math.Exp(-2)},
		}
		for _, c := range special {
			// Eight copies fill one AVX2 vector, one more the masked last group.
			in := make([]float32, 9)
			for i := range in {
				in[i] = c.x
			}
			out := make([]float32, 9)
			sum := ks.expSum(out, in, c.scale, c.shift)
			for i, got := range out {
				ok := got == float32(c.want) || math.IsNaN(c.want) && math.IsNaN(float64(got)) ||
					!math.IsInf(c.want, 0) && ulpsFrom(got, c.want) <= 2
				if !ok {
					t.Errorf("impl=%s/%s: exp(%v*%v-%v)[%d] = %v, want %v", ks.name, c.name, c.scale, c.x, c.shift, i, got, c.want)
				}
			}
			var want float64 // the kernel returns the float64 sum of what it stored
			for _, v := range out {
				want += float64(v)
			}
			if !(math.IsNaN(want) && math.IsNaN(sum)) && math.Abs(sum-want) > 1e-12*math.Abs(want) && sum != want {
				t.Errorf("impl=%s/%s: sum = %v, want %v", ks.name, c.name, sum, want)
			}
		}

		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range vecLengths() {
			for _, off := range []int{0, 1, 3} {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("impl=%s/n=%d/off=%d/inplace=%v", ks.name, n, off, inPlace)
					_, x := guarded(r, n, off)
					for i := range x {
						x[i] *= 30
					}
					xs := append([]float32(nil), x...)
					ybuf, y := guarded(r, n, off+1)
					if inPlace {
						ybuf, y = nil, x
					}
					sum := ks.expSum(y, x, 1.5, 0.25)
					var want float64
					for i, v := range xs {
						// The argument rounded once to float32, as the FMA of the kernel does.
						e := math.Exp(float64(float32(1.5*float64(v) - 0.25)))
						want += e
						if ulpsFrom(y[i], e) > 2.5 {
							t.Errorf("%s: y[%d] = %v, want %v", name, i, y[i], e)
						}
					}
					if math.Abs(sum-want) > 4e-7*want {
						t.Errorf("%s: sum = %v, want %v", name, sum, want)
					}
					if ybuf != nil {
						checkGuards(t, name, ybuf, off+1, n)
					}
				}
			}
		}
	}
}
