//go:build unix

package bench

import "syscall"

// processCPUSeconds returns the user plus system CPU time of this process so far, all threads
// together.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
