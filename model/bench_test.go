package model

import (
	"math/rand/v2"
	"testing"

	"agentr1/tensor"
)

// benchS is the "bench-s" configuration of the benchmarks: a 4M-parameter Qwen2 shape.
func benchS() Config {
	return Config{
		VocabSize: 4096, HiddenSize: 256, IntermediateSize: 688, NumHiddenLayers: 4,
		NumAttentionHeads: 8, NumKeyValueHeads: 4, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 2048, InitializerRange: 0.02,
	}
}

// BenchmarkTrainStep measures one training step on a batch of 8 x 256 tokens: Forward,
// next-token cross entropy (mean over predicted tokens) through Backward, and AdamW.
func BenchmarkTrainStep(b *testing.B) {
	b.Run("config=bench-s", func(b *testing.B) {
		m, err := New(benchS(), 1)
		if err != nil {
			b.Fatal(err)
		}
		const B, T = 8, 256
		rng := rand.New(rand.NewPCG(1, 1))
		tokens, mask := leftPadded(rng, m.Config.VocabSize, T, []int{T, T, T, T, T, T, T, T})
		dlogp := make([]float32, B*T) // loss = -mean logp over the predicted tokens
		for b := range B {
			for t := 1; t < T; t++ {
				dlogp[b*T+t] = -1 / float32(B*(T-1))
			}
		}
		opt := &tensor.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
		params, grads := m.WritableParams(), m.ParamGrads()
		ws := NewWorkspace()
		step := func() {
			m.ZeroGrad()
			m.Forward(ws, tokens, mask, B, T)
			m.Backward(ws, dlogp, nil)
			opt.Update(params, grads)
		}
		step() // sizes the workspace and the optimiser moments outside the timing
		for b.Loop() {
			step()
		}
		b.ReportMetric(float64(B*T)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}

// BenchmarkGenerate measures greedy decoding with the KV cache: 16 rows, a 32-token prompt
// each, then 224 new tokens per row generated in batched Steps.
func BenchmarkGenerate(b *testing.B) {
	b.Run("config=bench-s/batch=16", func(b *testing.B) {
		m, err := New(benchS(), 1)
		if err != nil {
			b.Fatal(err)
		}
		const rows, prompt, gen = 16, 32, 224
		rng := rand.New(rand.NewPCG(2, 2))
		prompts := make([][]int, rows)
		for r := range prompts {
			for range prompt {
				prompts[r] = append(prompts[r], rng.IntN(m.Config.VocabSize))
			}
		}
		d := m.NewDecoder(rows, prompt+gen)
		greedy := Sampler{Greedy: true}
		rowIDs := make([]int, rows)
		next := make([]int, rows)
		for b.Loop() {
			for r := range rows {
				d.Reset(r)
				rowIDs[r] = r
				next[r], _ = greedy.Sample(d.Append(r, prompts[r]), nil)
			}
			for range gen - 1 {
				out := d.Step(rowIDs, next)
				for r, logits := range out {
					next[r], _ = greedy.Sample(logits, nil)
				}
			}
		}
		b.ReportMetric(float64(rows*gen)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}

// BenchmarkAppendObservations measures what a rollout does between two turns: 16 rows of the
// default run's policy shape (hidden 128, 4 layers, 4 heads of 32, vocabulary 768), each 90
// tokens in, are fed a 200-token observation, one row after another with Append
// (feed=one-by-one) or all at once with AppendRows (feed=rows). The two write the same caches
// bit for bit (TestDecoderAppendRows); their ratio is what AppendRows buys on this machine.
func BenchmarkAppendObservations(b *testing.B) {
	cfg := benchS()
	cfg.VocabSize, cfg.HiddenSize, cfg.IntermediateSize = 768, 128, 384
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads = 4, 2
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	const rows, prompt, obs = 16, 90, 200
	rng := rand.New(rand.NewPCG(3, 3))
	ids := make([]int, rows)
	prompts, feeds := make([][]int, rows), make([][]int, rows)
	for r := range rows {
		ids[r] = r
		prompts[r] = randomTokens(rng, cfg.VocabSize, prompt)
		feeds[r] = randomTokens(rng, cfg.VocabSize, obs)
	}
	for _, atOnce := range []bool{false, true} {
		name := "feed=one-by-one"
		if atOnce {
			name = "feed=rows"
		}
		b.Run(name, func(b *testing.B) {
			d := m.NewDecoder(rows, prompt+obs)
			for b.Loop() {
				b.StopTimer()
				for r := range rows {
					d.Reset(r)
					d.Append(r, prompts[r])
				}
				b.StartTimer()
				if atOnce {
					d.AppendRows(ids, feeds)
					continue
				}
				for r := range rows {
					d.Append(r, feeds[r])
				}
			}
			b.ReportMetric(float64(rows*obs)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
