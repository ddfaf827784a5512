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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentr1/rl/pipeline"
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
		"--demos", "16", "--sft.steps", "4", "--sft.batch", "4", "--sft.copy-steps", "2", "--sft.copy-every", "2",
		"--model.hidden", "32", "--model.layers", "1", "--model.heads", "2", "--model.kv-heads", "1", "--model.intermediate", "64",
		"--rl.steps", "40", "--rl.prompts", "2", "--rl.n", "2", "--rl.max-turns", "2", "--rl.max-turn-tokens", "24", "--rl.max-len", "320",
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
	// The human lines: one per RL step with its time left, the last at 0s.
	stepLines := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "rl step ") && strings.Contains(line, "  ETA ") {
			stepLines++
			if strings.HasPrefix(line, "rl step  40/40") && !strings.HasSuffix(line, "ETA 0s") {
				t.Errorf("last RL step line: %q, want it to end with ETA 0s", line)
			}
		}
	}
	// The closing summary: one row per evaluation set, before and after RL and the baselines,
	// and where the time went (8 SFT steps: 2 copy steps, then 4 demonstration steps with a
	// copy step after every second).
	for _, want := range []string{"EM (F1)    SFT base         after RL         Base Tool Call   Naive RAG        closed book", "\nheldout  ", "\nunseen   ",
		"(8 steps, ", "grpo ", "(40 steps, ", "s each: rollout ", "; setup, evaluations and baselines "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if stepLines != 40 {
		t.Errorf("%d RL step lines with an ETA, want 40:\n%s", stepLines, out.String())
	}

	cmd, sub := startMain(t, tinyRunArgs(killed))
	// Wait for a checkpoint (of step 1 to 20), then kill at a random moment within the next steps.
	target := 1 + rand.IntN(20)
	waitUntil(t, cmd, sub, fmt.Sprintf("checkpoint %d", target), func() bool {
		return countCheckpoints(filepath.Join(killed, "checkpoints")) >= target
	})
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
	// The killed run may have logged steps past its last checkpoint; the resumed run logs from
	// the checkpoint on. Compare the last occurrence of each step with the uninterrupted run.
	sameSteps(t, "rl", rlSteps(t, filepath.Join(killed, "metrics.jsonl")), want)
	// Every output file must be the uninterrupted run's: the steps redone after the checkpoint
	// are not appended twice, and eval.json holds the SFT base and the evaluations before the
	// resume point. A --resume of the finished run must leave them so.
	for _, pass := range []string{"resumed", "resumed again when finished"} {
		if pass != "resumed" {
			out.Reset()
			if code := run([]string{"train", "--resume", killed}, &out, &out); code != 0 {
				t.Fatalf("resume of the finished run: exit %d\n%s", code, out.String())
			}
		}
		for _, name := range []string{"metrics.jsonl", "eval.json", "samples.jsonl"} {
			sameOutput(t, pass, filepath.Join(killed, name), filepath.Join(whole, name))
		}
	}
}

// sameOutput checks that the JSON or JSONL file got equals want byte for byte once the
// wall-clock fields (time_*, tokens_per_s) are taken out of every object.
func sameOutput(t *testing.T, what, got, want string) {
	t.Helper()
	g, w := withoutTimes(t, got), withoutTimes(t, want)
	if len(g) != len(w) {
		t.Errorf("%s %s: %d JSON values, the uninterrupted run's has %d", what, filepath.Base(got), len(g), len(w))
	}
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Errorf("%s %s: value %d differs:\n  got  %.300s\n  want %.300s", what, filepath.Base(got), i+1, g[i], w[i])
			return
		}
	}
}

// withoutTimes returns the JSON values of path (one for a JSON file, one a line for JSONL),
// re-encoded without their wall-clock fields.
func withoutTimes(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := json.Marshal(dropTimes(v))
		out = append(out, string(b))
	}
}

func dropTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasPrefix(k, "time_") || k == "tokens_per_s" {
				delete(x, k)
				continue
			}
			x[k] = dropTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropTimes(e)
		}
	}
	return v
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// countCheckpoints counts the RL checkpoints in dir.
func countCheckpoints(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "step-") && strings.HasSuffix(e.Name(), ".ckpt") {
			n++
		}
	}
	return n
}

