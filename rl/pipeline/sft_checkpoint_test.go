package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/model"
	"agentr1/rl/trainer"
)

// TestSFTInterruptResume interrupts SFT at several steps (across a pass boundary, so the saved
// data order matters), resumes each time from the checkpoint into a differently initialised
// policy, and checks that every later step's metrics and the final parameters equal the
// uninterrupted run's bit for bit; then the same with two copy steps first, interrupted
// within them, at their end, after, and past the demonstration steps' own count; and with a
// copy step after every demonstration step as well (the default's layout, CopyEvery),
// interrupted after a copy step among the demonstrations and after a demonstration step.
func TestSFTInterruptResume(t *testing.T) {
	t.Run("demonstrations", func(t *testing.T) { testSFTInterruptResume(t, 0, 0, []int{1, 3, 4, 6}) })
	t.Run("copy steps first", func(t *testing.T) { testSFTInterruptResume(t, 2, 0, []int{1, 2, 4, 8}) })
	t.Run("copy rows among the demonstrations", func(t *testing.T) { testSFTInterruptResume(t, 2, 1, []int{2, 3, 4, 9, 14}) })
}

func testSFTInterruptResume(t *testing.T, copySteps, copyEvery int, stops []int) {
	cfg := tinyConfig(t)
	cfg.SFT.Steps = 7 // 12 demonstrations in batches of 4: passes start at steps 0, 3 and 6
	cfg.SFT.CopySteps, cfg.SFT.CopyEvery = copySteps, copyEvery
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	newPolicy := func(seed uint64) *model.Model {
		p, err := NewPolicy(cfg.Model, s.Tokenizer, 2*MaxRow(cfg, s), seed)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	whole := newPolicy(cfg.Seed)
	var want []SFTMetrics
	if err := SFT(context.Background(), whole, s.Demos, cfg.SFT, s.Specials.Pad, cfg.Seed, func(m SFTMetrics) { want = append(want, m) }); err != nil {
		t.Fatal(err)
	}
	for i, m := range want {
		copyStep, _ := cfg.SFT.stepKind(i)
		if phase := map[bool]string{true: PhaseCopy, false: "sft"}[copyStep]; m.Phase != phase {
			t.Errorf("step %d: phase %q, want %q", m.Step, m.Phase, phase)
		}
	}
	for _, stop := range stops {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		p := newPolicy(cfg.Seed)
		opt := SFTOptions{CheckpointDir: dir}
		err := SFTWithOptions(ctx, p, s.Demos, cfg.SFT, s.Specials.Pad, cfg.Seed, opt, func(m SFTMetrics) {
			if m.Step == stop { // steps count from 1: after step stop, stop steps are done
				cancel()
			}
		})
		cancel()
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), SFTCheckpointName(stop)) {
			t.Fatalf("stop %d: error %v, want an interruption naming %s", stop, err, SFTCheckpointName(stop))
		}
		resumed := newPolicy(cfg.Seed + 99) // other initial weights: the checkpoint must restore them
		var got []SFTMetrics
		resumedAt := -1
		opt = SFTOptions{CheckpointDir: dir, Resume: true, OnResume: func(_ string, step int) { resumedAt = step },
			// The checkpoint holds no caller state (no SaveState above): nothing to restore, and
			// a caller's files must be left as they are, not taken back to the start.
			RestoreState: func(json.RawMessage) { t.Errorf("stop %d: a checkpoint without the caller's state restored one", stop) }}
		if err := SFTWithOptions(context.Background(), resumed, s.Demos, cfg.SFT, s.Specials.Pad, cfg.Seed, opt, func(m SFTMetrics) { got = append(got, m) }); err != nil {
			t.Fatalf("stop %d: resume: %v", stop, err)
		}
		if total := cfg.SFT.TotalSteps(); resumedAt != stop || len(got) != total-stop {
			t.Fatalf("stop %d: resumed at %d with %d steps, want %d steps", stop, resumedAt, len(got), total-stop)
		}
		for i, g := range got {
			w := want[stop+i]
			if g.Step != w.Step || g.Loss != w.Loss || g.GradNorm != w.GradNorm || g.LR != w.LR || g.Entropy != w.Entropy {
				t.Errorf("stop %d: step %d: resumed loss %v gnorm %v lr %v, uninterrupted %v %v %v", stop, g.Step, g.Loss, g.GradNorm, g.LR, w.Loss, w.GradNorm, w.LR)
			}
		}
		for i, prm := range resumed.Params {
			if !slices.Equal(prm.Data, whole.Params[i].Data) {
				t.Errorf("stop %d: final %s differs from the uninterrupted run", stop, prm.Name)
				break
			}
		}
	}
}

