package trainer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/rl/rollout"
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
	return SFTConfig{Steps: 300, Batch: 16, LR: 2e-3, WarmupSteps: 20, Decay: "cosine", MinLRRatio: 0.05, WeightDecay: 0.01, GradClip: 1.0}
}

// Validate reports the first invalid setting.
func (c SFTConfig) Validate() error {
	if c.Steps < 0 || c.Batch < 1 || c.LR < 0 {
		return fmt.Errorf("sft config: Steps %d, Batch %d, LR %g out of range", c.Steps, c.Batch, c.LR)
	}
	return Schedule{Peak: c.LR, Warmup: c.WarmupSteps, Total: c.Steps, Decay: c.Decay, MinRatio: c.MinLRRatio}.Validate()
}

// Demonstration is a scripted agent's episode on a problem: the text of each of its turns.
type Demonstration struct {
	Problem Problem
	Turns   []string // each turn's text, a tool-call turn ending with "</tool_call>"
}

// DemoTrajectory replays a demonstration through a fresh episode of its problem, so the
// observations are exactly what a rollout would see, and returns the trajectory (action
// tokens encoded from the demonstrator's text, log-probs 0) and its outcome. A final turn
// that does not end with "</tool_call>" or imEnd gets imEnd appended, so the policy learns
// to stop. Replay ends when the episode does.
func DemoTrajectory(ctx context.Context, d Demonstration, enc rollout.Encoder, sp Specials) (*mdp.Trajectory, rollout.Outcome, error) {
	ep := d.Problem.NewEpisode()
	t := &mdp.Trajectory{Prompt: d.Problem.Prompt}
	imEnd := enc.Decode([]int{sp.ImEnd})
	toolEnd := enc.Decode([]int{sp.ToolEnd})
	for k, text := range d.Turns {
		if !strings.HasSuffix(text, toolEnd) && !strings.HasSuffix(text, imEnd) {
			text += imEnd
		}
		action := enc.Encode(text)
		if len(action) == 0 {
			return nil, rollout.Outcome{}, fmt.Errorf("demonstration turn %d: empty", k)
		}
		tr, err := ep.Step(ctx, text)
		if err != nil {
			return nil, rollout.Outcome{}, fmt.Errorf("demonstration turn %d: %w", k, err)
		}
		turn := mdp.Turn{Action: action, ActionLogProbs: make([]float32, len(action))}
		if action[len(action)-1] == sp.ToolEnd || tr.Reward != 0 {
			turn.ToolCalls = []mdp.ToolCall{{End: len(action) - 1, Reward: tr.Reward}}
		}
		if !tr.Done {
			turn.Observation = enc.Encode(tr.Observation)
		}
		t.Turns = append(t.Turns, turn)
		if tr.Done {
			break
		}
	}
	out := ep.Finish(false)
	t.OutcomeReward = out.Reward
	return t, out, t.Validate()
}

// SFT trains policy on the demonstration trajectories with the masked next-token loss
//
//	L = −Σ_{agent tokens} log p(a_t | s_t) / #agent tokens   (token-mean over the batch)
//
// so prompt and observation tokens are context only (the action mask). onStep, if not nil,
// receives each step's metrics. Batches are drawn without replacement from a seeded
// permutation per pass over the data.
func SFT(ctx context.Context, policy *model.Model, demos []*mdp.Trajectory, cfg SFTConfig, padID int, seed uint64, onStep func(StepMetrics)) error {
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
	var perm []int
	next := 0
	for step := 0; step < cfg.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		batch := make([]mdp.Row, 0, cfg.Batch)
		for len(batch) < min(cfg.Batch, len(rows)) {
			if next == len(perm) {
				perm = rand.New(rand.NewPCG(seed, uint64(step))).Perm(len(rows))
				next = 0
			}
			batch = append(batch, rows[perm[next]])
			next++
		}
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
			onStep(StepMetrics{
				Step: step, Phase: "sft", Loss: Num(loss), GradNorm: Num(gn), LR: Num(opt.LR),
				Entropy: Num(entropy), AgentTokens: Num(rl.MaskedSum(mask, mask) / float64(b.B)),
				TokensPerSec: Num(float64(tokens) / el), TimeUpdate: Num(el), TimeTotal: Num(el),
			})
		}
	}
	return nil
}
