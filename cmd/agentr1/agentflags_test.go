package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/model"
)

// TestLoadAgentCompute checks that eval's and chat's --compute reaches the loaded model:
// f32 by default, bf16 on a folder saved in BF16, and a refusal naming the F32 tensor of an F32
// folder; and that the flag refuses an unknown name.
func TestLoadAgentCompute(t *testing.T) {
	f32Dir, _, tok := chatFixture(t)
	policy, err := model.Load(f32Dir)
	if err != nil {
		t.Fatal(err)
	}
	bf16Dir := filepath.Join(t.TempDir(), "bf16")
	if err := policy.SaveAs(bf16Dir, model.BF16); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(bf16Dir); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	for _, tc := range []struct {
		dir     string
		compute model.Compute
		err     string
	}{
		{f32Dir, model.ComputeFloat32, ""},
		{bf16Dir, model.ComputeBF16, ""},
		{f32Dir, model.ComputeBF16, "is F32: bf16 compute"},
	} {
		m, _, _, err := loadAgent(&agentFlags{model: tc.dir, compute: tc.compute}, &stderr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s, %v: error %v, want one containing %q", tc.dir, tc.compute, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s, %v: %v", tc.dir, tc.compute, err)
		}
		if m.InferenceCompute() != tc.compute {
			t.Errorf("%s: InferenceCompute() = %v, want %v", tc.dir, m.InferenceCompute(), tc.compute)
		}
	}
	var stdout bytes.Buffer
	stderr.Reset()
	if code := run([]string{"chat", "--model", bf16Dir, "--compute", "fp16"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), `compute "fp16": want one of f32, bf16`) {
		t.Errorf("chat --compute fp16: exit %d, stderr %q", code, stderr.String())
	}
}
