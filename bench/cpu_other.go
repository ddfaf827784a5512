//go:build !unix

package bench

// processCPUSeconds returns 0 where getrusage is not available: Timing.CPURate is then 0.
func processCPUSeconds() float64 { return 0 }
