package qwentok

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

// TestGoldenQwen3 checks every case recorded with the real Qwen3 tokenizer: ids and decoding.
func TestGoldenQwen3(t *testing.T) {
	goldentest.Expect(t, Register, "../../testdata/golden/tokenizer_qwen3/cases.json", golden.Summary{Passed: 16})
}
