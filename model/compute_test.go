package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/golden"
)

// TestComputeBF16Golden runs the tiny Qwen2 and Qwen3 BF16 checkpoints of the golden cases with
// bfloat16 products (ComputeBF16) and bounds their logits' distance from PyTorch's (which
// computed in float32 on the same BF16 weights), then reports how often greedy decoding picks
// the same token as float32 products do.
//
// The bound: each product's input is rounded to bfloat16, a relative error of at most 2^-9
// per element, so an output moves by at most 2^-9 of the sum of its terms' magnitudes; to first
// order these errors add along the network, through the 4 rounded inputs of a layer (q/k/v,
// o, gate/up, down) and the lm_head's, 4L+1 in all, each of about 2^-9 of the logits' scale.
// The test allows each logit 2 * (4L+1) * 2^-9 times the largest logit magnitude: the factor
// 2 is room for the gain of the layers an early error passes through (attention and the MLP
// can amplify what the residual stream carries) and for sums of terms larger than the logit
// they make. The test logs each checkpoint's largest error as a fraction of the bound.
func TestComputeBF16Golden(t *testing.T) {
	for _, dir := range []string{"../testdata/golden/qwen2_tiny", "../testdata/golden/qwen3_tiny"} {
		cases, err := golden.Load(filepath.Join(dir, "cases.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if !strings.HasSuffix(c.Name, "/BF16") {
				continue
			}
			name := filepath.Base(dir) + "/" + c.Name
			cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			weights := filepath.Join(dir, "model-bf16.safetensors")
			bf, err := loadForInference(cfg, weights, ComputeBF16)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			f32, err := loadForInference(cfg, weights, ComputeFloat32)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			in, err := c.InputList("input_ids", "attention_mask")
			if err != nil {
				t.Fatal(err)
			}
			B, T, V := in[0].Shape[0], in[0].Shape[1], cfg.VocabSize
			tokens, mask := in[0].IntData(), in[1].F32()
			want := c.Outputs["logits"].F32() // (B, T, V)
			got := bf.ForwardLogits(NewWorkspace(), tokens, mask, B, T)
			scale := 0.0
			for i, w := range want {
				if mask[i/V] != 0 {
					scale = max(scale, math.Abs(float64(w)))
				}
			}
			bound := 2 * float64(4*cfg.NumHiddenLayers+1) * 0x1p-9 * scale
			worst := 0.0
			for i, w := range want {
				if mask[i/V] == 0 {
					continue
				}
				d := math.Abs(float64(got[i]) - float64(w))
				if !(d <= bound) {
					t.Fatalf("%s: logit %d = %v, PyTorch %v: off by %.3g, above the bound %.3g", name, i, got[i], w, d, bound)
				}
				worst = max(worst, d)
			}
			t.Logf("%s: largest logit error %.3g, %.3f of the bound %.3g (largest logit %.3g)", name, worst, worst/bound, bound, scale)
			// The float32 products match PyTorch to 1e-4 (the golden tolerance): an error this
			// far above it shows the products did round their inputs to bfloat16.
			if worst < 1e-2 {
				t.Errorf("%s: largest logit error %.3g: the products look float32, not bfloat16", name, worst)
			}

			// Greedy decoding of 32 tokens after a short prompt, both arithmetics.
			prompt := []int{1, 5, 9, 2, 7}
			same, n := greedyAgreement(f32, bf, prompt, 32)
			t.Logf("%s: greedy decoding, bf16 against f32 products: the first %d of %d tokens agree", name, same, n)
		}
	}
}

// greedyAgreement decodes n tokens greedily after prompt with a and with b and returns how
// many leading tokens agree.
func greedyAgreement(a, b *Model, prompt []int, n int) (same, total int) {
	gen := func(m *Model) []int {
		d := m.NewDecoder(1, len(prompt)+n+1)
		d.Append(0, prompt)
		g := d.Generate([]int{0}, n, Sampler{Greedy: true}, nil, rand.New(rand.NewPCG(1, 1)))
		return g[0].Tokens
	}
	ta, tb := gen(a), gen(b)
	for same < min(len(ta), len(tb)) && ta[same] == tb[same] {
		same++
	}
	return same, len(ta)
}

// TestComputeBF16Refusals checks that bf16 compute refuses a checkpoint stored in F32, naming
// the tensor, and that ParseCompute names the choices.
func TestComputeBF16Refusals(t *testing.T) {
	dir := "../testdata/golden/qwen2_tiny"
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadForInference(cfg, filepath.Join(dir, "model.safetensors"), ComputeBF16)
	if err == nil || !strings.Contains(err.Error(), "is F32") || !strings.Contains(err.Error(), "weight") {
		t.Errorf("bf16 compute of an F32 checkpoint: error %v, want one naming the F32 tensor", err)
	}
	for _, s := range []string{"f32", "bf16"} {
		if c, err := ParseCompute(s); err != nil || c.String() != s {
			t.Errorf("ParseCompute(%q) = %v, %v", s, c, err)
		}
	}
	if _, err := ParseCompute("fp16"); err == nil || !strings.Contains(err.Error(), "f32, bf16") {
		t.Errorf("ParseCompute(fp16): error %v, want one naming f32, bf16", err)
	}
}
