package qwen

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

func TestGoldenQwen2Tiny(t *testing.T) {
	r := golden.NewRegistry()
	Register(r)
	s := goldentest.RunFile(t, r, "../../testdata/golden/qwen2_tiny/cases.json")
	if s.Passed != 2 {
		t.Errorf("passed %d of 2 cases", s.Passed)
	}
}

// TestGoldenQwen3Tiny runs a tiny random Qwen3 checkpoint (per-head q_norm/k_norm, no q/k/v
// biases, head_dim independent of hidden_size) against PyTorch's logits, log-probs and
// gradients, in F32 and BF16.
func TestGoldenQwen3Tiny(t *testing.T) {
	r := golden.NewRegistry()
	Register(r)
	s := goldentest.RunFile(t, r, "../../model/testdata/golden/qwen3_tiny/cases.json")
	if s.Passed != 2 {
		t.Errorf("passed %d of 2 cases", s.Passed)
	}
}
