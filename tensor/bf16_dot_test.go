package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotBF16PairByHand checks dotBF16Pair on values worked out by hand: the order of the two
// products, rounding to nearest even, and the flushing of denormal inputs and results.
func TestDotBF16PairByHand(t *testing.T) {
	pair := func(even, odd float32) uint32 {
		return uint32(Float32ToBF16(odd))<<16 | uint32(Float32ToBF16(even))
	}
	const tiny = 0x00400000 // a denormal float32: half the smallest normal
	negZero := float32(math.Copysign(0, -1))
	for _, tc := range []struct {
		name string
		acc  float32
		a, b uint32
		want uint32 // float32 bits
	}{
		{"two products", 1, pair(2, 3), pair(5, 7), math.Float32bits(1 + 21 + 10)},
		// Odd first: 2^24 - 1 is exact, then 2^24. Even first would give 2^24 + 1, rounded to
		// 2^24 (a tie, to even), then 2^24 - 1.
		{"odd product first", 1 << 24, pair(1, -1), pair(1, 1), math.Float32bits(1 << 24)},
		// 2^24 + 1 lies halfway between 2^24 and 2^24 + 2: to the even mantissa, 2^24.
		{"ties to even", 1 << 24, pair(0, 1), pair(0, 1), math.Float32bits(1 << 24)},
		{"denormal accumulator read as zero", math.Float32frombits(tiny), pair(0, 0), pair(0, 0), 0},
		// -0 + (-0 * 0) twice stays -0: the sign of a flushed accumulator is kept.
		{"negative denormal accumulator", math.Float32frombits(0x80000000 | tiny), pair(negZero, negZero), pair(0, 0), 0x80000000},
		{"denormal bfloat16 read as zero", 0, 0x00000040, 0x3f800000 | 0x3f80, 0},
		{"denormal result flushed", 0, pair(0, 0x1p-70), pair(0, 0x1p-70), 0},
		// -2^-140 flushes to -0; adding the even product -0 keeps it -0.
		{"negative denormal result flushed", 0, pair(negZero, -0x1p-70), pair(0, 0x1p-70), 0x80000000},
		{"smallest normal result kept", 0, pair(0, 0x1p-63), pair(0, 0x1p-63), math.Float32bits(0x1p-126)},
		{"overflow", 0, pair(0, 0x1p100), pair(0, 0x1p100), math.Float32bits(float32(math.Inf(1)))},
	} {
		got := math.Float32bits(dotBF16Pair(tc.acc, tc.a, tc.b))
		if got != tc.want {
			t.Errorf("%s: dotBF16Pair(%v, %#08x, %#08x) = %#08x, want %#08x", tc.name, tc.acc, tc.a, tc.b, got, tc.want)
		}
	}
}

// randomBF16Pair returns a pair of bfloat16 values drawn to reach every branch of the
// instruction: mostly ordinary magnitudes of either sign, sometimes huge or tiny (products that
// overflow or fall below the normal range), denormals, zeros, infinities and NaN.
func randomBF16Pair(r *rand.Rand) uint32 {
	one := func() uint16 {
		sign := uint16(r.IntN(2)) << 15
		switch r.IntN(20) {
		case 0:
			return sign | uint16(r.IntN(128)) // a zero or a denormal
		case 1:
			return sign | 0x7f80 | uint16(r.IntN(3)) // infinity or NaN
		case 2, 3: // huge: exponents 2^100 and up
			return sign | uint16(227+r.IntN(27))<<7 | uint16(r.IntN(128))
		case 4, 5: // tiny: exponents 2^-126 to 2^-100
			return sign | uint16(1+r.IntN(27))<<7 | uint16(r.IntN(128))
		default: // ordinary: 2^-20 to 2^20
			return sign | uint16(107+r.IntN(41))<<7 | uint16(r.IntN(128))
		}
	}
	return uint32(one())<<16 | uint32(one())
}

// TestDotBF16Assembly checks each assembly loop of VDPBF16PS against dotBF16Pair bit for bit,
// NaN against NaN (the payloads differ), on random pairs and accumulators of every kind:
// sign mixes, huge and tiny magnitudes, denormals, zeros, infinities.
func TestDotBF16Assembly(t *testing.T) {
	if !hasBF16Dot {
		t.Skip("this CPU (or build) has no AVX512_BF16: VDPBF16PS cannot run")
	}
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1 << 16
	a, b := make([]uint32, n), make([]uint32, n)
	acc := make([]float32, n)
	for i := range n {
		a[i], b[i] = randomBF16Pair(r), randomBF16Pair(r)
		acc[i] = math.Float32frombits(randomBF16Pair(r)) // its own kind of values, 32 bits
		if i%4 == 0 {
			acc[i] = float32(r.NormFloat64())
		}
	}
	for name, dot := range dotBF16Blocks {
		got := append([]float32(nil), acc...)
		dot(got, a, b)
		bad := 0
		for i := range n {
			want := dotBF16Pair(acc[i], a[i], b[i])
			g := got[i]
			if g != g && want != want || math.Float32bits(g) == math.Float32bits(want) {
				continue
			}
			if bad++; bad <= 10 {
				t.Errorf("%s: lane %d: acc %#08x, a %#08x, b %#08x: assembly %#08x, dotBF16Pair %#08x",
					name, i, math.Float32bits(acc[i]), a[i], b[i], math.Float32bits(g), math.Float32bits(want))
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d lanes differ", name, bad, n)
		}
	}
}

// TestRoundBF16 checks roundBF16 (the assembly blocks and the Go tail) against Float32ToBF16
// of alpha times each value, on every length up to 100, with values of every kind (ties,
// huge, tiny, denormal, infinite, NaN), with a guard after dst left untouched.
func TestRoundBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, alpha := range []float32{1, 0.75, -3} {
		for n := range 101 {
			src := make([]float32, n)
			for i := range src {
				switch r.IntN(4) {
				case 0: // any bits: NaN, infinities, denormals, huge and tiny values
					src[i] = math.Float32frombits(r.Uint32())
				case 1: // a tie: the low half exactly 0x8000
					src[i] = math.Float32frombits(r.Uint32()&0xffff0000 | 0x8000)
				default:
					src[i] = float32(r.NormFloat64())
				}
			}
			dst := make([]uint16, n+1)
			dst[n] = 7
			roundBF16(dst[:n], src, alpha)
			for i, x := range src {
				if want := Float32ToBF16(alpha * x); dst[i] != want {
					t.Fatalf("alpha=%v n=%d: dst[%d] = %#04x, want %#04x (x = %#08x)", alpha, n, i, dst[i], want, math.Float32bits(x))
				}
			}
			if dst[n] != 7 {
				t.Fatalf("alpha=%v n=%d: wrote past the end", alpha, n)
			}
		}
	}
}
