package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"agentr1/internal/atomicfile"
	"agentr1/model"
	"agentr1/rl/trainer"
	"agentr1/tokenizer"
)

// SaveDtypeOf returns the storage type of the model folders a run of cfg writes:
// cfg.SaveDtype when set; else, for real data, the pretrained policy's own
// (model.WeightsDType of cfg.InitModel), so a BF16 checkpoint comes out BF16; else F32.
func SaveDtypeOf(cfg Config) (model.DType, error) {
	switch {
	case cfg.SaveDtype != "":
		return cfg.SaveDtype, nil
	case !IsWorldData(cfg.Data):
		return model.WeightsDType(cfg.InitModel)
	}
	return model.F32, nil
}

// FrozenReference returns the frozen reference policy of an RL run of rl whose initial policy
// is the checkpoint folder dir, unchanged: dir loaded for inference (model.LoadForInference)
// when its weights are BF16, as Qwen's releases are. Its matrices then stay packed in
// bfloat16, exactly the values model.Load widens to float32, in half the memory of the float32
// copy of the policy the trainer otherwise makes (1 GiB instead of 2 at Qwen2.5-0.5B); its
// log-probabilities are the copy's, bit for bit or within float32 rounding (the model
// package's note on models held for inference says where). It
// returns nil, and the trainer copies the policy, when the KL term is off (no reference), dir
// is "" or dir's weights are not all BF16 (packing float32 weights would save nothing).
func FrozenReference(rl trainer.RLConfig, dir string) (*model.Model, error) {
	if rl.KLMode() == trainer.KLOff || dir == "" {
		return nil, nil
	}
	dtype, err := model.WeightsDType(dir)
	if err != nil || dtype != model.BF16 {
		return nil, err
	}
	ref, err := model.LoadForInference(dir)
	if err != nil {
		return nil, fmt.Errorf("reference policy: %w", err)
	}
	return ref, nil
}

// hfSideFiles are the files of a Hugging Face model folder besides config.json, the weights,
// tokenizer.json and tokenizer_config.json that transformers and verl read when present: the
// slow tokenizer's vocabulary and merges, the special-token maps and the generation defaults
// (eos ids, sampling settings). A folder written from a pretrained policy gets its copies.
var hfSideFiles = []string{"vocab.json", "merges.txt", "special_tokens_map.json", "added_tokens.json", "generation_config.json"}

// SaveModelFolder writes policy and its tokenizer to dir as a Hugging Face model folder that
// transformers' AutoModelForCausalLM and AutoTokenizer, and so verl's actor, load:
// tokenizer.json and tokenizer_config.json (with its chat template), then config.json and
// model.safetensors with the weights stored as dtype, and, when from names the folder of a
// pretrained policy, a copy of each of its hfSideFiles. The weights file is written last: its
// presence marks the folder complete.
func SaveModelFolder(dir string, policy *model.Model, tok *tokenizer.Tokenizer, dtype model.DType, from string) error {
	if err := tok.Save(dir); err != nil {
		return err
	}
	if from != "" {
		for _, name := range hfSideFiles {
			raw, err := os.ReadFile(filepath.Join(from, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("save model folder: %w", err)
			}
			if err := atomicfile.WriteBytes(filepath.Join(dir, name), raw); err != nil {
				return fmt.Errorf("save model folder: %w", err)
			}
		}
	}
	return policy.SaveAs(dir, dtype)
}
