package trainer

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"agentr1/model"
)

// bf16Folder saves a tiny policy as a BF16 checkpoint folder, as Qwen's releases are stored,
// and returns the folder.
func bf16Folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := tinyModel(t, 4).SaveAs(dir, model.BF16); err != nil {
		t.Fatal(err)
	}
	return dir
}

// referenceTrainer is a GRPO trainer with the KL term on, of the policy in the BF16 folder dir
// (loaded to train, so widened to float32), whose frozen reference is New's float32 copy of it
// or, with forInference, dir loaded for inference.
func referenceTrainer(t *testing.T, dir string, forInference bool) *Trainer {
	t.Helper()
	cfg := tinyRLConfig(GRPO)
	cfg.KLCoef = 0.5 // large, so that a reference off by any bit moves the update
	cfg.MicroBatch = cfg.Prompts * cfg.N
	policy, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ref *model.Model
	if forInference {
		if ref, err = model.LoadForInference(dir); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := NewWithReference(cfg, 5, policy, ref, fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Ref.Inference() != forInference {
		t.Fatalf("reference held for inference: %v, want %v", tr.Ref.Inference(), forInference)
	}
	return tr
}

// TestReferenceHeldForInference checks that a trainer whose frozen reference is the initial
// policy's BF16 checkpoint loaded for inference (NewWithReference) takes bit for bit the
// steps of one with New's float32 copy of the same policy: the same KL to the reference at
// every step and the same parameters after three. Each reference pass is one forward pass of
// every row in one shard, so that each matrix product has enough rows to take the packed
// path on the float32 weights too (see model's TestInferenceForwardBitForBit).
func TestReferenceHeldForInference(t *testing.T) {
	defer model.SetShards(model.SetShards(1))
	dir := bf16Folder(t)
	copied, held := referenceTrainer(t, dir, false), referenceTrainer(t, dir, true)
	for step := 1; step <= 3; step++ {
		a, err := copied.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b, err := held.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if a.RefKL != b.RefKL {
			t.Errorf("step %d: KL to the reference held for inference %v, to the float32 copy %v", step, b.RefKL, a.RefKL)
		}
		if step > 1 && !(a.RefKL > 0) {
			t.Errorf("step %d: KL to the reference %v, want > 0 once the policy has moved", step, a.RefKL)
		}
	}
	for i, p := range copied.Policy.Params {
		if !slices.Equal(p.Data, held.Policy.Params[i].Data) {
			t.Fatalf("policy parameter %s differs after 3 steps with the reference held for inference", p.Name)
		}
	}
}

// TestReferenceHeldForInferenceCheckpoint checks that a checkpoint of a trainer whose reference
// is held for inference leaves the reference out and says so, that a trainer given the same
// reference resumes it exactly, and that one with a float32 reference to fill refuses it.
func TestReferenceHeldForInferenceCheckpoint(t *testing.T) {
	defer model.SetShards(model.SetShards(1))
	dir := bf16Folder(t)
	full := referenceTrainer(t, dir, true)
	runSteps(t, full, 3)

	first := referenceTrainer(t, dir, true)
	runSteps(t, first, 2)
	path, err := first.SaveCheckpoint(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadCheckpointFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta checkpointMeta
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	if !meta.HasRef || !meta.RefForInference {
		t.Errorf("meta has_ref %v, ref_for_inference %v; want both true", meta.HasRef, meta.RefForInference)
	}
	for _, nt := range f.Tensors {
		if strings.HasPrefix(nt.Name, "ref/") {
			t.Fatalf("the checkpoint holds %s, a tensor of the reference held for inference", nt.Name)
		}
	}

	resumed := referenceTrainer(t, dir, true)
	if err := resumed.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	runSteps(t, resumed, 1)
	for i, p := range full.Policy.Params {
		if !slices.Equal(p.Data, resumed.Policy.Params[i].Data) {
			t.Fatalf("policy parameter %s differs after resuming with the reference held for inference", p.Name)
		}
	}

	copied := referenceTrainer(t, dir, false)
	if err := copied.LoadCheckpoint(path); err == nil || !strings.Contains(err.Error(), "reference policy was held for inference") {
		t.Errorf("a float32 reference loading the checkpoint: error %v, want one saying the reference was held for inference", err)
	}
}

// TestNewWithReferenceRefusesOtherShapes checks that a reference whose parameters are not the
// policy's is refused, naming the first that differs.
func TestNewWithReferenceRefusesOtherShapes(t *testing.T) {
	cfg := tinyModel(t, 1).Config
	cfg.IntermediateSize = 48
	other, err := model.NewForInference(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewWithReference(tinyRLConfig(GRPO), 5, tinyModel(t, 1), other, fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err == nil || !strings.Contains(err.Error(), "mlp.gate_proj.weight [48 32], want model.layers.0.mlp.gate_proj.weight [64 32]") {
		t.Errorf("error %v, want one naming gate_proj's shapes", err)
	}
}
