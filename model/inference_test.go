package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/tensor"
)

// saveBF16 writes m to dir as a checkpoint whose every tensor is BF16 (each value rounded to
// nearest), as Hugging Face publishes Qwen2.5, and rounds m's own values likewise, so that m
// holds exactly what Load and LoadForInference read back.
func saveBF16(t *testing.T, m *Model, dir string) {
	t.Helper()
	if err := m.Config.Save(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	header := map[string]any{}
	var data []byte
	for _, p := range m.Params {
		begin := len(data)
		for i, x := range p.Data {
			h := tensor.Float32ToBF16(x)
			p.Data[i] = tensor.BF16ToFloat32(h)
			data = binary.LittleEndian.AppendUint16(data, h)
		}
		header[p.Name] = stTensor{Dtype: "BF16", Shape: p.Shape, DataOffsets: [2]int64{int64(begin), int64(len(data))}}
	}
	hj, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	file = append(append(file, hj...), data...)
	if err := os.WriteFile(filepath.Join(dir, WeightsFile), file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// decodeTrace feeds the same tokens to a decoder of each model (a prompt longer than a prefill
// chunk, steps of one row and of nine rows, more rows than the packed products' smallest
// tile, an observation appended mid-sequence) and returns the first logit where they differ
// by more than tol*(1+|want|), described, or "".
func decodeTrace(a, b *Model, tol float64) string {
	V := a.Config.VocabSize
	rng := rand.New(rand.NewPCG(3, 4))
	const rows = 9
	da, db := a.NewDecoder(rows, 200), b.NewDecoder(rows, 200)
	check := func(what string, ga, gb []float32) string {
		for j := range V {
			if d := math.Abs(float64(gb[j] - ga[j])); d > tol*(1+math.Abs(float64(ga[j]))) || gb[j] != gb[j] {
				return fmt.Sprintf("%s: logit %d = %v, want %v", what, j, gb[j], ga[j])
			}
		}
		return ""
	}
	for r := range rows {
		toks := randomTokens(rng, V, 3+r)
		if r == 0 {
			toks = randomTokens(rng, V, prefillChunk+5)
		}
		if s := check(fmt.Sprintf("prompt of row %d", r), da.Append(r, toks), db.Append(r, toks)); s != "" {
			return s
		}
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	for i, rs := range [][]int{{4}, all, {0}, all, all} {
		toks := randomTokens(rng, V, len(rs))
		oa, ob := da.Step(rs, toks), db.Step(rs, toks)
		for j, r := range rs {
			if s := check(fmt.Sprintf("step %d, row %d", i, r), oa[j], ob[j]); s != "" {
				return s
			}
		}
		if i == 2 {
			toks := randomTokens(rng, V, 7)
			if s := check("observation", da.Append(3, toks), db.Append(3, toks)); s != "" {
				return s
			}
		}
	}
	return ""
}

// forwardTrace runs Forward (in two shards) and ForwardLogits of each model over the same
// left-padded batch and returns the first value where they differ by more than
// tol*(1+|want|), described, or "".
func forwardTrace(a, b *Model, tol float64) string {
	defer SetShards(SetShards(2))
	rng := rand.New(rand.NewPCG(8, 9))
	const B, T = 4, 40
	tokens, mask := leftPadded(rng, a.Config.VocabSize, T, []int{40, 13, 27, 2})
	differ := func(what string, want, got []float32) string {
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || got[i] != got[i] {
				return fmt.Sprintf("%s[%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
		return ""
	}
	la, ea := a.Forward(NewWorkspace(), tokens, mask, B, T)
	lb, eb := b.Forward(NewWorkspace(), tokens, mask, B, T)
	if s := differ("Forward logp", la, lb); s != "" {
		return s
	}
	if s := differ("Forward entropy", ea, eb); s != "" {
		return s
	}
	return differ("ForwardLogits", a.ForwardLogits(NewWorkspace(), tokens, mask, B, T), b.ForwardLogits(NewWorkspace(), tokens, mask, B, T))
}

// TestLoadForInference checks that a model loaded for inference from a BF16 checkpoint (the
// bfloat16 panels, read through the memory map) and from an F32 one (float32 panels) decodes
// what the same checkpoint loaded with Load decodes, and computes the same Forward and
// ForwardLogits, Qwen2 and Qwen3, tied and untied, and that it holds no float32 matrix.
func TestLoadForInference(t *testing.T) {
	for _, qwen3 := range []bool{false, true} {
		for _, tied := range []bool{true, false} {
			for _, dtype := range []string{"BF16", "F32"} {
				name := fmt.Sprintf("qwen3=%v/tied=%v/dtype=%s", qwen3, tied, dtype)
				cfg := tinyConfig(tied)
				if qwen3 {
					cfg = tinyQwen3Config(tied)
				}
				cfg.MaxPositionEmbeddings = 256
				dir := t.TempDir()
				src := newTestModel(t, cfg, 5)
				if dtype == "BF16" {
					saveBF16(t, src, dir)
				} else if err := src.Save(dir); err != nil {
					t.Fatal(err)
				}
				want, err := Load(dir)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := LoadForInference(dir)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !got.Inference() || want.Inference() {
					t.Fatalf("%s: Inference() = %v and %v, want true and false", name, got.Inference(), want.Inference())
				}
				if got.NumParams() != want.NumParams() {
					t.Errorf("%s: NumParams %d, want %d", name, got.NumParams(), want.NumParams())
				}
				for _, p := range got.Params {
					if (len(p.Shape) == 2) != (p.Packed != nil && p.Data == nil) {
						t.Errorf("%s: %s: Packed %v, Data of %d floats", name, p.Name, p.Packed != nil, len(p.Data))
					}
				}
				if s := decodeTrace(want, got, 1e-4); s != "" {
					t.Errorf("%s: %s", name, s)
				}
				if s := decodeTrace(want, got.Clone(), 1e-4); s != "" {
					t.Errorf("%s: clone: %s", name, s)
				}
				if s := forwardTrace(want, got, 1e-4); s != "" {
					t.Errorf("%s: %s", name, s)
				}
			}
		}
	}
}

// TestInferenceForwardBitForBit checks that a model loaded for inference from a BF16
// checkpoint computes Forward's log-probabilities and entropies bit for bit as the same
// checkpoint loaded with Load (its weights widened to float32) does, Qwen2 and Qwen3, on every
// kernel set the machine runs, for a batch whose every matrix product has enough rows that
// Gemm packs the float32 weights too (at least three register tiles, tensor.useSmallRows):
// the products then run the same micro-kernel over the same panels in the same order
// (tensor.PackedB.PackBF16). A frozen reference policy held for inference is exact so
// (rl/pipeline.FrozenReference). Products of fewer rows take Gemm's dot-product path on the
// float32 weights and agree up to float32 rounding (TestLoadForInference), as do the ref set's
// biased products (it adds the bias before rounding the sum).
func TestInferenceForwardBitForBit(t *testing.T) {
	defer SetShards(SetShards(2)) // two shards of two rows each
	defer tensor.SetKernels(tensor.KernelName())
	rng := rand.New(rand.NewPCG(8, 9))
	const B, T = 4, 40
	// Each shard predicts more than 36 tokens (three 12-row tiles of avx512), in one chunk
	// of the head.
	tokens, mask := leftPadded(rng, tinyConfig(true).VocabSize, T, []int{40, 33, 27, 38})
	for _, kernels := range []string{"ref", "generic", "avx2", "avx512"} {
		if _, err := tensor.SetKernels(kernels); err != nil {
			continue // not supported by this machine
		}
		for _, qwen3 := range []bool{false, true} {
			name := fmt.Sprintf("kernels=%s/qwen3=%v", kernels, qwen3)
			if kernels == "ref" && !qwen3 {
				continue // Qwen2's q, k and v biases: see above
			}
			cfg := tinyConfig(false)
			if qwen3 {
				cfg = tinyQwen3Config(false)
			}
			dir := t.TempDir()
			saveBF16(t, newTestModel(t, cfg, 5), dir)
			want, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := LoadForInference(dir) // packed for the kernel set now active
			if err != nil {
				t.Fatal(err)
			}
			wantLogp, wantEntropy := want.Forward(NewWorkspace(), tokens, mask, B, T)
			gotLogp, gotEntropy := got.Forward(NewWorkspace(), tokens, mask, B, T)
			for i := range wantLogp {
				if gotLogp[i] != wantLogp[i] || gotEntropy[i] != wantEntropy[i] {
					t.Errorf("%s: position %d: logp %v, entropy %v; want %v, %v (Load's)", name, i, gotLogp[i], gotEntropy[i], wantLogp[i], wantEntropy[i])
					break
				}
			}
		}
	}
}

// TestNewForInference checks that NewForInference holds New's weights rounded to bfloat16:
// its decoder computes what New's model, so rounded, computes.
func TestNewForInference(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		cfg.MaxPositionEmbeddings = 256
		cfg.InitializerRange = 0.3
		want, err := New(cfg, 9)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range want.Params {
			for i, x := range p.Data {
				p.Data[i] = tensor.BF16ToFloat32(tensor.Float32ToBF16(x))
			}
		}
		got, err := NewForInference(cfg, 9)
		if err != nil {
			t.Fatal(err)
		}
		if s := decodeTrace(want, got, 1e-4); s != "" {
			t.Errorf("tied=%v: %s", tied, s)
		}
	}
}

// TestInferenceRefusesTraining checks that a model held for inference refuses what needs its
// float32 matrices: training panics naming the method, Save returns an error.
func TestInferenceRefusesTraining(t *testing.T) {
	m, err := NewForInference(tinyConfig(true), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"EnableTraining", m.EnableTraining},
		{"WritableParams", func() { m.WritableParams() }},
		{"ZeroGrad", m.ZeroGrad},
		{"Backward", func() {
			ws := NewWorkspace()
			m.Forward(ws, []int{1, 2}, ones(2), 1, 2)
			m.Backward(ws, ones(2), nil)
		}},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "held for inference") {
					t.Errorf("%s: panic %q, want one saying the model is held for inference", tc.name, msg)
				}
			}()
			tc.call()
		}()
	}
	if err := m.Save(t.TempDir()); err == nil || !strings.Contains(err.Error(), "held for inference") {
		t.Errorf("Save: error %v, want one saying the model is held for inference", err)
	}
}

// TestLoadForInferenceErrors checks that a checkpoint whose matrix is missing or misshapen is
// refused, naming the tensor.
func TestLoadForInferenceErrors(t *testing.T) {
	cfg := tinyConfig(true)
	for _, tc := range []struct {
		name string
		edit func(m *Model)
		want string
	}{
		{"missing", func(m *Model) { m.Params = m.Params[1:] }, `missing tensor "model.embed_tokens.weight"`},
		{"misshapen", func(m *Model) { m.layers[0].gate.Shape = []int{cfg.HiddenSize, cfg.IntermediateSize} }, `"model.layers.0.mlp.gate_proj.weight" has shape [16 24], want [24 16]`},
	} {
		dir := t.TempDir()
		src := newTestModel(t, cfg, 2)
		tc.edit(src)
		saveBF16(t, src, dir)
		if _, err := LoadForInference(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %s", tc.name, err, tc.want)
		}
	}
}
