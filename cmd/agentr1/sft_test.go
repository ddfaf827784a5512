package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sftSample is five transcripts, OpenAI messages and ChatML text mixed (the file sft's help
// example trains on).
const sftSample = "../../testdata/transcripts/sample.jsonl"

// TestSFTCommand runs sft on a transcript file, checks the loss it prints falls and that eval,
// train and a second sft load the folder it writes; then that a malformed file trains nothing.
func TestSFTCommand(t *testing.T) {
	dir := t.TempDir()
	questions, corpus, modelDir := realDataFixture(t, dir)
	data := sftSample
	sample, err := os.ReadFile(sftSample)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sft")
	var stdout, stderr bytes.Buffer
	args := []string{"sft", "--data", data, "--model", modelDir, "--out", out, "--steps", "10", "--batch", "5", "--lr", "1e-2", "--warmup-steps", "0"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("sft: exit %d, stderr %q", code, stderr.String())
	}
	var losses []float64
	for _, line := range strings.Split(stdout.String(), "\n") {
		var step, steps int
		var loss float64
		if _, err := fmt.Sscanf(line, "step %d/%d  loss %f", &step, &steps, &loss); err == nil {
			losses = append(losses, loss)
		}
	}
	if !strings.Contains(stdout.String(), "on 5 transcripts of "+data) || len(losses) < 2 || !(losses[len(losses)-1] < losses[0]) {
		t.Errorf("sft printed %q: want 5 transcripts and a falling loss (read %v)", stdout.String(), losses)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("output folder: %v", err)
		}
	}
	stdout.Reset()
	stderr.Reset()
	evalArgs := []string{"eval", "--model", out, "--data", questions, "--n", "1", "--corpus", corpus, "--max-turns", "1", "--turn-tokens", "4", "--batch", "1"}
	if code := run(evalArgs, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "evaluating "+out) {
		t.Errorf("eval --model %s: exit %d, stdout %q, stderr %q", out, code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	trainArgs := append([]string{"train", "--data", questions, "--corpus", corpus, "--model", out, "--out", filepath.Join(dir, "run")}, tinyRealFlags...)
	if code := run(trainArgs, &stdout, &stderr); code != 0 {
		t.Errorf("train --model %s: exit %d, stderr %q", out, code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	again := []string{"sft", "--data", data, "--model", out, "--out", filepath.Join(dir, "again"), "--steps", "1", "--batch", "2"}
	if code := run(again, &stdout, &stderr); code != 0 {
		t.Errorf("sft --model %s: exit %d, stderr %q", out, code, stderr.String())
	}

	bad := filepath.Join(dir, "bad.jsonl")
	lines := strings.Split(string(sample), "\n")
	lines[3] = `{"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": "{query}"}}]}]}`
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	badOut := filepath.Join(dir, "bad")
	stdout.Reset()
	stderr.Reset()
	code := run([]string{"sft", "--data", bad, "--model", modelDir, "--out", badOut, "--steps", "2"}, &stdout, &stderr)
	if want := bad + ":4: field messages[1].tool_calls[0].function.arguments"; code != 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("malformed line: exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
	}
	if _, err := os.Stat(badOut); !os.IsNotExist(err) || strings.Contains(stdout.String(), "step ") {
		t.Errorf("malformed file: trained or wrote %s (%v), stdout %q", badOut, err, stdout.String())
	}
}

func TestSFTUsageErrors(t *testing.T) {
	existing := t.TempDir()
	if err := os.WriteFile(filepath.Join(existing, "model.safetensors"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--data is required"},
		{[]string{"--data", "d.jsonl"}, "--model is required"},
		{[]string{"--data", "d.jsonl", "--model", "m"}, "--out is required"},
		{[]string{"--data", "d.jsonl", "--model", "m", "--out", "o", "--batch", "0"}, "Batch 0"},
		{[]string{"--data", "d.jsonl", "--model", "m", "--out", "o", "--context-weight", "2"}, "ContextWeight 2"},
		{[]string{"--data", "d.jsonl", "--model", "m", "--out", "o", "--decay", "step"}, "flag -decay: unknown learning-rate decay"},
		{[]string{"--data", "d.jsonl", "--model", "m", "--out", existing}, "already holds a model"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"sft"}, c.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
