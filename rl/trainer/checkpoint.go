package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"agentr1/model"
	"agentr1/tensor"
)

// checkpointMeta is the JSON meta of a trainer checkpoint.
type checkpointMeta struct {
	Config     RLConfig `json:"config"`
	Seed       uint64   `json:"seed"`
	StepsDone  int      `json:"steps_done"`
	OptStep    int      `json:"opt_step"`
	CritStep   int      `json:"critic_opt_step"`
	HasRef     bool     `json:"has_ref"`
	HasCritic  bool     `json:"has_critic"`
	KLBeta     *float64 `json:"kl_beta,omitempty"` // the adaptive KL controller's β (absent in older checkpoints)
	RandomNote string   `json:"random"`
	// KLWatch is the divergence watch's state (absent in checkpoints written before it).
	KLWatch *Divergence `json:"kl_watch,omitempty"`
	// RefForInference says that the reference was held for inference (loaded packed from the
	// initial policy's checkpoint, NewWithReference) and is not in the file: a resumed run
	// loads it from that checkpoint again.
	RefForInference bool `json:"ref_for_inference,omitempty"`
	// RunState is Trainer.RunState.
	RunState json.RawMessage `json:"run_state,omitempty"`
}

// randomNote documents the trainer's random state, which is a function of (seed, step).
const randomNote = "every random stream is PCG(seed, step<<8|purpose) or PCG(seed, epoch<<8|1): seed and steps_done are the whole random state"

// CheckpointName is the file name of the checkpoint after step s.
func CheckpointName(s int) string { return fmt.Sprintf(rlCheckpointKind+"%06d.ckpt", s) }

// rlCheckpointKind is the prefix of CheckpointName's files, the RL trainer's checkpoints.
const rlCheckpointKind = "step-"

// splitCheckpointName is CheckpointName's inverse, for every kind of checkpoint: it splits a
// name "<kind>-<step>.ckpt" (the RL trainer's "step-000012.ckpt", SFT's "sft-000012.ckpt")
// into its kind, "-" included, and its step, and says whether name is one.
func splitCheckpointName(name string) (kind string, step int, ok bool) {
	base, found := strings.CutSuffix(name, ".ckpt")
	i := strings.LastIndexByte(base, '-')
	if !found || i < 0 {
		return "", 0, false
	}
	s, err := strconv.Atoi(base[i+1:])
	if err != nil {
		return "", 0, false
	}
	return base[:i+1], s, true
}

// SaveCheckpoint writes the trainer's state (policy, reference, critic, both optimisers' moments
// and step counters, the configuration and the random state) to dir/CheckpointName(StepsDone),
// atomically and with a SHA-256 checksum, and returns the path. A reference held for inference
// is left out: it is the initial policy's checkpoint, unchanged, which a resumed run reads.
func (t *Trainer) SaveCheckpoint(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	meta, err := json.Marshal(checkpointMeta{
		Config: t.Config, Seed: t.Seed, StepsDone: t.StepsDone, OptStep: t.Opt.Step, CritStep: t.CritOpt.Step,
		HasRef: t.Ref != nil, HasCritic: t.Critic != nil, KLBeta: &t.KLBeta, RandomNote: randomNote, KLWatch: &t.KLWatch,
		RefForInference: t.Ref != nil && t.Ref.Inference(), RunState: t.RunState,
	})
	if err != nil {
		return "", fmt.Errorf("checkpoint meta: %w", err)
	}
	f := &CheckpointFile{Step: t.StepsDone, Meta: meta}
	f.Tensors = AppendParams(f.Tensors, "policy/", t.Policy.Params)
	f.Tensors = AppendMoments(f.Tensors, "opt/", &t.Opt, t.Policy.Params)
	if t.Ref != nil && !t.Ref.Inference() {
		f.Tensors = AppendParams(f.Tensors, "ref/", t.Ref.Params)
	}
	if t.Critic != nil {
		f.Tensors = AppendParams(f.Tensors, "critic/", t.Critic.Params)
		f.Tensors = AppendMoments(f.Tensors, "critic_opt/", &t.CritOpt, t.Critic.Params)
	}
	path := filepath.Join(dir, CheckpointName(t.StepsDone))
	return path, WriteCheckpointFile(path, f)
}

