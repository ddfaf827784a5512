package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// When AGENTR1_TEST_MAIN is set, the test binary runs the agentr1 command line instead of the
// tests, so TestKillAndResume can start a real training process and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTR1_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// tinyRunArgs is a training run small enough for a test: a tiny world and model, a few SFT and
// RL steps, a checkpoint after every step.
func tinyRunArgs(out string) []string {
	return []string{"train", "--out", out, "--seed", "5", "--workers", "2",
		"--train-world.questions", "80", "--eval-world.questions", "20", "--held-out", "4", "--eval-questions", "4",
		"--demos", "16", "--sft.steps", "4", "--sft.batch", "4",
		"--model.hidden", "32", "--model.layers", "1", "--model.heads", "2", "--model.kv-heads", "1", "--model.intermediate", "64",
		"--rl.steps", "40", "--rl.prompts", "2", "--rl.n", "2", "--rl.max-turns", "2", "--rl.max-turn-tokens", "24", "--rl.max-len", "200",
		"--checkpoint-every", "1", "--eval-batch", "4"}
}

// TestKillAndResume starts a short training run as a subprocess, kills it with SIGKILL at a
// random point after its first checkpoint, resumes it, and checks that every RL step logged
// after the resume equals the same step of an uninterrupted run with the same seed and workers
// (wall-clock fields aside).
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three short trainings")
	}
	dir := t.TempDir()
	whole, killed := filepath.Join(dir, "whole"), filepath.Join(dir, "killed")
	var out bytes.Buffer
	if code := run(tinyRunArgs(whole), &out, &out); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", code, out.String())
	}
	want := rlSteps(t, filepath.Join(whole, "metrics.jsonl"))
	if len(want) != 40 {
		t.Fatalf("uninterrupted run logged %d RL steps, want 40", len(want))
	}

	cmd := exec.Command(os.Args[0], tinyRunArgs(killed)...)
	cmd.Env = append(os.Environ(), "AGENTR1_TEST_MAIN=1")
	var sub bytes.Buffer
	cmd.Stdout, cmd.Stderr = &sub, &sub
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for a checkpoint (of step 1 to 20), then kill at a random moment within the next steps.
	target := 1 + rand.IntN(20)
	deadline := time.Now().Add(3 * time.Minute)
	for countCheckpoints(filepath.Join(killed, "checkpoints")) < target {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no checkpoint %d after 3 minutes:\n%s", target, sub.String())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the run finished before it could be killed (state %v); the test cannot tell", cmd.ProcessState)
	}
	before := len(rlSteps(t, filepath.Join(killed, "metrics.jsonl")))
	t.Logf("killed after checkpoint %d with %d RL steps logged", target, before)

	out.Reset()
	if code := run([]string{"train", "--resume", killed}, &out, &out); code != 0 {
		t.Fatalf("resumed run: exit %d\n%s", code, out.String())
	}
	got := rlSteps(t, filepath.Join(killed, "metrics.jsonl"))
	// The killed run may have logged steps past its last checkpoint; the resumed run logs from
	// the checkpoint on. Compare the last occurrence of each step with the uninterrupted run.
	last := map[int]map[string]any{}
	for _, m := range got {
		last[int(m["step"].(float64))] = m
	}
	for _, w := range want {
		step := int(w["step"].(float64))
		g, ok := last[step]
		if !ok {
			t.Errorf("step %d missing after resume", step)
			continue
		}
		for k, wv := range w {
			if strings.HasPrefix(k, "time_") || k == "tokens_per_s" {
				continue
			}
			if gv := g[k]; !sameJSON(gv, wv) {
				t.Errorf("step %d %s: resumed %v, uninterrupted %v", step, k, gv, wv)
			}
		}
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func countCheckpoints(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".ckpt") {
			n++
		}
	}
	return n
}

// rlSteps returns the RL step records of a metrics.jsonl, in order.
func rlSteps(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && err == nil {
			var m map[string]any
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				t.Fatalf("%s: %v", path, jerr)
			}
			if m["phase"] == "rl" || m["phase"] == "critic-warmup" {
				out = append(out, m)
			}
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestInterruptSavesCheckpoint sends SIGINT (Ctrl-C) to a training subprocess during RL: it must
// finish the step under way, save a checkpoint of it, say how to resume, and exit with 130.
func TestInterruptSavesCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short training")
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], tinyRunArgs(out)...)
	cmd.Env = append(os.Environ(), "AGENTR1_TEST_MAIN=1")
	var sub bytes.Buffer
	cmd.Stdout, cmd.Stderr = &sub, &sub
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for countCheckpoints(filepath.Join(out, "checkpoints")) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no checkpoint after 3 minutes:\n%s", sub.String())
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130\n%s", code, err, sub.String())
	}
	steps := len(rlSteps(t, filepath.Join(out, "metrics.jsonl")))
	if !strings.Contains(sub.String(), "interrupted after RL step") || !strings.Contains(sub.String(), "--resume") {
		t.Errorf("no interruption message:\n%s", sub.String())
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoints", fmt.Sprintf("step-%06d.ckpt", steps))); err != nil {
		t.Errorf("no checkpoint of the last logged step %d: %v", steps, err)
	}
}
