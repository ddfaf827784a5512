package bench

import (
	"fmt"
	"strings"
	"testing"

	"agentr1/model"
)

// realSize builds the model of a named shape with random BF16 weights (seed 1) held for
// inference, its products in compute, as `agentr1 bench --random` does, skipping the benchmark
// under -short: Qwen2.5-0.5B's shape takes 1 GB and seconds to build.
func realSize(b *testing.B, shape string, compute model.Compute) *model.Model {
	b.Helper()
	if testing.Short() {
		b.Skip("builds a real-size model")
	}
	cfg, err := ShapeNamed(shape)
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.NewForInferenceWith(cfg, 1, compute)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkRealSize measures inference at Qwen2.5-0.5B-Instruct's shapes with random weights,
// the workload of `agentr1 bench` (DefaultWorkload): prefill of 1 x 512 tokens, and greedy
// KV-cache decoding of 8 rows, 128-token prompts, 64 new tokens each, with float32 and with
// bfloat16 products (--compute). One iteration is one repetition; tokens/s is the median over
// them. Run with
//
//	go test ./bench -run '^$' -bench RealSize -benchtime 3x
func BenchmarkRealSize(b *testing.B) {
	for _, compute := range []model.Compute{model.ComputeFloat32, model.ComputeBF16} {
		benchmarkRealSize(b, "qwen2.5-0.5b", compute)
	}
}

// benchmarkRealSize is BenchmarkRealSize for one arithmetic, its model built at the first
// sub-benchmark that runs and dropped after the last.
func benchmarkRealSize(b *testing.B, shape string, compute model.Compute) {
	w := DefaultWorkload()
	var r *Runner
	runner := func(b *testing.B) *Runner {
		if r == nil {
			r = NewRunner(realSize(b, shape, compute), w, 1)
			r.Warmup()
		}
		return r
	}
	b.Run(fmt.Sprintf("shape=%s/compute=%v/phase=prefill/batch=%d/len=%d", shape, compute, w.PrefillBatch, w.PrefillLen), func(b *testing.B) {
		r := runner(b)
		var rates []float64
		for b.Loop() {
			rates = append(rates, r.Prefill().Rate())
		}
		b.ReportMetric(Median(rates), "tokens/s")
	})
	b.Run(fmt.Sprintf("shape=%s/compute=%v/phase=decode/batch=%d/prompt=%d/new=%d", shape, compute, w.DecodeBatch, w.DecodePrompt, w.DecodeNew), func(b *testing.B) {
		r := runner(b)
		var rates []float64
		for b.Loop() {
			rates = append(rates, r.Decode().Rate())
		}
		b.ReportMetric(Median(rates), "tokens/s")
	})
}

// TestWorkloadCheck checks that a workload a model cannot hold is refused, naming the flag.
func TestWorkloadCheck(t *testing.T) {
	cfg, err := ShapeNamed("default")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxPositionEmbeddings = 256
	for _, tc := range []struct {
		name string
		edit func(*Workload)
		want string
	}{
		{"ok", func(w *Workload) { w.PrefillLen = 256 }, ""},
		{"prefill too long", func(w *Workload) {}, "--prefill 512 exceeds the model's max_position_embeddings 256"},
		{"decode too long", func(w *Workload) { w.PrefillLen, w.DecodeNew = 16, 129 }, "--prompt 128 + --gen 129 exceeds"},
		{"zero batch", func(w *Workload) { w.PrefillLen, w.DecodeBatch = 16, 0 }, "--batch 0, want >= 1"},
	} {
		w := DefaultWorkload()
		tc.edit(&w)
		err := w.Check(cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := ShapeNamed("qwen9"); err == nil || !strings.Contains(err.Error(), "qwen2.5-0.5b") {
		t.Errorf("ShapeNamed(qwen9): %v, want an error listing the shapes", err)
	}
}

// TestRunner runs one repetition of a small workload on the default shape and checks the
// figures are positive and the decoder generated every token.
func TestRunner(t *testing.T) {
	cfg, _ := ShapeNamed("default")
	m, err := model.NewForInference(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{PrefillBatch: 2, PrefillLen: 40, DecodeBatch: 3, DecodePrompt: 10, DecodeNew: 5}
	r := NewRunner(m, w, 1)
	r.Warmup()
	p, d := r.Prefill(), r.Decode()
	if !(p.Rate() > 0) || !(d.Rate() > 0) || p.CPURate() < 0 || d.CPURate() < 0 {
		t.Errorf("prefill %v tokens/s, decode %v tokens/s (per CPU-second %v and %v), want > 0", p.Rate(), d.Rate(), p.CPURate(), d.CPURate())
	}
	if p.Tokens != w.PrefillBatch*w.PrefillLen || d.Tokens != w.DecodeBatch*w.DecodeNew {
		t.Errorf("timed %d prefill and %d decoding tokens, want %d and %d", p.Tokens, d.Tokens, w.PrefillBatch*w.PrefillLen, w.DecodeBatch*w.DecodeNew)
	}
	for row := range w.DecodeBatch {
		if n := r.decode.Len(row); n != w.DecodePrompt+w.DecodeNew {
			t.Errorf("decode row %d holds %d tokens, want %d", row, n, w.DecodePrompt+w.DecodeNew)
		}
	}
	for row := range w.PrefillBatch {
		if n := r.prefill.Len(row); n != w.PrefillLen {
			t.Errorf("prefill row %d holds %d tokens, want %d", row, n, w.PrefillLen)
		}
	}
}