// AppendParams adds each parameter's values to ts, named prefix + the parameter's name (the
// tensors share the parameters' memory until written).
func AppendParams(ts []NamedTensor, prefix string, params []*model.Param) []NamedTensor {
	for _, p := range params {
		ts = append(ts, NamedTensor{Name: prefix + p.Name, Shape: slices.Clone(p.Shape), Data: p.Data})
	}
	return ts
}

// AppendMoments adds the AdamW moments of each parameter (absent before the first update).
func AppendMoments(ts []NamedTensor, prefix string, o *tensor.AdamW, params []*model.Param) []NamedTensor {
	if o.M == nil {
		return ts
	}
	for i, p := range params {
		ts = append(ts,
			NamedTensor{Name: prefix + "m/" + p.Name, Shape: []int{len(o.M[i])}, Data: o.M[i]},
			NamedTensor{Name: prefix + "v/" + p.Name, Shape: []int{len(o.V[i])}, Data: o.V[i]})
	}
	return ts
}

// LoadCheckpoint restores a checkpoint written by SaveCheckpoint into t, which must have been
// built with the same model shapes and algorithm (New with the checkpoint's configuration);
// the run then continues exactly where the checkpointed run was. A reference held for
// inference (NewWithReference) stays as it is: it was read from the initial policy's
// checkpoint, as the saved run's was. The checkpoint's
// configuration replaces t.Config.
func (t *Trainer) LoadCheckpoint(path string) error {
	f, err := ReadCheckpointFile(path)
	if err != nil {
		return err
	}
	var meta checkpointMeta
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		return fmt.Errorf("checkpoint %s: meta: %w", path, err)
	}
	if meta.HasCritic != (t.Critic != nil) || meta.HasRef != (t.Ref != nil) {
		return fmt.Errorf("checkpoint %s: critic %v / reference %v, trainer has %v / %v",
			path, meta.HasCritic, meta.HasRef, t.Critic != nil, t.Ref != nil)
	}
	if err := LoadParams(f, path, "policy/", t.Policy.Params); err != nil {
		return err
	}
	t.Policy.MarkWeightsChanged() // a decoder of the policy repacks its weights
	if err := LoadMoments(f, path, "opt/", &t.Opt, t.Policy.Params, meta.OptStep); err != nil {
		return err
	}
	switch {
	case t.Ref == nil:
	case t.Ref.Inference():
		// Read from the initial policy's checkpoint, whose values the saved reference (held
		// for inference, or a float32 copy) holds too: nothing to restore.
	case meta.RefForInference:
		return fmt.Errorf("checkpoint %s: its reference policy was held for inference and is not in the file; load it from the initial policy's checkpoint (trainer.NewWithReference)", path)
	default:
		if err := LoadParams(f, path, "ref/", t.Ref.Params); err != nil {
			return err
		}
		t.Ref.MarkWeightsChanged()
	}
	if t.Critic != nil {
		if err := LoadParams(f, path, "critic/", t.Critic.Params); err != nil {
			return err
		}
		if err := LoadMoments(f, path, "critic_opt/", &t.CritOpt, t.Critic.Params, meta.CritStep); err != nil {
			return err
		}
	}
	t.Config, t.Seed, t.StepsDone = meta.Config, meta.Seed, meta.StepsDone
	t.KLBeta = t.Config.KLCoef // a checkpoint from before the adaptive controller: β never moved
	if meta.KLBeta != nil {
		t.KLBeta = *meta.KLBeta
	}
	if meta.KLWatch != nil {
		t.KLWatch = *meta.KLWatch
	}
	t.RunState = meta.RunState
	return nil
}

