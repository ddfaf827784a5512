package qwentok

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

// TestGoldenQwen3 checks every case recorded with the real Qwen3 tokenizer: ids and decoding.
func TestGoldenQwen3(t *testing.T) {
	r := golden.NewRegistry()
	Register(r)
	s := goldentest.RunFile(t, r, "../../testdata/golden/tokenizer_qwen3/cases.json")
	if s.Passed != 16 || s.Failed != 0 {
		t.Errorf("got %s, want 16 passed, 0 failed", s.Line())
	}
}
