//go:build !amd64 || purego

package tensor

// hasBF16Dot is false: this build has no assembly.
const hasBF16Dot = false

// dotBF16Blocks is empty: this build has no assembly.
var dotBF16Blocks = map[string]func(acc []float32, a, b []uint32){}
