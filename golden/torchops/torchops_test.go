package torchops

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

// TestGoldenTorchOps runs every case of the PyTorch reference file through the same path as
// `agentr1 golden`.
func TestGoldenTorchOps(t *testing.T) {
	reg := golden.NewRegistry()
	Register(reg)
	s := goldentest.RunFile(t, reg, "../../testdata/golden/torch_ops.json")
	if s.Failed != 0 || s.Passed == 0 {
		t.Errorf("torch_ops.json: %s", s.Line())
	}
}
