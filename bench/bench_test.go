package bench

import (
	"context"
	"fmt"
	"testing"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl/pipeline"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// The default policy shape (pipeline.DefaultConfig) over a 2048-id vocabulary whose last ids
// are the specials.
const (
	vocab   = 2048
	toolEnd = vocab - 3
	imEnd   = vocab - 2
	pad     = vocab - 1
)

var specials = trainer.Specials{Pad: pad, ToolEnd: toolEnd, ImEnd: imEnd}

func policy(b *testing.B, maxLen int) *model.Model {
	b.Helper()
	mc := pipeline.DefaultConfig().Model
	m, err := model.New(model.Config{
		VocabSize: vocab, HiddenSize: mc.Hidden, IntermediateSize: mc.Intermediate, NumHiddenLayers: mc.Layers,
		NumAttentionHeads: mc.Heads, NumKeyValueHeads: mc.KVHeads, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: maxLen, InitializerRange: 0.02,
	}, 1)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkRollout measures batched multi-turn generation: prompts x n rows, 3 turns of up to
// 32 tokens, 60-token observations appended to the KV cache between turns.
func BenchmarkRollout(b *testing.B) {
	for _, rows := range []int{8, 40} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			const maxLen = 512
			m := policy(b, maxLen)
			probs := Problems(rows, 150, 3, 60, toolEnd)
			tasks := make([]rollout.Task, rows)
			for i, p := range probs {
				tasks[i] = rollout.Task{Prompt: p.Prompt, NewEpisode: p.NewEpisode, Group: i}
			}
			cfg := rollout.Config{N: 1, MaxTurns: 3, MaxTurnTokens: 32, MaxLen: maxLen, StopTokens: []int{toolEnd, imEnd}, ToolEnd: toolEnd, Seed: 1}
			dec := m.NewDecoder(rows, maxLen)
			generated := 0
			for b.Loop() {
				out, err := rollout.Run(context.Background(), dec, model.Sampler{Temperature: 1}, Encoder{}, tasks, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for _, s := range out {
					generated += s.AgentTokens()
				}
			}
			b.ReportMetric(float64(generated)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkRLStep measures one whole RL step of GRPO and PPO: 8 prompts x 5 samples (PPO: 40
// prompts x 1), rollout, old/reference log-probs, critic, advantages and the update in 2
// mini-batches. tied=half gives every other problem the same reward on every attempt: about
// half of GRPO's groups tie, and the update leaves their rows out.
func BenchmarkRLStep(b *testing.B) {
	for _, bc := range []struct {
		algo      trainer.Algorithm
		tiedEvery int
		name      string
	}{
		{trainer.GRPO, 0, "algo=grpo"},
		{trainer.GRPO, 2, "algo=grpo/tied=half"},
		{trainer.PPO, 0, "algo=ppo"},
	} {
		algo := bc.algo
		b.Run(bc.name, func(b *testing.B) {
			cfg := trainer.DefaultRLConfig(algo)
			cfg.MaxTurns, cfg.MaxTurnTokens, cfg.MaxLen = 3, 32, 512
			cfg.CriticWarmup = 0
			cfg.Steps = 1 << 20
			cfg.Prompts, cfg.N = 8, 5 // fixed here: the figures in BENCHMARKS.md are of these 40 rows
			if algo == trainer.PPO {
				cfg.N, cfg.Prompts = 1, 40
			}
			tr, err := trainer.New(cfg, 1, policy(b, cfg.MaxLen), Encoder{}, specials, TiedProblems(64, 150, 3, 60, toolEnd, bc.tiedEvery))
			if err != nil {
				b.Fatal(err)
			}
			tokens, seconds, idle, update, steps := 0.0, 0.0, 0.0, 0.0, 0.0
			for b.Loop() {
				m, err := tr.Step(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				tokens += float64(m.TokensPerSec) * float64(m.TimeTotal)
				seconds += float64(m.TimeTotal)
				idle += float64(m.ZeroAdvRate)
				update += float64(m.TimeUpdate)
				steps++
			}
			b.ReportMetric(tokens/seconds, "tokens/s")
			b.ReportMetric(idle/steps, "zero_adv_rate")
			b.ReportMetric(update/steps, "update_s")
		})
	}
}

// BenchmarkSFTStep measures one step of the SFT warm start (pipeline.SFT at its default
// settings): the weighted next-token loss over 8 demonstrations, forward, backward, clipping and
// AdamW. The 64 synthetic demonstrations have the default run's shape: a 90-token prompt, one
// to three searches (a 30-token call and a 160-token tool response each) and a 20-token answer,
// 320 to 700 tokens in all, batched by length as SFT does. tokens/s counts the tokens of the
// batch, padding excluded.
func BenchmarkSFTStep(b *testing.B) {
	demos := make([]*mdp.Trajectory, 64)
	for i := range demos {
		tok := func(n, salt int) []int {
			ids := make([]int, n)
			for j := range ids {
				ids[j] = (i*31 + j*13 + salt) % toolEnd
			}
			return ids
		}
		d := &mdp.Trajectory{Prompt: tok(90, 1), OutcomeReward: 1}
		for s := range 1 + i%3 {
			d.Turns = append(d.Turns, mdp.Turn{Action: tok(30, 2+s), ActionLogProbs: make([]float32, 30), Observation: tok(160, 5+s)})
		}
		d.Turns = append(d.Turns, mdp.Turn{Action: tok(20, 9), ActionLogProbs: make([]float32, 20)})
		demos[i] = d
	}
	cfg := pipeline.DefaultSFTConfig()
	cfg.Steps = b.N
	pol := policy(b, 800)
	tokens, seconds := 0.0, 0.0
	b.ResetTimer()
	err := pipeline.SFT(context.Background(), pol, demos, cfg, pad, 1, func(m pipeline.SFTMetrics) {
		tokens += float64(m.TokensPerSec) * float64(m.TimeTotal)
		seconds += float64(m.TimeTotal)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(tokens/seconds, "tokens/s")
}
