package main

import (
	"agentr1/golden"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

// goldenRegistry returns the registry of every package's reference-function implementations.
// Each package that matches golden values exports RegisterGolden; add it here.
func goldenRegistry() *golden.Registry {
	r := golden.NewRegistry()
	tensor.RegisterGolden(r)
	model.RegisterGolden(r)
	rl.RegisterGolden(r)
	tokenizer.RegisterGolden(r)
	return r
}
