package trainer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"agentr1/model"
	"agentr1/rl/rollout"
	"agentr1/tensor"
)

// Problem is one question the agent can be trained or evaluated on: its prompt token ids and a
// constructor of fresh episodes (the environment that scores the answer).
type Problem struct {
	Prompt     []int                  // rendered ChatML prompt ending with the assistant header
	NewEpisode func() rollout.Episode // a fresh episode of this question
	Dataset    string                 // for evaluation breakdowns ("world", "hotpotqa", ...)
	Type       string                 // question type ("bridge", "comparison", ...)
	Answers    []string               // the accepted answers (gold and aliases), for reports
}

// Specials are the token ids the trainer must know.
type Specials struct {
	Pad     int // padding id of collated batches
	ToolEnd int // `</tool_call>`: stops a turn and closes a tool call
	ImEnd   int // `<|im_end|>`: stops a turn (end of the assistant's message)
}

// TurnStops are the tokens that end an agent's turn: a tool call's close or the message's end.
func (s Specials) TurnStops() []int { return []int{s.ToolEnd, s.ImEnd} }

// Trainer runs RL steps of one policy. Every random choice derives from (Seed, step), so a
// run resumed from a checkpoint at step s continues exactly as the uninterrupted run.
type Trainer struct {
	Config   RLConfig        // the RL settings
	Seed     uint64          // the run's seed, from which every random stream derives
	Workers  int             // goroutines for environment steps (0: GOMAXPROCS)
	Policy   *model.Model    // the policy being trained
	Ref      *model.Model    // frozen initial policy; nil when the KL term is off
	Critic   *model.Critic   // PPO only
	Opt      tensor.AdamW    // policy optimiser
	CritOpt  tensor.AdamW    // critic optimiser
	Encoder  rollout.Encoder // tokenizes observations and detokenizes actions for the episodes
	Specials Specials        // the special token ids of the rollout and the batches
	Train    []Problem       // the training questions; each step takes Prompts of an epoch's permutation

	StepsDone int // RL steps completed (the next step's index)
	// KLBeta is the adaptive KL controller's coefficient β for the next step (RLConfig.KLCtrl):
	// KLCoef at the start, saved in checkpoints. The fixed controller reads KLCoef instead.
	KLBeta float64
	// NonFiniteRun counts the latest steps in a row whose update the numeric guard cut short
	// (a non-finite loss or gradient); Run stops at RLConfig.MaxNonFiniteSteps.
	NonFiniteRun int
	// KLWatch flags the steps whose update's approx_kl explodes (StepMetrics.Diverging).
	KLWatch Divergence
	// RunState is the caller's own state, opaque here, saved with every checkpoint and
	// restored by LoadCheckpoint (the pipeline keeps the evaluations before RL there).
	RunState json.RawMessage

	// OnBatch, when set, sees every step's prepared batch before the update (to dump sample
	// trajectories with their masks and advantages for a report). It must not modify it.
	OnBatch func(*StepBatch)
	// OnPolicyLoss, when set, sees every policy mini-batch's loss, token by token, before its
	// optimiser step (TraceStep, agentr1 explain). It must not modify it.
	OnPolicyLoss func(*PolicyTrace)

	ws, wsRef, wsCritic *model.Workspace
	dec                 *model.Decoder
	decRows             int

	// onBackward, when set (by tests), sees each mini-batch's (B, T) dL/dlogp before the
	// policy's backward pass.
	onBackward func(v *View, dlogp []float32)
	// keepIdleRows, when set (by tests), keeps the rows that teach nothing in the update's
	// forward and backward passes (teachingRows), to check that leaving them out is exact.
	keepIdleRows bool
}

// New returns a trainer for policy on the train problems. The reference model is a frozen
// clone of policy (when the KL term is on) and the critic, for PPO, is initialised from the
// policy's trunk as verl does.
func New(cfg RLConfig, seed uint64, policy *model.Model, enc rollout.Encoder, sp Specials, train []Problem) (*Trainer, error) {
	return NewWithReference(cfg, seed, policy, nil, enc, sp, train)
}

// NewWithReference is New with the frozen reference policy given: ref must hold the initial
// policy's weights, and is typically that policy's checkpoint loaded for inference
// (model.LoadForInference of a BF16 folder: its matrices packed in bfloat16, half the memory
// of New's float32 clone, which is then never made). A nil ref clones policy, as New
// does. ref is not used when the KL term is off. It returns an error if ref's configuration
// is not policy's: other parameters, or other shapes.
func NewWithReference(cfg RLConfig, seed uint64, policy, ref *model.Model, enc rollout.Encoder, sp Specials, train []Problem) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("trainer: no training problems")
	}
	for i, p := range train {
		if len(p.Prompt) >= cfg.MaxLen {
			return nil, fmt.Errorf("trainer: training problem %d: its prompt has %d tokens, leaving no room for a response under MaxLen (--rl.max-len) %d", i, len(p.Prompt), cfg.MaxLen)
		}
	}
	// The policy and the reference score tokens by the distribution the rollout samples
	// from, softmax(logits / Temperature), as verl's actor and reference do (dp_actor
	// _forward_micro_batch divides the logits by the rollout temperature): the PPO ratio
	// compares tempered policies, and the sampled log-probs are the old ones at any
	// temperature.
	t := &Trainer{
		Config: cfg, Seed: seed, Policy: policy, Encoder: enc, Specials: sp, Train: train, KLBeta: cfg.KLCoef,
		ws:    &model.Workspace{Temperature: float32(cfg.Temperature)},
		wsRef: &model.Workspace{Temperature: float32(cfg.Temperature)}, wsCritic: model.NewWorkspace(),
		KLWatch: RLKLDivergence(),
	}
	if cfg.KLMode() != KLOff {
		if ref == nil {
			ref = policy.Clone()
		} else if err := sameParams(ref, policy); err != nil {
			return nil, fmt.Errorf("trainer: the reference policy is not a copy of the policy: %w", err)
		}
		t.Ref = ref
	}
	if cfg.Algorithm.NeedsCritic() {
		t.Critic = model.NewCritic(policy, seed^0x5eed)
	}
	t.Opt = newAdamW(cfg, cfg.LR)
	t.CritOpt = newAdamW(cfg, cfg.CriticLR)
	return t, nil
}

