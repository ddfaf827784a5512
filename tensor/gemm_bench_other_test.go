//go:build !unix

package tensor

// processCPUSeconds returns 0 where getrusage is not available; benchmarks then omit their
// CPU-time metric.
func processCPUSeconds() float64 { return 0 }