// rlSteps returns the RL step records of a metrics.jsonl, in order.
func rlSteps(t *testing.T, path string) []map[string]any {
	t.Helper()
	return stepRecords(t, path, "rl", "critic-warmup")
}

// stepRecords returns the records of a metrics.jsonl whose phase is one of phases, in order.
func stepRecords(t *testing.T, path string, phases ...string) []map[string]any {
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
			if p, _ := m["phase"].(string); slices.Contains(phases, p) {
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

// sameSteps checks that the last record of every step in got equals the record of that step in
// want, wall-clock fields aside.
func sameSteps(t *testing.T, what string, got, want []map[string]any) {
	t.Helper()
	last := map[int]map[string]any{}
	for _, m := range got {
		last[int(m["step"].(float64))] = m
	}
	for _, w := range want {
		step := int(w["step"].(float64))
		g, ok := last[step]
		if !ok {
			t.Errorf("%s step %d missing after resume", what, step)
			continue
		}
		for k, wv := range w {
			if strings.HasPrefix(k, "time_") || k == "tokens_per_s" {
				continue
			}
			if gv := g[k]; !sameJSON(gv, wv) {
				t.Errorf("%s step %d %s: resumed %v, uninterrupted %v", what, step, k, gv, wv)
			}
		}
	}
}

// TestInterruptDuringSFT sends SIGINT (Ctrl-C) to a training subprocess in the middle of SFT:
// it must save the SFT state and exit 130; --resume must continue SFT where it stopped and give
// the uninterrupted run's SFT losses, RL steps and final evaluation exactly.
func TestInterruptDuringSFT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short trainings")
	}
	dir := t.TempDir()
	args := func(out string) []string {
		a := tinyRunArgs(out)
		return append(a, "--sft.steps", "150", "--rl.steps", "3", "--sft-checkpoint-every", "1000")
	}
	whole, stopped := filepath.Join(dir, "whole"), filepath.Join(dir, "stopped")
	var out bytes.Buffer
	if code := run(args(whole), &out, &out); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", code, out.String())
	}
	// The warm start's steps, demonstration and copy steps both: its checkpoints count them all.
	sftPhases := []string{"sft", pipeline.PhaseCopy}
	cfg, err := loadRunConfig(whole)
	if err != nil {
		t.Fatal(err)
	}
	total := cfg.SFT.TotalSteps()
	wantSFT := stepRecords(t, filepath.Join(whole, "metrics.jsonl"), sftPhases...)
	if len(wantSFT) != total {
		t.Fatalf("uninterrupted run logged %d SFT steps, want %d", len(wantSFT), total)
	}

	cmd, sub := startMain(t, args(stopped))
	target := 5 + rand.IntN(60)
	metrics := filepath.Join(stopped, "metrics.jsonl")
	waitUntil(t, cmd, sub, fmt.Sprintf("%d SFT steps", target), func() bool {
		_, err := os.Stat(metrics)
		return err == nil && len(stepRecords(t, metrics, sftPhases...)) >= target
	})
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(sub.String(), "interrupted after SFT step") {
		t.Fatalf("exit %d, want 130 with an SFT interruption message:\n%s", code, sub.String())
	}
	before := len(stepRecords(t, metrics, sftPhases...))
	if before >= total {
		t.Fatalf("SFT finished before the interrupt (%d steps); the test cannot tell", before)
	}
	t.Logf("interrupted after %d SFT steps (signal at %d)", before, target)

	out.Reset()
	if code := run([]string{"train", "--resume", stopped}, &out, &out); code != 0 {
		t.Fatalf("resumed run: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("resumed SFT from %s", filepath.Join(stopped, "checkpoints", fmt.Sprintf("sft-%06d.ckpt", before)))) {
		t.Errorf("the resumed run did not continue SFT from step %d:\n%s", before, out.String())
	}
	gotSFT := stepRecords(t, metrics, sftPhases...)
	if len(gotSFT) != total {
		t.Errorf("%d SFT records in all, want %d (each step once)", len(gotSFT), total)
	}
	sameSteps(t, "sft", gotSFT, wantSFT)
	sameSteps(t, "rl", rlSteps(t, metrics), rlSteps(t, filepath.Join(whole, "metrics.jsonl")))
	evalOf := func(run string) any {
		var ev map[string]any
		raw, err := os.ReadFile(filepath.Join(run, "eval.json"))
		if err == nil {
			err = json.Unmarshal(raw, &ev)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Every set's evaluation after RL (eval.json's sets.<set>.after_rl).
		final := map[string]any{}
		sets, _ := ev["sets"].(map[string]any)
		for name, s := range sets {
			final[name] = s.(map[string]any)["after_rl"]
		}
		if len(final) != 2 || final["heldout"] == nil {
			t.Fatalf("%s/eval.json: after-RL evaluations %v, want held-out and unseen", run, final)
		}
		return final
	}
	if g, w := evalOf(stopped), evalOf(whole); !sameJSON(g, w) {
		t.Errorf("final evaluation: resumed %v, uninterrupted %v", g, w)
	}
	for _, name := range []string{"metrics.jsonl", "eval.json", "samples.jsonl"} {
		sameOutput(t, "resumed", filepath.Join(stopped, name), filepath.Join(whole, name))
	}
}

