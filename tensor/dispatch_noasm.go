//go:build !amd64 || purego

package tensor

// archKernels returns no assembly implementations: this build (non-amd64, or -tags purego) has
// only the pure-Go kernels.
func archKernels() []*kernels { return nil }
