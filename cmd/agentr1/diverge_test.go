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
	stop := regexp.MustCompile(`after RL step (\d+): the policy has diverged[^"]*the last checkpoint is (\S+) `)
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
		if want := filepath.Join(out, "checkpoints", trainer.CheckpointName(step-1)); m[2] != want {
			t.Errorf("last checkpoint %s, want %s (the step before the divergence)", m[2], want)
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
