//go:build amd64 && !purego

package tensor

import "github.com/klauspost/cpuid/v2"

// hasBF16Dot reports whether the CPU runs VDPBF16PS: AVX512_BF16, on a CPU (and OS) with
// AVX-512F.
var hasBF16Dot = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BF16)

// dotBF16BlocksLow and dotBF16BlocksHigh run VDPBF16PS over len(acc) (a multiple of 16)
// lanes, with different registers (testing the encoding of every register bit): each is
// equivalent to
//
//	for j := range acc {
//		acc[j] = dotBF16Pair(acc[j], a[j], b[j])
//	}
//
// a and b must hold at least len(acc) pairs (the assembly does not check), and the CPU must
// have hasBF16Dot.
//
//go:noescape
func dotBF16BlocksLow(acc []float32, a, b []uint32)

//go:noescape
func dotBF16BlocksHigh(acc []float32, a, b []uint32)

// dotBF16Blocks are the assembly loops of VDPBF16PS that the tests compare with dotBF16Pair.
var dotBF16Blocks = map[string]func(acc []float32, a, b []uint32){
	"low registers":  dotBF16BlocksLow,
	"high registers": dotBF16BlocksHigh,
}
