//go:build !amd64 || purego

package tensor

// bf16Kernels is nil: without assembly the bfloat16 product runs gemmBF16Plain.
var bf16Kernels *bf16MicroKernels
