package model

import (
	"testing"

	"agentr1/golden"
	"agentr1/golden/goldentest"
)

func TestGoldenQwen2Tiny(t *testing.T) {
	r := golden.NewRegistry()
	RegisterGolden(r)
	s := goldentest.RunFile(t, r, "../testdata/golden/qwen2_tiny/cases.json")
	if s.Passed != 2 {
		t.Errorf("passed %d of 2 cases", s.Passed)
	}
}
