package qwen

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

// TestGoldenQwen2Tiny runs a tiny random Qwen2 checkpoint against PyTorch's logits, log-probs
// and gradients.
func TestGoldenQwen2Tiny(t *testing.T) {
	goldentest.Expect(t, Register, "../../testdata/golden/qwen2_tiny/cases.json", golden.Summary{Passed: 2})
}

// TestGoldenQwen3Tiny runs a tiny random Qwen3 checkpoint (per-head q_norm/k_norm, no q/k/v
// biases, head_dim independent of hidden_size) against PyTorch's logits, log-probs and
// gradients, in F32 and BF16.
func TestGoldenQwen3Tiny(t *testing.T) {
	goldentest.Expect(t, Register, "../../testdata/golden/qwen3_tiny/cases.json", golden.Summary{Passed: 2})
}
