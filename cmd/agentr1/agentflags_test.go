package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/model"
	"agentr1/rl/pipeline"
	"agentr1/tokenizer"
)

// TestLoadAgentCompute checks that eval's and chat's --compute reaches the loaded model:
// f32 by default, bf16 on a folder saved in BF16, and a refusal naming the F32 tensor of an F32
// folder; and that the flag refuses an unknown name.
func TestLoadAgentCompute(t *testing.T) {
	f32Dir, _, tok := chatFixture(t)
	policy, err := model.Load(f32Dir)
	if err != nil {
		t.Fatal(err)
	}
	bf16Dir := filepath.Join(t.TempDir(), "bf16")
	if err := policy.SaveAs(bf16Dir, model.BF16); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(bf16Dir); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	for _, tc := range []struct {
		dir     string
		compute model.Compute
		err     string
	}{
		{f32Dir, model.ComputeFloat32, ""},
		{bf16Dir, model.ComputeBF16, ""},
		{f32Dir, model.ComputeBF16, "is F32: bf16 compute"},
	} {
		m, _, _, err := loadAgent(&agentFlags{model: tc.dir, compute: tc.compute}, &stderr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s, %v: error %v, want one containing %q", tc.dir, tc.compute, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s, %v: %v", tc.dir, tc.compute, err)
		}
		if m.InferenceCompute() != tc.compute {
			t.Errorf("%s: InferenceCompute() = %v, want %v", tc.dir, m.InferenceCompute(), tc.compute)
		}
	}
	var stdout bytes.Buffer
	stderr.Reset()
	if code := run([]string{"chat", "--model", bf16Dir, "--compute", "fp16"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), `compute "fp16": want one of f32, bf16`) {
		t.Errorf("chat --compute fp16: exit %d, stderr %q", code, stderr.String())
	}
}

// TestTokenizerBeyondTheModel puts a tokenizer with more tokens than the model's vocabulary
// beside it and checks that eval, chat and sft refuse the folder with an error naming
// tokenizer.json, where their first forward pass used to panic on an id past the embedding.
func TestTokenizerBeyondTheModel(t *testing.T) {
	modelDir, corpus, small := chatFixture(t)
	big, err := pipeline.TrainTokenizer([]string{chatCorpus, strings.Repeat("Berlin Germany Rome Italy Paris France founded capital ", 4),
		"zebra quartz jumping vexed wolves fjord nymph blitz"}, small.VocabSize()+60, 0)
	if err != nil {
		t.Fatal(err)
	}
	if big.VocabSize() <= small.VocabSize() {
		t.Fatalf("fixture: tokenizer of %d tokens, want more than %d", big.VocabSize(), small.VocabSize())
	}
	if err := big.Save(modelDir); err != nil {
		t.Fatal(err)
	}
	old := chatInput
	t.Cleanup(func() { chatInput = old })
	chatInput = strings.NewReader("What is the capital of France?\n")
	for _, args := range [][]string{
		{"eval", "--model", modelDir, "--corpus", corpus, "--n", "1", "--max-turns", "1", "--turn-tokens", "2"},
		{"chat", "--model", modelDir, "--corpus", corpus, "--max-turns", "1", "--turn-tokens", "2"},
		{"sft", "--model", modelDir, "--data", sftSample, "--out", filepath.Join(t.TempDir(), "out"), "--steps", "1", "--batch", "1"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if want := filepath.Join(modelDir, "tokenizer.json"); code != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and an error naming %s", args[0], code, stderr.String(), want)
		}
	}
}

// TestTokenizerWithoutSpecials saves, beside a model, a tokenizer that lacks the </tool_call>
// token the rollout stops on, and checks that eval, sft and train --model refuse the folder
// with an error naming its tokenizer.json and the token.
func TestTokenizerWithoutSpecials(t *testing.T) {
	dir := t.TempDir()
	questions, corpus, modelDir := realDataFixture(t, dir)
	specials := slices.DeleteFunc(slices.Clone(pipeline.SpecialTokens), func(s string) bool { return s == "</tool_call>" })
	tok, err := tokenizer.Train([]string{chatCorpus}, 300, specials, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(modelDir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"eval", "--model", modelDir, "--corpus", corpus, "--data", questions, "--n", "1"},
		{"sft", "--model", modelDir, "--data", sftSample, "--out", filepath.Join(dir, "sft"), "--steps", "1", "--batch", "1"},
		realTrainArgs(questions, corpus, modelDir, filepath.Join(dir, "run"), "--rl.steps", "1"),
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		want := filepath.Join(modelDir, "tokenizer.json") + ": tokenizer has no </tool_call> token"
		if code != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", args[0], code, stderr.String(), want)
		}
	}
}
