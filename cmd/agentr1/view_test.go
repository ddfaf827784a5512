package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/report"
)

// TestViewCommand runs `agentr1 view` as a user would: flags before or after the run
// directory, the default output beside the run, and usage errors with status 2.
func TestViewCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, report.MetricsFile), []byte(`{"step": 1, "reward_mean": 0.5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	samples := []report.Sample{{Step: 1, Question: "q?", Tokens: []report.Token{
		{Text: "<tool_call>", Role: report.RoleAgent, ActionMask: 1, AdvantageMask: 1, Advantage: 0.5, Reward: 1}}}}
	if err := report.WriteSamples(filepath.Join(dir, report.SamplesFile), samples); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "page.html")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		output string // the file expected to exist afterwards
	}{
		{"flags after RUN", []string{"view", dir, "--steps", "last", "--out", out}, 0, out},
		{"flags before RUN", []string{"view", "--max-samples", "2", dir}, 0, filepath.Join(dir, "report.html")},
		{"no RUN", []string{"view"}, 2, ""},
		{"bad steps", []string{"view", dir, "--steps", "first"}, 2, ""},
		{"bad max samples", []string{"view", dir, "--max-samples", "0"}, 2, ""},
		{"extra argument", []string{"view", dir, "other"}, 2, ""},
		{"missing RUN", []string{"view", filepath.Join(dir, "none")}, 1, ""},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, code, tc.code, stderr.String())
			continue
		}
		if tc.output == "" {
			continue
		}
		raw, err := os.ReadFile(tc.output)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !strings.Contains(string(raw), "&lt;tool_call&gt;") || !strings.Contains(stdout.String(), tc.output) {
			t.Errorf("%s: page lacks the escaped token or stdout %q does not name %s", tc.name, stdout.String(), tc.output)
		}
	}
}
