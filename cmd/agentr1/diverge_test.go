package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"agentr1/rl/trainer"
)

// TestDivergingRunStops trains the tiny run with an absurd RL learning rate that reaches NaN a
// few steps in (warming up over 1000 steps, so the first steps stay finite and leave
// checkpoints). The run must stop with exit 1 and a message naming the step and the last
// checkpoint, write no checkpoint of the diverged policy, and leave every checkpoint finite;
// --resume must give the same stop, never a panic.
func TestDivergingRunStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short trainings")
	}
	out := filepath.Join(t.TempDir(), "run")
	args := append(tinyRunArgs(out), "--rl.steps", "10", "--rl.lr", "3e9", "--rl.warmup-steps", "1000")
	stop := regexp.MustCompile(`step (\d+): the policy has diverged[^"]*the last checkpoint is (\S+) `)
	var first string
	for _, try := range [][]string{args, {"train", "--resume", out}} {
		var buf bytes.Buffer
		code := run(try, &buf, &buf)
		text := buf.String()
		if code != 1 || strings.Contains(text, "goroutine ") {
			t.Fatalf("%v: exit %d, want 1 without a panic:\n%s", try[:2], code, text)
		}
		m := stop.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%v: no stop naming the step and the last checkpoint:\n%s", try[:2], text)
		}
		if first == "" {
			first = m[0]
		} else if m[0] != first {
			t.Errorf("resumed run stopped with %q, the first run with %q", m[0], first)
		}
		step, _ := strconv.Atoi(m[1])
		if latest, err := trainer.LatestCheckpoint(filepath.Join(out, "checkpoints")); err != nil || m[2] != latest {
			t.Errorf("last checkpoint named %s, the latest is %s (%v)", m[2], latest, err)
		}
		if _, err := os.Stat(filepath.Join(out, "checkpoints", trainer.CheckpointName(step))); err == nil {
			t.Errorf("a checkpoint of the diverged step %d was written", step)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(out, "checkpoints", "step-*.ckpt"))
	if len(paths) == 0 {
		t.Fatal("no RL checkpoint before the divergence: the test cannot tell")
	}
	for _, p := range paths {
		f, err := trainer.ReadCheckpointFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, nt := range f.Tensors {
			for _, x := range nt.Data {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("%s: tensor %s holds %v", p, nt.Name, x)
				}
			}
		}
	}
}

// TestDivergenceShortOfNaNIsWarned trains the tiny run at 1000x the default learning rates
// (SFT 2, RL 0.3): the losses stay finite but explode. Each flagged step must be warned of in
// the log and marked in metrics.jsonl ("diverging"), the end of the run must say so, and with
// --stop-on-divergence the run must stop at the first flagged step with exit 1, naming it.
func TestDivergenceShortOfNaNIsWarned(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short trainings")
	}
	args := func(out string) []string {
		return append(tinyRunArgs(out), "--sft.steps", "30", "--sft.lr", "2", "--rl.steps", "12", "--rl.lr", "0.3")
	}
	out := filepath.Join(t.TempDir(), "run")
	var buf bytes.Buffer
	if code := run(args(out), &buf, &buf); code != 0 {
		t.Fatalf("exit %d, want 0 (warned, not stopped):\n%s", code, buf.String())
	}
	warned := regexp.MustCompile(`diverging at (SFT|RL) step \d+: `).FindAllString(buf.String(), -1)
	if len(warned) == 0 || !strings.Contains(buf.String(), "this run diverged: ") {
		t.Fatalf("no divergence warnings or no closing one:\n%s", buf.String())
	}
	flagged := 0
	for _, m := range stepRecords(t, filepath.Join(out, "metrics.jsonl"), "sft", "rl", "critic-warmup") {
		if why, _ := m["diverging"].(string); why != "" {
			flagged++
		}
	}
	if flagged != len(warned) {
		t.Errorf("%d records marked diverging in metrics.jsonl, %d warnings", flagged, len(warned))
	}

	stopped := filepath.Join(t.TempDir(), "stopped")
	buf.Reset()
	code := run(append(args(stopped), "--stop-on-divergence"), &buf, &buf)
	first := strings.TrimPrefix(strings.TrimSuffix(warned[0], ": "), "diverging at ") // "SFT step 13"
	if code != 1 || !strings.Contains(strings.ToLower(buf.String()), strings.ToLower(first)+": diverging") {
		t.Fatalf("--stop-on-divergence: exit %d, want 1 with a stop at the first flagged step (%s):\n%s", code, first, buf.String())
	}
	if strings.Contains(buf.String(), "this run diverged: ") {
		t.Errorf("the stopped run went on to its end:\n%s", buf.String())
	}

	// RL alone diverging: the stop names the RL step and keeps the checkpoint before it. At a
	// learning rate of 1 the first updates blow up whatever the rollouts hold; this seed's
	// first flagged step is the second, after the first checkpoint.
	rlOnly := filepath.Join(t.TempDir(), "rl")
	buf.Reset()
	code = run(append(tinyRunArgs(rlOnly), "--rl.steps", "12", "--rl.lr", "1", "--stop-on-divergence"), &buf, &buf)
	m := regexp.MustCompile(`RL step (\d+): diverging: approx_kl [^"]*the last checkpoint is (\S+)"`).FindStringSubmatch(buf.String())
	if code != 1 || m == nil {
		t.Fatalf("RL divergence with --stop-on-divergence: exit %d, want 1 naming the RL step and the last checkpoint:\n%s", code, buf.String())
	}
	if _, err := os.Stat(m[2]); err != nil {
		t.Errorf("the last checkpoint named: %v", err)
	}
}
