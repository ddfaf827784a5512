package trainer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/tensor"
)

// SFTConfig sets the supervised warm start on demonstrations.
type SFTConfig struct {
	Steps       int     // optimiser steps
	Batch       int     // demonstrations per step
	LR          float64 // peak learning rate
	WarmupSteps int     // linear warm-up
	Decay       string  // cosine, linear, constant
	MinLRRatio  float64 // final lr as a fraction of the peak
	WeightDecay float64 // AdamW decoupled weight decay
	GradClip    float64 // max gradient norm
}

// DefaultSFTConfig returns the warm-start defaults for the ~1M-parameter policy.
func DefaultSFTConfig() SFTConfig {
	return SFTConfig{Steps: 700, Batch: 8, LR: 2e-3, WarmupSteps: 20, Decay: "cosine", MinLRRatio: 0.1, WeightDecay: 0.01, GradClip: 1.0}
}

// Validate reports the first invalid setting.
func (c SFTConfig) Validate() error {
	if c.Steps < 0 || c.Batch < 1 || c.LR < 0 {
		return fmt.Errorf("sft config: Steps %d, Batch %d, LR %g out of range", c.Steps, c.Batch, c.LR)
	}
	return Schedule{Peak: c.LR, Warmup: c.WarmupSteps, Total: c.Steps, Decay: c.Decay, MinRatio: c.MinLRRatio}.Validate()
}

// SFT trains policy on the demonstration trajectories with the masked next-token loss
//
//	L = −Σ_{agent tokens} log p(a_t | s_t) / #agent tokens   (token-mean over the batch)
//
// so prompt and observation tokens are context only (the action mask). onStep, if not nil,
// receives each step's metrics. Each pass over the data is a seeded shuffle cut into
// batches of similar lengths (sftBatches).
func SFT(ctx context.Context, policy *model.Model, demos []*mdp.Trajectory, cfg SFTConfig, padID int, seed uint64, onStep func(SFTMetrics)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(demos) == 0 {
		return fmt.Errorf("sft: no demonstrations")
	}
	rows := make([]mdp.Row, len(demos))
	for i, d := range demos {
		r, err := mdp.Flatten(d, 0)
		if err != nil {
			return fmt.Errorf("sft: demonstration %d: %w", i, err)
		}
		rows[i] = r
	}
	sched := Schedule{Peak: cfg.LR, Warmup: cfg.WarmupSteps, Total: cfg.Steps, Decay: cfg.Decay, MinRatio: cfg.MinLRRatio}
	opt := tensor.AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: cfg.WeightDecay}
	ws := model.NewWorkspace()
	var batches [][]int // the current pass's batches, as row indices
	for step := 0; step < cfg.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		if len(batches) == 0 {
			batches = sftBatches(rows, cfg.Batch, rand.New(rand.NewPCG(seed, uint64(step))))
		}
		batch := make([]mdp.Row, 0, len(batches[0]))
		for _, i := range batches[0] {
			batch = append(batch, rows[i])
		}
		batches = batches[1:]
		b := mdp.Collate(batch, padID)
		all := make([]int, b.B)
		for i := range all {
			all[i] = i
		}
		v := newView(b, all)
		logpT, entT := policy.Forward(ws, v.tokens, v.attn, v.B, v.T)
		logp := v.responseLogp(logpT)
		mask := v.gather(b.ActionMask)
		entropy := rl.MaskedMean(v.responseLogp(entT), mask)
		negLogp := rl.NewMatrix(v.B, v.L)
		for k := range logp.Data {
			negLogp.Data[k] = -logp.Data[k]
		}
		loss, grad, err := rl.AggLoss(negLogp, mask, rl.TokenMean, rl.AggOptions{})
		if err != nil {
			return fmt.Errorf("sft step %d: %w", step, err)
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return fmt.Errorf("sft step %d: loss is %v", step, loss)
		}
		for k := range grad.Data {
			grad.Data[k] = -grad.Data[k] // dL/dlogp = −w
		}
		policy.ZeroGrad()
		policy.Backward(ws, v.logpGrad(grad), nil)
		gn := tensor.ClipGradNorm(policy.ParamGrads(), cfg.GradClip)
		opt.LR = sched.LR(step)
		opt.Update(policy.ParamData(), policy.ParamGrads())
		if onStep != nil {
			tokens := 0
			for i := 0; i < b.B; i++ {
				tokens += b.PromptLens[i] + b.ResponseLens[i]
			}
			el := time.Since(start).Seconds()
			onStep(SFTMetrics{
				Step: step, Phase: "sft", Loss: Num(loss), GradNorm: Num(gn), LR: Num(opt.LR),
				Entropy: Num(entropy), AgentTokens: Num(rl.MaskedSum(mask, mask) / float64(b.B)),
				TokensPerSec: Num(float64(tokens) / el), TimeTotal: Num(el),
			})
		}
	}
	return nil
}

// sftBatches cuts one pass over rows into batches of size: a seeded permutation is split into
// windows of 8 batches, each window sorted by length and cut into batches, and the batch order
// shuffled, so a batch pads little while every row is still seen once per pass.
func sftBatches(rows []mdp.Row, size int, rng *rand.Rand) [][]int {
	size = min(size, len(rows))
	perm := rng.Perm(len(rows))
	var out [][]int
	for lo := 0; lo < len(perm); lo += 8 * size {
		window := perm[lo:min(len(perm), lo+8*size)]
		slices.SortStableFunc(window, func(a, b int) int { return len(rows[a].Tokens) - len(rows[b].Tokens) })
		for k := 0; k < len(window); k += size {
			out = append(out, window[k:min(len(window), k+size)])
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
