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