// TestInterruptSavesCheckpoint sends SIGINT (Ctrl-C) to a training subprocess during RL: it must
// finish the step under way, save a checkpoint of it, say how to resume, and exit with 130.
func TestInterruptSavesCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short training")
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd, sub := startMain(t, tinyRunArgs(out))
	waitUntil(t, cmd, sub, "second checkpoint", func() bool {
		return countCheckpoints(filepath.Join(out, "checkpoints")) >= 2
	})
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

// startMain runs this test binary as the agentr1 command with args (TestMain dispatches on
// AGENTR1_TEST_MAIN), its stdout and stderr gathered in the returned buffer.
func startMain(t *testing.T, args []string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTR1_TEST_MAIN=1")
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// waitUntil polls ready every millisecond until it holds; after 3 minutes it kills cmd and fails
// the test, saying what it waited for and what cmd printed.
func waitUntil(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, what string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !ready() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no %s after 3 minutes:\n%s", what, out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestResumeWithoutCheckpoint resumes a run that left its output files but no checkpoint, as
// one killed before its first does: the run starts over, and its metrics.jsonl must hold each
// step once, as an uninterrupted run's, not the lost steps followed by the same steps again.
func TestResumeWithoutCheckpoint(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	args := append(tinyRunArgs(out), "--rl.steps", "2")
	var buf bytes.Buffer
	if code := run(args, &buf, &buf); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, buf.String())
	}
	sft, rl := len(stepRecords(t, filepath.Join(out, "metrics.jsonl"), "sft")), len(rlSteps(t, filepath.Join(out, "metrics.jsonl")))
	for _, saved := range []string{"checkpoints", "sft-base"} {
		if err := os.RemoveAll(filepath.Join(out, saved)); err != nil {
			t.Fatal(err)
		}
	}
	buf.Reset()
	if code := run([]string{"train", "--resume", out}, &buf, &buf); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, buf.String())
	}
	if !strings.Contains(buf.String(), "the run starts over") {
		t.Errorf("resume without a checkpoint did not say it starts over:\n%s", buf.String())
	}
	gotSFT, gotRL := len(stepRecords(t, filepath.Join(out, "metrics.jsonl"), "sft")), len(rlSteps(t, filepath.Join(out, "metrics.jsonl")))
	if gotSFT != sft || gotRL != rl {
		t.Errorf("after the resume metrics.jsonl holds %d SFT and %d RL steps, want %d and %d", gotSFT, gotRL, sft, rl)
	}
}

