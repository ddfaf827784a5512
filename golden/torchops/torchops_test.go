package torchops

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

// TestGoldenTorchOps runs every case of the PyTorch reference file through the same path as
// `agentr1 golden`.
func TestGoldenTorchOps(t *testing.T) {
	goldentest.Expect(t, Register, "../../testdata/golden/torch_ops.json", golden.Summary{Passed: 25})
}
