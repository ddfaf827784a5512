package bench

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"agentr1/model"
	"agentr1/rl/pipeline"
)

// Shape is a named model shape that `agentr1 bench --random` and the real-size benchmarks
// build with random weights, so that speed and memory can be measured without a checkpoint.
type Shape struct {
	Name   string       // the shape's name on the command line ("default", "qwen2.5-0.5b", ...)
	Config model.Config // the architecture built
}

// qwen25 returns the shape of a Qwen2.5 Instruct checkpoint from the fields of its
// config.json that differ between sizes; the rest (vocabulary, rotary base, norm epsilon,
// tied embeddings, positions) are the family's.
func qwen25(hidden, intermediate, layers, heads int) model.Config {
	return model.Config{
		VocabSize: 151936, HiddenSize: hidden, IntermediateSize: intermediate, NumHiddenLayers: layers,
		NumAttentionHeads: heads, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 1000000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 32768, InitializerRange: 0.02,
	}
}

// Shapes returns the shapes --random accepts, smallest first: the default run's policy
// (pipeline.DefaultConfig, over its BPE vocabulary) and Qwen2.5-0.5B, 1.5B and 3B-Instruct as
// their config.json files on the Hugging Face hub give them.
func Shapes() []Shape {
	def := pipeline.DefaultConfig()
	mc := def.Model
	return []Shape{
		{"default", model.Config{
			VocabSize: def.VocabSize, HiddenSize: mc.Hidden, IntermediateSize: mc.Intermediate,
			NumHiddenLayers: mc.Layers, NumAttentionHeads: mc.Heads, NumKeyValueHeads: mc.KVHeads,
			RMSNormEps: 1e-6, RopeTheta: 10000, TieWordEmbeddings: true,
			MaxPositionEmbeddings: 4096, InitializerRange: mc.InitRange,
		}},
		{"qwen2.5-0.5b", qwen25(896, 4864, 24, 14)},
		{"qwen2.5-1.5b", qwen25(1536, 8960, 28, 12)},
		{"qwen2.5-3b", qwen25(2048, 11008, 36, 16)},
	}
}

// ShapeNamed returns the shape called name, or an error listing the names there are.
func ShapeNamed(name string) (model.Config, error) {
	var names []string
	for _, s := range Shapes() {
		if s.Name == name {
			return s.Config, nil
		}
		names = append(names, s.Name)
	}
	return model.Config{}, fmt.Errorf("unknown shape %q (want one of %s)", name, strings.Join(names, ", "))
}

// Workload is one repetition of the inference benchmark, after llama.cpp's llama-bench:
// prefill (its "pp") appends PrefillBatch prompts of PrefillLen tokens, one row at a time as
// the decoder takes them; decoding (its "tg") appends DecodeBatch prompts of DecodePrompt
// tokens, untimed, then generates DecodeNew tokens per row greedily, all rows stepping
// together through the KV cache as a rollout does.
type Workload struct {
	PrefillBatch, PrefillLen             int // prefill: prompts, tokens per prompt
	DecodeBatch, DecodePrompt, DecodeNew int // decoding: rows, prompt tokens per row, generated tokens per row
}

// DefaultWorkload is the benchmark of issue 27: prefill 1 x 512 tokens; decoding 8 rows,
// 128-token prompts, 64 new tokens each.
func DefaultWorkload() Workload {
	return Workload{PrefillBatch: 1, PrefillLen: 512, DecodeBatch: 8, DecodePrompt: 128, DecodeNew: 64}
}

// Check reports the first length that is not positive or that a model of cfg cannot hold
// (more positions than its max_position_embeddings), naming it by the flag that sets it.
func (w Workload) Check(cfg model.Config) error {
	for _, f := range []struct {
		flag string
		val  int
	}{
		{"prefill-batch", w.PrefillBatch}, {"prefill", w.PrefillLen},
		{"batch", w.DecodeBatch}, {"prompt", w.DecodePrompt}, {"gen", w.DecodeNew},
	} {
		if f.val < 1 {
			return fmt.Errorf("--%s %d, want >= 1", f.flag, f.val)
		}
	}
	limit := cfg.MaxPositionEmbeddings
	if w.PrefillLen > limit {
		return fmt.Errorf("--prefill %d exceeds the model's max_position_embeddings %d", w.PrefillLen, limit)
	}
	if w.DecodePrompt+w.DecodeNew > limit {
		return fmt.Errorf("--prompt %d + --gen %d exceeds the model's max_position_embeddings %d", w.DecodePrompt, w.DecodeNew, limit)
	}
	return nil
}

