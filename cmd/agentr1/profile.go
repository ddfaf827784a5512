package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the environment variable that makes any command write a CPU profile of
// its whole run, for `go tool pprof`: the way to see where a run's time goes (which kernels,
// which phase) on one's own machine, as go test's -cpuprofile does for a benchmark.
const cpuProfileEnv = "AGENTR1_CPUPROFILE"

// startCPUProfile starts a CPU profile into the file path names, when it names one, and
// returns the function that stops it and closes the file (nothing to do when path is empty).
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", cpuProfileEnv, err)
		}
		return nil
	}, nil
}