// LoadParams copies the checkpoint's tensors under prefix into params, checking names and
// shapes. It writes Param.Data directly: the caller marks the model's weights changed
// (model.Model.MarkWeightsChanged) so that its decoders repack them.
func LoadParams(f *CheckpointFile, path, prefix string, params []*model.Param) error {
	for _, p := range params {
		nt := f.Tensor(prefix + p.Name)
		if nt == nil {
			return fmt.Errorf("checkpoint %s: missing tensor %s", path, prefix+p.Name)
		}
		if !slices.Equal(nt.Shape, p.Shape) {
			return fmt.Errorf("checkpoint %s: tensor %s has shape %v, model wants %v", path, nt.Name, nt.Shape, p.Shape)
		}
		copy(p.Data, nt.Data)
	}
	return nil
}

// LoadMoments restores optimiser o's moments of params from the checkpoint's tensors under
// prefix and sets its step counter to step; a checkpoint saved before the first update has no
// moments, and o's are cleared.
func LoadMoments(f *CheckpointFile, path, prefix string, o *tensor.AdamW, params []*model.Param, step int) error {
	o.Step = step
	if f.Tensor(prefix+"m/"+params[0].Name) == nil {
		o.M, o.V = nil, nil // saved before the first update
		return nil
	}
	o.M = make([][]float32, len(params))
	o.V = make([][]float32, len(params))
	for i, p := range params {
		m, v := f.Tensor(prefix+"m/"+p.Name), f.Tensor(prefix+"v/"+p.Name)
		if m == nil || v == nil || len(m.Data) != len(p.Data) || len(v.Data) != len(p.Data) {
			return fmt.Errorf("checkpoint %s: optimiser moments of %s missing or mis-sized", path, p.Name)
		}
		o.M[i], o.V[i] = m.Data, v.Data
	}
	return nil
}

// LatestCheckpoint returns the path of the RL checkpoint with the highest step in dir, or an
// error wrapping ErrNoCheckpoint when dir holds none or does not exist.
func LatestCheckpoint(dir string) (string, error) {
	return LatestCheckpointOf(dir, rlCheckpointKind)
}

// LatestCheckpointOf is LatestCheckpoint for the checkpoints of another kind: the files of dir
// named "<kind><step>.ckpt", kind ending in "-" (SFT's "sft-").
func LatestCheckpointOf(dir, kind string) (string, error) {
	return latestBefore(dir, kind, math.MaxInt)
}

// CheckpointsOf lists the checkpoints of kind in dir, as LatestCheckpointOf names them, in
// the directory's order; none when dir does not exist.
func CheckpointsOf(dir, kind string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	var out []string
	for _, e := range entries {
		if k, _, ok := splitCheckpointName(e.Name()); ok && k == kind {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// PreviousCheckpoint returns the path of the checkpoint beside path of the same kind (an RL
// checkpoint named CheckpointName, or an SFT checkpoint) with the highest step below path's,
// or an error wrapping ErrNoCheckpoint when there is none.
func PreviousCheckpoint(path string) (string, error) {
	kind, step, ok := splitCheckpointName(filepath.Base(path))
	if !ok {
		return "", fmt.Errorf("previous checkpoint: %s is not named as a checkpoint", path)
	}
	return latestBefore(filepath.Dir(path), kind, step)
}

// latestBefore returns the path of the checkpoint of kind (its name's prefix, as
// splitCheckpointName gives it) in dir with the highest step below limit.
func latestBefore(dir, kind string, limit int) (string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("latest checkpoint: %s does not exist: %w", dir, ErrNoCheckpoint)
	}
	if err != nil {
		return "", fmt.Errorf("latest checkpoint: %w", err)
	}
	best, bestStep := "", -1
	for _, e := range entries {
		if k, s, ok := splitCheckpointName(e.Name()); ok && k == kind && s > bestStep && s < limit {
			best, bestStep = filepath.Join(dir, e.Name()), s
		}
	}
	if best == "" {
		return "", fmt.Errorf("latest checkpoint in %s: %w", dir, ErrNoCheckpoint)
	}
	return best, nil
}
