package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/rl/rollout"
)

// stepData is everything a step computes before the update, as (B, L) response-side arrays of
// the collated batch.
type stepData struct {
	col        *Collated
	lossMask   rl.Matrix // action mask (or every response token with NoLossMask)
	advMask    rl.Matrix // advantage mask (or every response token with NoAdvantageMask)
	oldLogp    rl.Matrix // the policy's log-probs before the update (verl old_log_prob)
	refLogp    rl.Matrix // frozen reference's log-probs (zero when the KL term is off)
	klBeta     float64   // β of this step's KL term (the adaptive controller moves it after the step's rewards)
	values     rl.Matrix // critic values at rollout time (PPO)
	rewards    rl.Matrix // token-level rewards (+ KL when in the reward)
	advantages rl.Matrix
	returns    rl.Matrix
	teaches    []bool // (B) row has a loss-masked token with a non-zero advantage (set by update)
}

// Step runs one RL step and returns its metrics; StepsDone advances on success. Its numbered
// comments are the stops of docs/TOUR.md and the list of the package doc: rollout (1, 2),
// trajectories and masks (3), old log-probs (4), reference, critic and token rewards (5),
// advantages (6, 7) and the update (8-11; during the critic warm-up, the critic's only).
func (t *Trainer) Step(ctx context.Context) (StepMetrics, error) {
	c := &t.Config
	s := t.StepsDone // the step's index: seeds its randomness
	m := StepMetrics{Step: s + 1, Phase: "rl", Algorithm: string(c.Algorithm)}
	start := time.Now()

	// 1, 2. Rollout: Prompts x N rows, one group per prompt. The environment pays a process
	// reward for a tool call as it runs it and the outcome reward when the episode ends.
	probs := t.stepProblems(s)
	results, err := t.rollout(ctx, probs, c.N, t.sampler(), t.stepRand(s, purposeRollout).Uint64())
	if err != nil {
		return m, fmt.Errorf("step %d: rollout: %w", m.Step, err)
	}
	var baselines []float64 // ReMax: the greedy rollout's reward per row
	if c.Algorithm == ReMax {
		if baselines, err = t.greedyBaselines(ctx, probs, len(results)); err != nil {
			return m, fmt.Errorf("step %d: greedy baseline rollout: %w", m.Step, err)
		}
	}
	m.TimeRollout = Num(time.Since(start).Seconds())
	rolloutStats(&m, results)

	// 3. The trajectories flattened into rows, collated, and the masks.
	col, err := FlattenResults(results, t.Specials.Pad)
	if err != nil {
		return m, fmt.Errorf("step %d: %w", m.Step, err)
	}
	if bad, n := nonFiniteSampled(col); bad > 0 {
		return m, fmt.Errorf("step %d: %w: %d of %d sampled log-probs are not finite (its logits are NaN or infinite)", m.Step, ErrDiverged, bad, n)
	}
	d := t.masks(col)

	// 4. Old log-probs.
	t.oldLogProbs(d, &m)

	// 5. Reference log-probs, critic values and the token rewards, minus the KL when it is in
	// the reward (none of the three in the default GRPO run).
	kl := t.refLogProbs(d, &m)
	t.criticValues(d, &m)
	t.tokenRewards(d, kl, &m)

	// 6, 7. Advantages by the configured estimator, over the advantage mask.
	if d.advantages, d.returns, err = t.advantages(d, col.Groups, baselines); err != nil {
		return m, fmt.Errorf("step %d: %w", m.Step, err)
	}

	if t.OnBatch != nil {
		gold := make([][]string, len(col.Groups))
		for i, g := range col.Groups {
			gold[i] = probs[g].Answers
		}
		t.OnBatch(&StepBatch{Step: m.Step, Collated: col, Answers: gold, LossMask: d.lossMask.Data, AdvantageMask: d.advMask.Data,
			Rewards: d.rewards.Data, Advantages: d.advantages.Data, Returns: d.returns.Data, Values: d.values.Data,
			OldLogProbs: d.oldLogp.Data})
	}

	// 8-11. Update (update.go): mini-batches, each one's loss and dL/dlogp, the model's
	// backward pass, gradient clipping and AdamW.
	tUpd := time.Now()
	policyUpdate := !(c.Algorithm.NeedsCritic() && s < c.CriticWarmup)
	if !policyUpdate {
		m.Phase = "critic-warmup"
	}
	if err := t.update(d, policyUpdate, &m); err != nil {
		return m, fmt.Errorf("step %d: update: %w", m.Step, err)
	}
	if name := nonFiniteWeight(t.Policy.Params); name != "" {
		return m, fmt.Errorf("step %d: %w: the update made weight %s non-finite", m.Step, ErrDiverged, name)
	}
	if policyUpdate && m.SkippedUpdates == 0 {
		m.Diverging = t.KLWatch.Observe(float64(m.ApproxKL))
	}
	m.TimeUpdate = Num(time.Since(tUpd).Seconds())
	m.TimeTotal = Num(time.Since(start).Seconds())
	tokens := 0
	for i := 0; i < col.Batch.B; i++ {
		tokens += col.Batch.PromptLens[i] + col.Batch.ResponseLens[i]
	}
	m.TokensPerSec = Num(float64(tokens) / float64(m.TimeTotal))
	t.StepsDone++
	return m, nil
}

