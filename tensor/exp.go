package tensor

import "math"

// expF64 returns e^x to about 1e-8 relative error (far below float32 rounding), several
// times faster than math.Exp, for the softmax-like loops that evaluate it once per logit.
// It follows the textbook range reduction (Cody & Waite 1980; the same as fdlibm's exp):
//
//	x = k*ln2 + r,  k = round(x / ln2),  |r| <= ln2/2
//	e^x = 2^k * e^r,  e^r by its Taylor polynomial of degree 7 (truncation < 5e-9 relative)
//
// with ln2 split into a high and a low part so that r is exact. Special values behave as in
// math.Exp: NaN gives NaN, -Inf and anything below -745 give 0, and overflow gives +Inf.
func expF64(x float64) float64 {
	const (
		log2e = 1.4426950408889634
		ln2hi = 6.93147180369123816490e-01 // ln2 with its low 32 bits zero: k*ln2hi is exact
		ln2lo = 1.90821492927058770002e-10 // ln2 - ln2hi
		round = 6755399441055744.0         // 1.5 * 2^52: adding it rounds to an integer
	)
	switch {
	case !(x > -745.2): // also NaN
		if x != x {
			return x
		}
		return 0
	case x > 709.79:
		return math.Inf(1)
	}
	k := (x*log2e + round) - round // nearest integer to x/ln2, in [-1075, 1024]
	r := (x - k*ln2hi) - k*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	ki := int64(k)
	switch {
	case ki < -1000: // 2^k is subnormal: scale in two steps
		return p * math.Float64frombits(uint64(ki+1023+64)<<52) * 0x1p-64
	case ki > 1000: // 2^1024 itself is not representable
		return p * math.Float64frombits(uint64(ki+1023-64)<<52) * 0x1p64
	}
	return p * math.Float64frombits(uint64(ki+1023)<<52)
}

// expShiftSum writes y[i] = exp(scale*x[i] - shift) and returns sum_i y[i], accumulated in
// float64, with the kernel set in use (see KernelName): the vectorised float32 exponential of
// exp_amd64.go where the CPU has AVX2+FMA (at most about 2 float32 ulp from the exact value),
// expF64 rounded to float32 otherwise. y may be x (in place). Softmax-like loops call it with
// scale = 1 and shift = the row maximum; sigmoid with scale = -1, shift = 0.
// It panics if len(y) < len(x).
func expShiftSum(y, x []float32, scale, shift float32) float64 {
	return active.expSum(y[:len(x)], x, scale, shift)
}

// expSumGeneric is the pure-Go expShiftSum: expF64 of the argument scale*x - shift rounded once
// to float32 (as the fused multiply-add of the assembly rounds it).
func expSumGeneric(y, x []float32, scale, shift float32) float64 {
	y = y[:len(x)]
	var sum float64
	for i, v := range x {
		t := float32(float64(scale)*float64(v) - float64(shift))
		e := float32(expF64(float64(t)))
		y[i] = e
		sum += float64(e)
	}
	return sum
}
