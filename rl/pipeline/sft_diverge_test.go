package pipeline

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"agentr1/rl/trainer"
)

// TestSFTDivergenceStopsAtTheStep runs SFT with an absurd learning rate warming up over the
// run, so the first steps stay finite and leave checkpoints and a later one poisons the weights.
// SFT must stop with an error naming that step and the last checkpoint, which must exist and
// hold only finite values (the poisoned state is never written, and the last good checkpoint
// is never deleted).
func TestSFTDivergenceStopsAtTheStep(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.SFT.Steps, cfg.SFT.LR, cfg.SFT.WarmupSteps = 12, 1e4, 12
	s, p := tinySetupPolicy(t, cfg)
	dir := t.TempDir()
	steps := 0
	err := SFTWithOptions(context.Background(), p, s.Demos, cfg.SFT, s.Specials.Pad, cfg.Seed,
		SFTOptions{CheckpointDir: dir, CheckpointEvery: 1}, func(SFTMetrics) { steps++ })
	if err == nil {
		t.Fatalf("SFT with learning rate %g finished its %d steps", cfg.SFT.LR, steps)
	}
	m := regexp.MustCompile(`^sft step \d+: .*not finite.*; the last SFT checkpoint is (\S+)$`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error %q, want one naming the step, what was not finite and the last checkpoint", err)
	}
	t.Logf("stopped after %d steps: %v", steps, err)
	// The poison shows either in a step's loss, before its metrics are reported, or in the
	// check of the state the checkpoint after a reported step would hold; either way the last
	// checkpoint is that of the last good step.
	good := steps
	if strings.Contains(err.Error(), "checkpoint after step") {
		good--
	}
	if good <= 0 || m[1] != filepath.Join(dir, SFTCheckpointName(good)) {
		t.Errorf("last checkpoint %s after %d good steps, want %s", m[1], good, SFTCheckpointName(good))
	}
	f, err := trainer.ReadCheckpointFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range f.Tensors {
		for _, x := range nt.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s: tensor %s holds %v", m[1], nt.Name, x)
			}
		}
	}
}

// TestSFTCheckpointRefusesPoisonedState checks the last line of defence: a state whose weights
// are not finite is not written, and the older checkpoint stays.
func TestSFTCheckpointRefusesPoisonedState(t *testing.T) {
	cfg := tinyConfig(t)
	_, p := tinySetupPolicy(t, cfg)
	dir := t.TempDir()
	st := &sftState{cfg: cfg.SFT, seed: cfg.Seed, policy: p, step: 1}
	good, err := st.save(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.step = 2
	p.Params[3].Data[0] = float32(math.Inf(1))
	if _, err := st.save(dir); err == nil || !strings.Contains(err.Error(), p.Params[3].Name) {
		t.Errorf("saving a poisoned state: %v, want an error naming %s", err, p.Params[3].Name)
	}
	if _, err := os.Stat(good); err != nil {
		t.Errorf("the good checkpoint is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SFTCheckpointName(2))); err == nil {
		t.Error("the poisoned state was written")
	}
}
