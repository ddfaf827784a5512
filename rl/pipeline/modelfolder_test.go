package pipeline

import (
	"testing"

	"agentr1/model"
	"agentr1/rl/trainer"
)

// TestFrozenReference checks which initial policies get a reference held for inference: a BF16
// folder with the KL term on does; no KL term, no folder, or an F32 folder gets none (the
// trainer copies the policy).
func TestFrozenReference(t *testing.T) {
	policy, err := model.New(model.Config{
		VocabSize: 40, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 64, InitializerRange: 0.02,
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	folders := map[model.DType]string{}
	for _, dtype := range []model.DType{model.BF16, model.F32} {
		folders[dtype] = t.TempDir()
		if err := policy.SaveAs(folders[dtype], dtype); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		kl   float64
		dir  string
		want bool
	}{
		{"bf16", 0.001, folders[model.BF16], true},
		{"bf16 without the KL term", 0, folders[model.BF16], false},
		{"f32", 0.001, folders[model.F32], false},
		{"no folder", 0.001, "", false},
	} {
		rl := trainer.DefaultRLConfig(trainer.GRPO)
		rl.KLCoef = tc.kl
		ref, err := FrozenReference(rl, tc.dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ref != nil; got != tc.want {
			t.Fatalf("%s: reference returned: %v, want %v", tc.name, got, tc.want)
		}
		if ref != nil && !ref.Inference() {
			t.Errorf("%s: the reference is not held for inference", tc.name)
		}
	}
}
