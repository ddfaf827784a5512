package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenVerbose runs `golden -v` on three verl cases, one passing, one the reference
// rejected and one with no implementation, and checks one line each and the summary.
func TestGoldenVerbose(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/golden/verl/core_algos.json")
	if err != nil {
		t.Fatal(err)
	}
	var all []map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	pick := func(id string) map[string]any {
		for _, c := range all {
			if c["case_id"] == id {
				return c
			}
		}
		t.Fatalf("no case %s", id)
		return nil
	}
	missing := map[string]any{"fn": "no_such_fn", "case_id": "missing-fn", "inputs": map[string]any{}, "outputs": map[string]any{"y": 1.0}}
	cases, _ := json.Marshal([]any{pick("visible-111-logprobs_from_logits"), pick("visible-065-kl_penalty"), missing})
	path := filepath.Join(t.TempDir(), "three.json")
	if err := os.WriteFile(path, cases, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string // the lines of stdout, by prefix
	}{
		{[]string{"golden", "-v", path}, []string{"PASS visible-111-logprobs_from_logits", "SKIP visible-065-kl_penalty", "FAIL missing-fn", "1 passed, 1 failed, 1 skipped"}},
		{[]string{"golden", path}, []string{"FAIL missing-fn", "1 passed, 1 failed, 1 skipped"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 1 {
			t.Errorf("%v: exit %d, want 1 (a case failed)", tc.args, code)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != len(tc.want) {
			t.Fatalf("%v: %d lines, want %d:\n%s", tc.args, len(lines), len(tc.want), stdout.String())
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%v: line %d = %q, want it to start with %q", tc.args, i, lines[i], w)
			}
		}
	}
	if got := strings.Split(strings.TrimSpace(stdoutOf(t, "golden", "-v", path)), "\n")[1]; !strings.Contains(got, "params=map[kl_penalty:full]: verl rejects this call") {
		t.Errorf("skip line %q should give the parameters and the reference's reason", got)
	}
}

// TestGoldenErrorsOnce checks a file that cannot be read or parsed is named once, without the
// package's name repeated after the command's.
func TestGoldenErrorsOnce(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"x":`), 0o644)
	for _, path := range []string{bad, filepath.Join(t.TempDir(), "none.json")} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"golden", path}, &stdout, &stderr); code != 1 {
			t.Errorf("golden %s: exit %d, want 1", path, code)
		}
		msg := stderr.String()
		if !strings.HasPrefix(msg, "agentr1 golden: ") || strings.Contains(msg, "golden: golden:") || strings.Count(msg, path) != 1 {
			t.Errorf("golden %s: error %q should start with the command and name the file once", path, msg)
		}
	}
}

// stdoutOf runs the command line args and returns what it printed on stdout.
func stdoutOf(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run(args, &stdout, &stderr)
	return stdout.String()
}
