package main

import (
	"agentr1/golden"
	"agentr1/golden/qwen"
	"agentr1/golden/qwentok"
	"agentr1/golden/torchops"
	"agentr1/golden/verl"
)

// goldenRegistry returns the registry of every reference function agentr1 implements. Each
// reference file's glue registers its functions; add a new one here.
func goldenRegistry() *golden.Registry {
	r := golden.NewRegistry()
	torchops.Register(r)
	qwen.Register(r)
	verl.Register(r)
	qwentok.Register(r)
	return r
}