// TestResumeSharedBaseWithoutRLCheckpoint resumes a run that loaded its SFT base from a shared
// --base-policy folder and left its output files but no RL checkpoint, as one killed before its
// first does: the resumed run must load the same base (not train its own) and redo RL from step
// 1 with every output file as an uninterrupted run's, not the lost steps followed by the same
// steps again.
func TestResumeSharedBaseWithoutRLCheckpoint(t *testing.T) {
	dir := t.TempDir()
	base, out := filepath.Join(dir, "base"), filepath.Join(dir, "run")
	var buf bytes.Buffer
	if code := run(append(tinyRunArgs(base), "--rl.steps", "1"), &buf, &buf); code != 0 {
		t.Fatalf("run training the base: exit %d\n%s", code, buf.String())
	}
	args := append(tinyRunArgs(out), "--rl.steps", "2", "--base-policy", filepath.Join(base, "sft-base"))
	if code := run(args, &buf, &buf); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, buf.String())
	}
	whole := filepath.Join(dir, "whole")
	if err := os.CopyFS(whole, os.DirFS(out)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(out, "checkpoints")); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if code := run([]string{"train", "--resume", out}, &buf, &buf); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, buf.String())
	}
	if _, err := os.Stat(filepath.Join(out, "sft-base")); err == nil {
		t.Errorf("the resumed run trained its own SFT base instead of loading the shared one:\n%s", buf.String())
	}
	for _, name := range []string{"metrics.jsonl", "samples.jsonl", "eval.json"} {
		sameOutput(t, "resumed", filepath.Join(out, name), filepath.Join(whole, name))
	}
}

// TestResumeDamagedCheckpoint resumes a run whose latest RL checkpoint is damaged: the error
// must name the file and say that the run continues from the checkpoint before it, named,
// once the damaged file is moved aside; the file is left in place, and doing as told finishes
// the run with its files as an uninterrupted run's.
func TestResumeDamagedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	var buf bytes.Buffer
	if code := run(append(tinyRunArgs(out), "--rl.steps", "2"), &buf, &buf); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, buf.String())
	}
	whole := filepath.Join(dir, "whole")
	if err := os.CopyFS(whole, os.DirFS(out)); err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(out, "checkpoints", "step-000002.ckpt")
	raw, err := os.ReadFile(latest)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0xff
	if err := os.WriteFile(latest, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if code := run([]string{"train", "--resume", out}, &buf, &buf); code != 1 {
		t.Fatalf("resume from a damaged checkpoint: exit %d, want 1\n%s", code, buf.String())
	}
	for _, want := range []string{latest, "checksum", "the checkpoint before it, " + filepath.Join(out, "checkpoints", "step-000001.ckpt"), "move the damaged file aside"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the error lacks %q:\n%s", want, buf.String())
		}
	}
	if _, err := os.Stat(latest); err != nil {
		t.Errorf("the damaged checkpoint was not left in place: %v", err)
	}
	if err := os.Rename(latest, latest+".damaged"); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if code := run([]string{"train", "--resume", out}, &buf, &buf); code != 0 {
		t.Fatalf("resume once the damaged checkpoint is moved aside: exit %d\n%s", code, buf.String())
	}
	for _, name := range []string{"metrics.jsonl", "samples.jsonl", "eval.json"} {
		sameOutput(t, "resumed from the checkpoint before the damaged one", filepath.Join(out, name), filepath.Join(whole, name))
	}
}

// TestResumeMovedRun resumes a run folder moved after its SFT base was saved: the run must
// load the base at the folder's new place, not train another at the old one.
func TestResumeMovedRun(t *testing.T) {
	dir := t.TempDir()
	orig, moved := filepath.Join(dir, "run"), filepath.Join(dir, "moved")
	var buf bytes.Buffer
	if code := run(append(tinyRunArgs(orig), "--rl.steps", "1"), &buf, &buf); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, buf.String())
	}
	if err := os.RemoveAll(filepath.Join(orig, "checkpoints")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(orig, moved); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if code := run([]string{"train", "--resume", moved}, &buf, &buf); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, buf.String())
	}
	if _, err := os.Stat(orig); err == nil {
		t.Errorf("the resumed run wrote to its old folder %s:\n%s", orig, buf.String())
	}
}