// ErrDiverged is wrapped by Step's error when the policy itself is broken: the rollout
// sampled from logits that are not finite, or an update left a weight that is not. Unlike a
// non-finite loss or gradient (the guard skips that optimiser step and the policy stays as it
// was), no later step can repair it: the weights are only ever changed by updates, and the
// update of a NaN rollout would teach NaN. The caller stops the run and keeps the last
// checkpoint written before it.
var ErrDiverged = errors.New("the policy has diverged")

// nonFiniteSampled counts the agent tokens of col whose sampled log-prob is NaN or infinite
// (model.Sampler returns NaN when the logits hold no distribution), of n agent tokens.
func nonFiniteSampled(col *Collated) (bad, n int) {
	b := col.Batch
	for k, a := range b.ActionMask {
		if a == 0 {
			continue
		}
		n++
		if x := b.OldLogProbs[k]; math.IsNaN(x) || math.IsInf(x, 0) {
			bad++
		}
	}
	return bad, n
}

// nonFiniteWeight returns the name of the first parameter holding a NaN or an infinity, or "".
func nonFiniteWeight(params []*model.Param) string {
	for _, p := range params {
		for _, x := range p.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return p.Name
			}
		}
	}
	return ""
}

// greedySampler takes the argmax: ReMax's baseline.
var greedySampler = samplerGreedy()

// rollout generates n trajectories of every problem.
func (t *Trainer) rollout(ctx context.Context, probs []Problem, n int, sampler rollout.Sampler, seed uint64) ([]*rollout.Result, error) {
	tasks := make([]rollout.Task, len(probs))
	for i, p := range probs {
		tasks[i] = rollout.Task{Prompt: p.Prompt, NewEpisode: p.NewEpisode, Group: i}
	}
	return rollout.Run(ctx, t.decoder(len(tasks)*n), sampler, t.Encoder, tasks, t.rolloutConfig(n, seed))
}

// greedyBaselines runs ReMax's baseline, one greedy rollout of every problem, and returns for
// each of the step's rows (B = rows) the greedy reward of its problem: row i is problem i/N's.
func (t *Trainer) greedyBaselines(ctx context.Context, probs []Problem, rows int) ([]float64, error) {
	greedy, err := t.rollout(ctx, probs, 1, greedySampler, t.stepRand(t.StepsDone, purposeGreedy).Uint64())
	if err != nil {
		return nil, err
	}
	baselines := make([]float64, rows)
	for i := range baselines {
		baselines[i] = greedy[i/t.Config.N].TotalReward()
	}
	return baselines, nil
}

// masks starts the step's data from the collated batch with its two masks, (B, L) each: the
// loss mask (the action mask, or every response token with NoLossMask) and the advantage mask
// (or every response token with NoAdvantageMask).
func (t *Trainer) masks(col *Collated) *stepData {
	c := &t.Config
	b := col.Batch
	d := &stepData{col: col}
	respMask := rl.MatrixOf(b.B, b.L, b.ResponseMask)
	d.lossMask = rl.MatrixOf(b.B, b.L, b.ActionMask)
	if c.NoLossMask {
		d.lossMask = respMask
	}
	d.advMask = rl.MatrixOf(b.B, b.L, b.AdvantageMask)
	if c.NoAdvantageMask {
		d.advMask = respMask
	}
	return d
}

// forwardChunks splits the batch's rows into the chunks of the forward passes without a
// gradient (old, reference, critic): MicroBatch rows each, or a mini-batch's worth, of similar
// lengths so that each pads little.
func (t *Trainer) forwardChunks(b *mdp.Batch) [][]int {
	c := &t.Config
	rows := c.MicroBatch
	if rows <= 0 {
		rows = (b.B + c.MiniBatches - 1) / c.MiniBatches
	}
	return lengthGroups(b, rows, nil)
}

