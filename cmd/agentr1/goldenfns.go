package main

import "agentr1/golden"

// goldenRegistry returns the registry of every package's reference-function implementations.
// Each package that matches golden values exports RegisterGolden; add it here.
func goldenRegistry() *golden.Registry {
	r := golden.NewRegistry()
	return r
}
