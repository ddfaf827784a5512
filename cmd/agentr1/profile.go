package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the environment variable that makes any command write a CPU profile of
// its whole run, for `go tool pprof`: the way to see where a run's time goes (which kernels,
// which phase) on one's own machine, as go test's -cpuprofile does for a benchmark.
const cpuProfileEnv = "AGENTR1_CPUPROFILE"

// memProfileEnv names the environment variable that makes any command write a heap profile
// when it ends, as go test's -memprofile does: what the command allocated, by the code that
// allocated it (alloc_space), and what it held at its last garbage collection (inuse_space).
// Unlike go test, no collection is forced before writing: by then a command has let go of
// its model and buffers, and the last collection, during its last phase, is what shows where
// its memory goes.
const memProfileEnv = "AGENTR1_MEMPROFILE"

// startProfiles starts the profiles the environment asks for (cpuProfileEnv, memProfileEnv)
// and returns the function that ends them, writing and closing their files. Both files are
// created before the command runs, so a path that cannot be written costs no run.
func startProfiles() (stop func() error, err error) {
	var cpu, mem *os.File
	if path := os.Getenv(cpuProfileEnv); path != "" {
		if cpu, err = os.Create(path); err != nil {
			return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
		}
	}
	if path := os.Getenv(memProfileEnv); path != "" {
		if mem, err = os.Create(path); err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			return nil, fmt.Errorf("%s: %w", memProfileEnv, err)
		}
	}
	return func() error {
		var errs []error // a profile's errors, none lost
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", cpuProfileEnv, err))
			}
		}
		if mem != nil {
			if err := pprof.Lookup("heap").WriteTo(mem, 0); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", memProfileEnv, err))
			}
			if err := mem.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", memProfileEnv, err))
			}
		}
		return errors.Join(errs...)
	}, nil
}