// TestSFTCheckpointEvery checks periodic SFT checkpoints (only the latest kept), that a
// checkpoint of other settings is refused, and that RemoveSFTCheckpoints clears them.
func TestSFTCheckpointEvery(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.SFT.Steps, cfg.SFT.CopySteps, cfg.SFT.CopyEvery = 5, 0, 0 // five steps, checkpoints after 2 and 4
	s, p := tinySetupPolicy(t, cfg)
	dir := t.TempDir()
	var saved []string
	opt := SFTOptions{CheckpointDir: dir, CheckpointEvery: 2, OnCheckpoint: func(path string) { saved = append(saved, filepath.Base(path)) }}
	if err := SFTWithOptions(context.Background(), p, s.Demos, cfg.SFT, s.Specials.Pad, cfg.Seed, opt, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{SFTCheckpointName(2), SFTCheckpointName(4)}; !slices.Equal(saved, want) {
		t.Errorf("checkpoints written %v, want %v", saved, want)
	}
	left, _ := sftCheckpoints(dir)
	if len(left) != 1 || filepath.Base(left[0]) != SFTCheckpointName(4) {
		t.Errorf("checkpoints kept %v, want only the latest", left)
	}
	for _, tc := range []struct {
		name string
		edit func(c *SFTConfig, seed *uint64)
		want string
	}{
		{"other batch", func(c *SFTConfig, _ *uint64) { c.Batch = 3 }, "SFT settings"},
		{"other seed", func(_ *SFTConfig, seed *uint64) { *seed = 77 }, "seed"},
	} {
		c, seed := cfg.SFT, cfg.Seed
		tc.edit(&c, &seed)
		err := SFTWithOptions(context.Background(), p, s.Demos, c, s.Specials.Pad, seed, SFTOptions{CheckpointDir: dir, Resume: true}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: resume error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if err := RemoveSFTCheckpoints(dir); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left after RemoveSFTCheckpoints", len(entries))
	}
}

// TestSFTResumeDamagedCheckpoint resumes SFT whose latest checkpoint is damaged: the error
// must wrap trainer.ErrDamagedCheckpoint, name the file, and say how the run goes on: from the
// SFT checkpoint before it, named, once the damaged file is moved aside, or with SFT started
// over when there is none. The damaged file is left in place, and doing as told resumes.
func TestSFTResumeDamagedCheckpoint(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.SFT.Steps = 5
	s, _ := tinySetupPolicy(t, cfg)
	train := func(dir string, resume bool, stopAfter int, resumedAt *int) error {
		p, err := NewPolicy(cfg.Model, s.Tokenizer, 2*MaxRow(cfg, s), cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opt := SFTOptions{CheckpointDir: dir, CheckpointEvery: 2, Resume: resume}
		opt.OnResume = func(_ string, step int) { *resumedAt = step }
		return SFTWithOptions(ctx, p, s.Demos, cfg.SFT, s.Specials.Pad, cfg.Seed, opt, func(m SFTMetrics) {
			if m.Step == stopAfter {
				cancel()
			}
		})
	}
	damage := func(path string) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)/2] ^= 0xff
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		earlier bool // an earlier SFT checkpoint (step 2) beside the damaged one (step 4)
		resumed int  // the step a resume starts at once the damaged file is moved aside
	}{
		{"an earlier one", true, 2},
		{"none earlier", false, 0},
	} {
		dir := t.TempDir()
		resumedAt := -1
		if err := train(dir, false, 4, &resumedAt); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: interrupt after step 4: %v", tc.name, err)
		}
		goOn := "no earlier SFT checkpoint, so SFT starts over from step 1"
		if tc.earlier {
			// Another interruption after step 2, kept beside the step-4 checkpoint as a crash
			// between writing a checkpoint and removing the older ones leaves it.
			other := t.TempDir()
			if err := train(other, false, 2, &resumedAt); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: interrupt after step 2: %v", tc.name, err)
			}
			earlier := filepath.Join(dir, SFTCheckpointName(2))
			if err := os.Rename(filepath.Join(other, SFTCheckpointName(2)), earlier); err != nil {
				t.Fatal(err)
			}
			goOn = "the checkpoint before it, " + earlier
		}
		latest := filepath.Join(dir, SFTCheckpointName(4))
		damage(latest)
		err := train(dir, true, -1, &resumedAt)
		if !errors.Is(err, trainer.ErrDamagedCheckpoint) {
			t.Fatalf("%s: resume error %v, want one wrapping ErrDamagedCheckpoint", tc.name, err)
		}
		for _, want := range []string{latest, "checksum", goOn, "move the damaged file aside"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error lacks %q: %v", tc.name, want, err)
			}
		}
		if _, err := os.Stat(latest); err != nil {
			t.Errorf("%s: the damaged checkpoint was not left in place: %v", tc.name, err)
		}
		if err := os.Rename(latest, latest+".damaged"); err != nil {
			t.Fatal(err)
		}
		resumedAt = 0
		if err := train(dir, true, -1, &resumedAt); err != nil || resumedAt != tc.resumed {
			t.Errorf("%s: resume once the damaged file is moved aside: resumed at step %d, %v; want step %d", tc.name, resumedAt, err, tc.resumed)
		}
	}
}
