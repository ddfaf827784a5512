package tensor

import "agentr1/tensor/ref"

// refKernels is the reference set, AGENTR1_KERNELS=ref: every operation of this package runs
// package tensor/ref's plain loop (float32 instantiation), single-threaded, so that the whole
// model can be trained and checked on loops a reader can follow line by line. Each exported
// operation tests active.ref once on entry, a well-predicted branch the fast sets pay per call,
// not per element. The vector primitives are ref's too, so Dot, Axpy and Scal need no test;
// the tile sizes and micro-kernels are generic's, only so that code reading them finds valid
// values: no product reaches them while ref is active.
//
// refKernels is not in supportedKernels: the tests that loop over the fast sets compare each of
// them with ref (see ref_oracle_test.go).
var refKernels = func() *kernels {
	ks := *genericKernels
	ks.name = "ref"
	ks.ref = true
	ks.dot = ref.Dot[float32]
	ks.axpy = ref.Axpy[float32]
	ks.scal = ref.Scal[float32]
	return &ks
}()