// sameParams returns an error naming the first parameter where a and b differ in name or
// shape, or nil when they have the same parameters.
func sameParams(a, b *model.Model) error {
	if len(a.Params) != len(b.Params) {
		return fmt.Errorf("%d parameters, want %d", len(a.Params), len(b.Params))
	}
	for i, p := range a.Params {
		q := b.Params[i]
		if p.Name != q.Name || !slices.Equal(p.Shape, q.Shape) {
			return fmt.Errorf("parameter %d is %s %v, want %s %v", i, p.Name, p.Shape, q.Name, q.Shape)
		}
	}
	return nil
}

func newAdamW(cfg RLConfig, lr float64) tensor.AdamW {
	return tensor.AdamW{LR: lr, Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: 1e-8, WeightDecay: cfg.WeightDecay}
}

// decoder returns a decoder of the policy with at least rows rows of capacity MaxLen.
func (t *Trainer) decoder(rows int) *model.Decoder {
	if t.dec == nil || t.decRows < rows {
		t.dec = t.Policy.NewDecoder(rows, t.Config.MaxLen)
		t.decRows = rows
	}
	return t.dec
}

// stepRand returns the random stream of one purpose of step s: streams never overlap across
// steps or purposes.
func (t *Trainer) stepRand(s int, purpose uint64) *rand.Rand {
	return rand.New(rand.NewPCG(t.Seed, uint64(s)<<8|purpose))
}

// Random-stream purposes of a step.
const (
	purposePrompts uint64 = iota + 1
	purposeRollout
	purposeGreedy
	purposeShuffle
)

// stepProblems returns the Prompts problems of step s: consecutive slices of a per-epoch
// permutation of the training set, so every problem is seen once per epoch.
func (t *Trainer) stepProblems(s int) []Problem {
	n := len(t.Train)
	out := make([]Problem, 0, t.Config.Prompts)
	for k := 0; k < t.Config.Prompts; k++ {
		global := s*t.Config.Prompts + k
		epoch, pos := global/n, global%n
		perm := rand.New(rand.NewPCG(t.Seed, uint64(epoch)<<8|purposePrompts)).Perm(n)
		out = append(out, t.Train[perm[pos]])
	}
	return out
}

// sampler is the training rollout's sampler.
func (t *Trainer) sampler() model.Sampler {
	return model.Sampler{Temperature: t.Config.Temperature, TopP: t.Config.TopP, TopK: t.Config.TopK}
}

// rolloutConfig is the training rollout's configuration for n samples per prompt. A training
// prompt that leaves no room for a response is an error, as in verl (truncation="error"):
// training on rows cut before their first token would teach nothing and hide a bad setting.
func (t *Trainer) rolloutConfig(n int, seed uint64) rollout.Config {
	c := t.Config
	return rollout.Config{
		N: n, MaxTurns: c.MaxTurns, MaxTurnTokens: c.MaxTurnTokens, MaxLen: c.MaxLen,
		RefuseLongPrompts: true,
		MaxObsTokens:      c.MaxObsTokens, StopTokens: t.Specials.TurnStops(), ToolEnd: t.Specials.ToolEnd,
		Workers: t.Workers, Seed: seed,
	}
}

// StepBatch is one step's training data as the update sees it; the matrices are (B, L) over the
// response columns of Collated.Batch.
type StepBatch struct {
	Step          int       // the step's number, from 1 (StepMetrics.Step)
	Collated      *Collated // the step's rollout, flattened and collated
	LossMask      []float64 // the mask the losses use (action mask, or every response token with NoLossMask)
	AdvantageMask []float64 // the mask advantages were computed over
	Rewards       []float64 // token-level rewards (KL included when in the reward)
	Advantages    []float64 // the token advantages of the configured estimator
	Returns       []float64 // the critic's targets (PPO); the advantages for the outcome estimators
	Values        []float64 // the critic's values at rollout time (PPO); 0 without a critic
	OldLogProbs   []float64 // the old log-probs of the ratio (recomputed or sampled: RLConfig.OldLogProbs)

	Answers [][]string // (B,) the accepted answers of each row's question (Problem.Answers)
}
