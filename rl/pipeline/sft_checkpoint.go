package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"agentr1/model"
	"agentr1/rl/trainer"
	"agentr1/tensor"
)

// sftState is everything SFT carries from one step to the next: with it saved, an interrupted
// warm start continues bit for bit (the learning rate is a function of the step; each pass's
// data order is drawn from PCG(seed, first step of the pass), and the rest of the current
// pass is saved as it is).
type sftState struct {
	cfg     SFTConfig
	seed    uint64
	policy  *model.Model
	opt     tensor.AdamW
	step    int                // SFT steps done (the next step's index)
	batches [][]int            // the current pass's remaining batches, as demonstration indices
	watch   trainer.Divergence // the loss's divergence watch
	run     json.RawMessage    // the caller's state (SFTOptions.SaveState), saved with the checkpoint
}

// sftMeta is the JSON meta of an SFT checkpoint.
type sftMeta struct {
	Kind      string    `json:"kind"` // "sft"
	Config    SFTConfig `json:"config"`
	Seed      uint64    `json:"seed"`
	StepsDone int       `json:"steps_done"`
	OptStep   int       `json:"opt_step"`
	Batches   [][]int   `json:"batches"` // the current pass's remaining batches (demonstration indices)
	// LossWatch is the divergence watch's state (absent in checkpoints written before it).
	LossWatch *trainer.Divergence `json:"loss_watch,omitempty"`
	RunState  json.RawMessage     `json:"run_state,omitempty"` // the caller's state
}

// SFTCheckpointName is the file name of the SFT checkpoint after step s. It does not match
// the RL checkpoints' "step-" prefix, so LatestCheckpoint never mistakes one for the other.
func SFTCheckpointName(s int) string { return fmt.Sprintf(sftKind+"%06d.ckpt", s) }

// sftKind is the prefix of SFTCheckpointName's files, in trainer.CheckpointsOf's terms.
const sftKind = "sft-"

// save writes the state to dir/SFTCheckpointName(step) atomically with a checksum, removes the
// older SFT checkpoints of dir (only the latest is needed to resume) and returns the path. A
// state holding a value that is not finite is refused, and the older checkpoints are removed
// only once the new one has been read back and verified: the last good checkpoint is never
// deleted before its successor is known good.
func (st *sftState) save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sft checkpoint: %w", err)
	}
	if name := nonFiniteParam(st.policy.Params, func(p *model.Param) []float32 { return p.Data }); name != "" {
		return "", fmt.Errorf("sft checkpoint after step %d refused: weight %s is not finite", st.step, name)
	}
	for _, moments := range [][][]float32{st.opt.M, st.opt.V} {
		for i, m := range moments {
			for _, x := range m {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return "", fmt.Errorf("sft checkpoint after step %d refused: an AdamW moment of %s is not finite", st.step, st.policy.Params[i].Name)
				}
			}
		}
	}
	meta, err := json.Marshal(sftMeta{Kind: "sft", Config: st.cfg, Seed: st.seed, StepsDone: st.step, OptStep: st.opt.Step, Batches: st.batches, LossWatch: &st.watch, RunState: st.run})
	if err != nil {
		return "", fmt.Errorf("sft checkpoint meta: %w", err)
	}
	f := &trainer.CheckpointFile{Step: st.step, Meta: meta}
	f.Tensors = trainer.AppendParams(f.Tensors, "policy/", st.policy.Params)
	f.Tensors = trainer.AppendMoments(f.Tensors, "opt/", &st.opt, st.policy.Params)
	path := filepath.Join(dir, SFTCheckpointName(st.step))
	if err := trainer.WriteCheckpointFile(path, f); err != nil {
		return "", err
	}
	if _, err := trainer.ReadCheckpointFile(path); err != nil {
		return "", fmt.Errorf("sft checkpoint written but unreadable, the older ones kept: %w", err)
	}
	old, err := sftCheckpoints(dir)
	if err != nil {
		return "", err
	}
	for _, p := range old {
		if p != path {
			if err := os.Remove(p); err != nil {
				return "", fmt.Errorf("sft checkpoint: remove the older %w", err)
			}
		}
	}
	return path, nil
}

// load restores the state saved in path. The checkpoint must come from the same settings and
// seed: resuming with others would not be the run that was interrupted.
func (st *sftState) load(path string) error {
	f, err := trainer.ReadCheckpointFile(path)
	if err != nil {
		return err
	}
	var meta sftMeta
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		return fmt.Errorf("sft checkpoint %s: meta: %w", path, err)
	}
	switch {
	case meta.Kind != "sft":
		return fmt.Errorf("sft checkpoint %s: kind %q, want sft", path, meta.Kind)
	case meta.Config != st.cfg:
		return fmt.Errorf("sft checkpoint %s: written with SFT settings %+v, resuming with %+v", path, meta.Config, st.cfg)
	case meta.Seed != st.seed:
		return fmt.Errorf("sft checkpoint %s: seed %d, resuming with seed %d", path, meta.Seed, st.seed)
	case meta.StepsDone < 0 || meta.StepsDone > st.cfg.TotalSteps():
		return fmt.Errorf("sft checkpoint %s: steps_done %d outside [0, %d]", path, meta.StepsDone, st.cfg.TotalSteps())
	}
	if err := trainer.LoadParams(f, path, "policy/", st.policy.Params); err != nil {
		return err
	}
	st.policy.MarkWeightsChanged()
	if err := trainer.LoadMoments(f, path, "opt/", &st.opt, st.policy.Params, meta.OptStep); err != nil {
		return err
	}
	st.step, st.batches = meta.StepsDone, meta.Batches
	if meta.LossWatch != nil {
		st.watch = *meta.LossWatch
	}
	st.run = meta.RunState
	return nil
}

// sftCheckpoints lists the SFT checkpoints in dir (none when dir does not exist).
func sftCheckpoints(dir string) ([]string, error) { return trainer.CheckpointsOf(dir, sftKind) }

// latestSFTCheckpoint returns the SFT checkpoint with the highest step in dir, or "" when
// there is none.
func latestSFTCheckpoint(dir string) (string, error) {
	path, err := trainer.LatestCheckpointOf(dir, sftKind)
	if errors.Is(err, trainer.ErrNoCheckpoint) {
		return "", nil
	}
	return path, err
}

// RemoveSFTCheckpoints deletes the SFT checkpoints in dir (once the SFT base is saved they are
// not needed).
func RemoveSFTCheckpoints(dir string) error {
	paths, err := sftCheckpoints(dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove sft checkpoint: %w", err)
		}
	}
	return nil
}
