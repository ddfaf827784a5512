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
		{"by its alias, report", []string{"report", dir, "--out", out}, 0, out},
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

// TestViewTornLastLine views runs whose metrics.jsonl or samples.jsonl ends in a line cut
// short, as a process killed mid-write leaves it: the page is written without that line and
// stderr names the file and the line. A damaged line before the last stays an error naming
// them.
func TestViewTornLastLine(t *testing.T) {
	sample := `{"step": 1, "question": "q?", "tokens": []}` + "\n"
	metrics := `{"step": 1, "reward_mean": 0.5}` + "\n" + `{"step": 2, "reward_mean": 0.7}` + "\n"
	for _, tc := range []struct {
		name, metrics, samples string
		code                   int
		stderr                 string
	}{
		{"metrics torn", metrics + `{"step": 3, "rew`, sample, 0, "metrics.jsonl:3: skipped a torn last line"},
		{"samples torn", metrics, sample + `{"step": 2, "quest`, 0, "samples.jsonl:2: skipped a torn last line"},
		{"metrics damaged in the middle", `{"step": 1, "rew` + "\n" + metrics, sample, 1, "metrics.jsonl:1: "},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, report.MetricsFile), []byte(tc.metrics), 0o644)
		os.WriteFile(filepath.Join(dir, report.SamplesFile), []byte(tc.samples), 0o644)
		var stdout, stderr bytes.Buffer
		code := run([]string{"view", dir}, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, code, stderr.String(), tc.code, tc.stderr)
		}
		_, err := os.Stat(filepath.Join(dir, "report.html"))
		if written := err == nil; written != (tc.code == 0) {
			t.Errorf("%s: page written %v, want %v", tc.name, written, tc.code == 0)
		}
	}
}
