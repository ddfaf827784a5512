//go:build amd64 && !purego

package tensor

// expSumAVX2 is expShiftSum with AVX2+FMA, every element in assembly (a last group of fewer
// than eight is masked). Its float32 exponential, measured by TestExpShiftSum over [-104, 89]
// against math.Exp, is within 2 ulp (relative error below 1.8e-7) for normal results;
// subnormal results are rounded once, from a correctly scaled value.
func expSumAVX2(y, x []float32, scale, shift float32) float64 {
	return expSumBlocksAVX2(y[:len(x)], x, scale, shift)
}

// expSumBlocksAVX2 writes y[i] = exp(scale*x[i] - shift) in float32 and returns the float64 sum
// of the y[i]; len(y) == len(x). It is equivalent to
//
//	var sum float64
//	for i := range x {
//		y[i] = float32(math.Exp(float64(scale*x[i] - shift)))
//		sum += float64(y[i])
//	}
//	return sum
//
// up to the 2-ulp error of its polynomial and the order of the additions (two accumulators,
// see exp_amd64.s for the method).
//
//go:noescape
func expSumBlocksAVX2(y, x []float32, scale, shift float32) float64

// expSumAVX512 is expSumAVX2 sixteen lanes at a time: bit for bit the same results and sum
// (TestExpSumAVX512), about 1.3x as fast (BenchmarkExpShiftSum; 512-bit operations issue on
// two ports where 256-bit ones have three).
func expSumAVX512(y, x []float32, scale, shift float32) float64 {
	return expSumBlocksAVX512(y[:len(x)], x, scale, shift)
}

// expSumBlocksAVX512 is expSumBlocksAVX2 with 512-bit vectors; len(y) == len(x). Its y and
// its sum equal expSumBlocksAVX2's bit for bit: the same operations per element and the same
// float64 additions in the same order (see exp_amd64.s).
//
//go:noescape
func expSumBlocksAVX512(y, x []float32, scale, shift float32) float64
