//go:build !amd64 || purego

package tensor

// hasBF16Dot is false: this build has no assembly.
const hasBF16Dot = false

// dotBF16Blocks is empty: this build has no assembly.
var dotBF16Blocks = map[string]func(acc []float32, a, b []uint32){}

// roundBF16Blocks rounds nothing: without assembly, roundBF16 rounds in Go.
func roundBF16Blocks(dst []uint16, src []float32, alpha float32) int { return 0 }