// oldLogProbs sets d.oldLogp (B, L), the log-probs of the ratio's denominator: taken from the
// rollout, which sampled from the tempered policy itself, or recomputed by a forward pass of
// the policy (verl recomputes old_log_prob; see RLConfig.OldLogProbs and recomputeOld) and
// then compared with the sampled ones (logp_diff_max).
func (t *Trainer) oldLogProbs(d *stepData, m *StepMetrics) {
	b := d.col.Batch
	tOld := time.Now()
	m.LogpDiffMax = Num(math.NaN())
	if t.recomputeOld() {
		d.oldLogp = rl.NewMatrix(b.B, b.L)
		for _, rows := range t.forwardChunks(b) {
			v := NewView(b, rows)
			logp, _ := t.Policy.Forward(t.ws, v.Tokens, v.Attn, v.B, v.T)
			v.Scatter(d.oldLogp.Data, v.ResponseColumns(logp))
		}
		diff := 0.0
		for k, a := range b.ActionMask {
			if a != 0 {
				diff = math.Max(diff, math.Abs(d.oldLogp.Data[k]-b.OldLogProbs[k]))
			}
		}
		m.LogpDiffMax = Num(diff)
	} else {
		d.oldLogp = rl.MatrixOf(b.B, b.L, b.OldLogProbs)
	}
	m.TimeOld = Num(time.Since(tOld).Seconds())
}

// refLogProbs sets d.refLogp (B, L), the frozen reference's log-probs, and returns the KL
// estimate of the placement's estimator at the old log-probs, kl (B, L), which the reward
// subtracts and the adaptive controller reads (rl.KLPenalty, verl kl_penalty). Without a
// reference (the KL term off) d.refLogp stays 0 and kl is empty.
func (t *Trainer) refLogProbs(d *stepData, m *StepMetrics) (kl rl.Matrix) {
	b := d.col.Batch
	tRef := time.Now()
	d.refLogp = rl.NewMatrix(b.B, b.L)
	if t.Ref != nil {
		for _, rows := range t.forwardChunks(b) {
			v := NewView(b, rows)
			logp, _ := t.Ref.Forward(t.wsRef, v.Tokens, v.Attn, v.B, v.T)
			v.Scatter(d.refLogp.Data, v.ResponseColumns(logp))
		}
		kl, _ = rl.KLPenalty(d.oldLogp, d.refLogp, t.Config.klPlacementEstimator())
		m.RefKL = Num(rl.MaskedMean(kl, d.lossMask))
	}
	m.TimeRef = Num(time.Since(tRef).Seconds())
	return kl
}

// criticValues sets d.values (B, L), the critic's values at rollout time (PPO; 0 without a
// critic), each read at the state before its response token (View.ResponseValues).
func (t *Trainer) criticValues(d *stepData, m *StepMetrics) {
	b := d.col.Batch
	tCrit := time.Now()
	d.values = rl.NewMatrix(b.B, b.L)
	if t.Critic != nil {
		for _, rows := range t.forwardChunks(b) {
			v := NewView(b, rows)
			vals := t.Critic.Forward(t.wsCritic, v.Tokens, v.Attn, v.B, v.T)
			v.Scatter(d.values.Data, v.ResponseValues(vals))
		}
	}
	m.TimeCritic = Num(time.Since(tCrit).Seconds())
}

// tokenRewards sets d.rewards (B, L), the token-level rewards of the batch, and d.klBeta, the
// step's β. When the KL is in the reward it subtracts β·kl (kl from refLogProbs) on the
// loss-masked tokens (verl apply_kl_penalty):
//
//	r_t = Rewards_t − β·kl_t·lossMask_t
//
// The mask is the loss mask, the action mask (verl's response_mask in its agent loop; in this
// package ResponseMask is every response token, tool tokens included). rl.KLInReward, verl's
// k1-only unmasked compute_rewards, is not called here. The adaptive controller then moves β
// for the next step from this step's KL, as apply_kl_penalty does; verl adapts only the
// reward's β, ours moves the loss term's too.
func (t *Trainer) tokenRewards(d *stepData, kl rl.Matrix, m *StepMetrics) {
	c := &t.Config
	b := d.col.Batch
	d.rewards = rl.MatrixOf(b.B, b.L, append([]float64(nil), b.Rewards...))
	d.klBeta = t.klBeta()
	if c.KLMode() != KLOff {
		m.KLCoef = Num(d.klBeta)
	}
	if c.KLMode() == KLInReward {
		for k := range d.rewards.Data {
			if d.lossMask.Data[k] != 0 {
				d.rewards.Data[k] -= d.klBeta * kl.Data[k]
			}
		}
	}
	if c.KLCtrl == KLAdaptive && c.KLMode() != KLOff {
		t.KLBeta = AdaptiveKLUpdate(d.klBeta, stepKL(kl, d.lossMask), c.KLTarget, b.B, c.KLHorizon)
	}
}