// Runner runs a workload on one model: its two decoders and the random prompts are made once,
// so that each repetition times the model alone.
type Runner struct {
	w               Workload
	prefill, decode *model.Decoder
	prefillPrompts  [][]int // (PrefillBatch, PrefillLen)
	decodePrompts   [][]int // (DecodeBatch, DecodePrompt)
	decodeRows      []int   // 0..DecodeBatch-1
}

// NewRunner returns a runner of w on m, with prompts of token ids drawn uniformly from m's
// vocabulary by a generator seeded with seed. It panics if w.Check(m.Config) fails.
func NewRunner(m *model.Model, w Workload, seed uint64) *Runner {
	if err := w.Check(m.Config); err != nil {
		panic("bench.NewRunner: " + err.Error())
	}
	rng := rand.New(rand.NewPCG(seed, 27))
	prompts := func(rows, n int) [][]int {
		out := make([][]int, rows)
		for r := range out {
			out[r] = make([]int, n)
			for i := range out[r] {
				out[r][i] = rng.IntN(m.Config.VocabSize)
			}
		}
		return out
	}
	r := &Runner{
		w:              w,
		prefill:        m.NewDecoder(w.PrefillBatch, w.PrefillLen),
		decode:         m.NewDecoder(w.DecodeBatch, w.DecodePrompt+w.DecodeNew),
		prefillPrompts: prompts(w.PrefillBatch, w.PrefillLen),
		decodePrompts:  prompts(w.DecodeBatch, w.DecodePrompt),
	}
	for row := range w.DecodeBatch {
		r.decodeRows = append(r.decodeRows, row)
	}
	return r
}

// Warmup runs one decoding prompt and one step, untimed: it faults in every weight page (a
// memory-mapped checkpoint's first touch reads the file) and sizes the decoders' buffers.
func (r *Runner) Warmup() {
	r.decode.Reset(0)
	r.decode.Append(0, r.decodePrompts[0])
	r.decode.Step([]int{0}, []int{0})
}

// Timing is one timed phase of a repetition: the tokens it processed, its wall-clock time and
// the CPU time of the whole process meanwhile (all threads; 0 where the system does not say).
// On a machine shared with other work the wall-clock rate falls with the share of the cores
// the process gets; the CPU-time rate does not.
type Timing struct {
	Tokens              int     // tokens processed
	Seconds, CPUSeconds float64 // wall-clock time, the process's CPU time (0: unknown)
}

// Rate returns the tokens per second of wall-clock time.
func (t Timing) Rate() float64 { return float64(t.Tokens) / t.Seconds }

// CPURate returns the tokens per second of CPU time, or 0 if it was not measured.
func (t Timing) CPURate() float64 {
	if t.CPUSeconds <= 0 {
		return 0
	}
	return float64(t.Tokens) / t.CPUSeconds
}

// timing starts the clocks of a phase; the function it returns stops them.
func timing() func(tokens int) Timing {
	start, cpu := time.Now(), processCPUSeconds()
	return func(tokens int) Timing {
		return Timing{Tokens: tokens, Seconds: time.Since(start).Seconds(), CPUSeconds: processCPUSeconds() - cpu}
	}
}

// Prefill runs one prefill repetition and returns its timing over the prompt tokens.
func (r *Runner) Prefill() Timing {
	stop := timing()
	for row, p := range r.prefillPrompts {
		r.prefill.Reset(row)
		r.prefill.Append(row, p)
	}
	return stop(r.w.PrefillBatch * r.w.PrefillLen)
}

// Decode runs one decoding repetition and returns its timing over the generated tokens: the
// prompts are appended first, outside the timing, then DecodeNew greedy tokens per row are
// generated (DecodeNew batched Steps, the last token fed too, as a rollout feeds it before a
// tool observation).
func (r *Runner) Decode() Timing {
	for row, p := range r.decodePrompts {
		r.decode.Reset(row)
		r.decode.Append(row, p)
	}
	stop := timing()
	// No stop tokens: every row generates DecodeNew tokens. Greedy sampling draws nothing
	// from the generator, so none is given.
	r.decode.Generate(r.decodeRows, r.w.DecodeNew, model.Sampler{Greedy: true}, nil, nil)
	return stop(r.w.DecodeBatch * r.w.DecodeNew)
}

// Median returns the median of xs (the mean of the middle two for an even count), the figure
// llama-bench and `agentr1 bench` report of their repetitions. It panics if xs is empty.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