// advantages dispatches to the configured estimator over the advantage mask. It returns the
// advantages and the returns (the critic's targets for PPO; equal to the advantages for the
// outcome estimators, as verl).
func (t *Trainer) advantages(d *stepData, groups []int, baselines []float64) (adv, ret rl.Matrix, err error) {
	c := &t.Config
	r, mask := d.rewards, d.advMask
	switch c.Algorithm {
	case PPO:
		return rl.GAE(r, d.values, mask, c.Gamma, c.Lambda)
	case GRPO, DrGRPO, GSPO: // GSPO changes the loss, not the advantage (verl's recipe uses grpo's)
		a := rl.GRPOAdvantage(r, mask, groups, c.AdvantageEps, c.NormByStd)
		return a, a, nil
	case GRPOPassK:
		a, err := rl.GRPOPassKAdvantage(r, mask, groups, c.AdvantageEps, c.NormByStd)
		return a, a, err
	case GRPOProcess:
		a := rl.GRPOProcessAdvantage(r, mask, groups, c.AdvantageEps)
		return a, a, nil
	case OPO:
		a := rl.OPOAdvantage(r, mask, groups)
		return a, a, nil
	case GPG:
		a := rl.GPGAdvantage(r, mask, groups, gpgFNorm)
		return a, a, nil
	case ReinforcePP:
		mode := rl.ReturnsOverAgentTokens
		if c.ResetAtMask {
			mode = rl.ReturnsResetAtMask
		}
		return rl.ReinforcePlusPlus(r, mask, c.Gamma, mode)
	case ReinforcePPBase:
		a, err := rl.ReinforcePPBaselineAdvantage(r, mask, groups)
		return a, a, err
	case RLOO:
		a := rl.RLOOAdvantage(r, mask, groups)
		return a, a, nil
	case ReMax:
		a, ret := rl.ReMaxAdvantage(r, mask, baselines)
		return a, ret, nil
	}
	return rl.Matrix{}, rl.Matrix{}, fmt.Errorf("advantages: unknown algorithm %q", c.Algorithm)
}

// gpgFNorm is the f_norm of GPG's advantage, verl's default (its trainer passes none).
const gpgFNorm = 1.0

// klBeta returns the KL coefficient β of the next step: KLCoef, or the adaptive controller's
// current value.
func (t *Trainer) klBeta() float64 {
	if t.Config.KLCtrl == KLAdaptive {
		return t.KLBeta
	}
	return t.Config.KLCoef
}

// recomputeOld reports whether this step recomputes the old log-probs with a forward pass:
// always with OldLogProbsRecompute; with OldLogProbsSampled when the sampled log-probs are not
// the tempered policy's (a top-k/top-p filter truncates the distribution sampled from), when
// observation tokens are trained on (NoLossMask: they have no sampled log-prob), and every
// CheckOldEvery steps to measure the drift.
func (t *Trainer) recomputeOld() bool {
	c := &t.Config
	if c.OldLogProbs != OldLogProbsSampled || c.TopK > 0 || (c.TopP > 0 && c.TopP < 1) || c.NoLossMask {
		return true
	}
	return c.CheckOldEvery > 0 && t.StepsDone%c.CheckOldEvery == 0
}

// CheckPolicy reports ErrDiverged when the policy is broken: a weight is not finite, or its
// log-probs over the first training prompt are not (finite weights so large that the logits
// overflow). It costs one forward pass of one prompt; the caller runs it before writing a
// checkpoint, so that no checkpoint holds a policy known to be broken.
func (t *Trainer) CheckPolicy() error {
	if name := nonFiniteWeight(t.Policy.Params); name != "" {
		return fmt.Errorf("%w: weight %s is not finite", ErrDiverged, name)
	}
	prompt := t.Train[0].Prompt
	attn := make([]float32, len(prompt))
	for i := range attn {
		attn[i] = 1
	}
	logp, ent := t.Policy.Forward(t.ws, prompt, attn, 1, len(prompt)) // (1, T) each
	for k := 1; k < len(prompt); k++ {
		if x, h := float64(logp[k]), float64(ent[k]); math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(h) || math.IsInf(h, 0) {
			return fmt.Errorf("%w: its log-probs over a training prompt are not finite (log p %v, entropy %v at position %d)", ErrDiverged, x, h, k)
		}
	}
	return nil
}
