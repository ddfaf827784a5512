package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/rl/trainer"
	"agentr1/tensor"
)

// SFTConfig sets the supervised warm start on demonstrations. The first nine settings are the
// warm start the default run uses; the ones from MistakeWeight on are experiments, neutral or
// off at their defaults (a weight of 1, no copy steps), kept so that docs/RESULTS.md's
// measurements of them (sections 1.2 and 6) can be rerun.
type SFTConfig struct {
	Steps       int             // optimiser steps
	Batch       int             // demonstrations per step
	LR          float64         // peak learning rate
	WarmupSteps int             // linear warm-up
	Decay       trainer.LRDecay // cosine, linear, constant
	MinLRRatio  float64         // final lr as a fraction of the peak
	WeightDecay float64         // AdamW decoupled weight decay
	GradClip    float64         // max gradient norm
	// ContextWeight weights the next-token loss on observation tokens (tool responses)
	// against 1 on agent tokens; 0 is the paper's masked loss on agent tokens only.
	ContextWeight float64

	// Experiments: neutral or off at their defaults.

	// MistakeWeight weights the loss on the actions in which the noisy scripted agent erred on
	// purpose (a wrong entity searched, a malformed call, a wrong answer): 0 learns the
	// recoveries that follow a mistake without learning to make it; 1, the default, imitates
	// the agent, mistakes and all, since 0 measured no better after RL (within one standard
	// error), and at today's default it mends one seed's warm start and breaks another's
	// (docs/RESULTS.md section 1).
	MistakeWeight float64
	// NumberWeight weights the loss on the agent's number tokens (SFTOptions.NumberTokens: the
	// digits of a thought, an expression or an answer) against 1 on its other tokens, since
	// digits are a few percent of the agent's tokens and so of the gradient. 1, the default,
	// is the plain masked loss.
	NumberWeight float64
	// ContextNumberWeight multiplies the loss weight (ContextWeight) of the number tokens of the
	// tool responses. The numbers a passage states are random facts: predicting them teaches
	// only how often each digit occurs. 1, the default, trains them as the other response
	// tokens.
	ContextNumberWeight float64
	// NameWeight weights the loss on the tokens of the agent's thoughts that copy a name out of
	// the tool response just read (SFTOptions.CopiedNames) against 1 on its other tokens:
	// copying a name never seen is what reading the unseen world takes, and those tokens are
	// about 5% of the agent's. 1, the default, is the plain masked loss.
	NameWeight float64
	// CalcAnswerWeight weights the loss on the answer turn that follows a demonstrated
	// calculation (the turns AnswerStates measures) against 1 on the other turns. Few
	// demonstrations reach it, since the impatient demonstrator answers most numeric
	// questions with the one number it read; a warm start that learns from those to answer an
	// operand answers one after the calculator's result too, and RL does not unteach it
	// (docs/RESULTS.md section 6). 1, the default, is the plain masked loss; the calculator
	// task takes 5 (CalculatorTask).
	CalcAnswerWeight float64
	// CalcCallWeight weights the loss on a demonstration's calculating turn (its first
	// calculator call, the turns CalcStates measures) against 1 on the other turns, as
	// CalcAnswerWeight weights the answer after it. 1, the default, is the plain masked loss;
	// the calculator task takes 5.
	CalcCallWeight float64
	// ChoiceAnswerWeight weights the loss on the answer turn of each demonstrated question that
	// chooses between two names ("Who was born first, A or B?": world.Final.Chooses),
	// mistakes aside, against 1 on the other turns. Among questions whose answers are numbers
	// a warm start learns to answer these with a number too (docs/RESULTS.md section 6), which
	// is never right; RL then spreads the calculator to them. 1, the default, is the plain
	// masked loss; the calculator task takes 5.
	ChoiceAnswerWeight float64
	// CopySteps are optimiser steps, before the demonstrations, on copying: each row is random
	// tokens of the kinds the tool responses use, then recalls of spans of them, each cued by
	// its first token, the loss on the recalls (copyBatch). A pretrained LLM arrives able to
	// copy what it has just read; a policy trained from scratch learns it from the
	// demonstrations, late. 0 in DefaultSFTConfig, for a pretrained policy; the generated
	// world's DefaultConfig sets 500.
	CopySteps int
	// CopyNumbers makes the copy steps' rows numbers to recall by their keys (numberCopyBatch)
	// instead of spans cued by their first token: a year's first digit begins every year of
	// a passage, so it cannot be a span's cue. Needs SFTOptions.NumberTokens.
	CopyNumbers bool
	// CopyNameShare, with CopyNumbers, is the share of the rows' values that are names rather
	// than numbers (numberCopyBatch). 0, the default, is numbers only; CopyBoth is the setting
	// that trains both kinds (docs/RESULTS.md section 6 compares the two).
	CopyNameShare float64
	// CopyBoth, with CopyNumbers, alternates the copy steps' rows: rows of numbers, then rows
	// of spans (copyBatch), in turn, so that the copying of digits and of names are learnt
	// together rather than one at the other's cost.
	CopyBoth bool
	// CopyEvery, above 0, keeps the copy rows going after the copy steps: one more copy step
	// after every CopyEvery demonstration steps, so that what the copy steps taught is kept
	// while the demonstrations are learnt. 0 in DefaultSFTConfig; DefaultConfig sets 8.
	CopyEvery int
	// CopyLR is the copy steps' learning rate, constant after WarmupSteps; lower than the
	// demonstrations' because at 2e-3 the copy loss of some seeds stays at chance.
	CopyLR float64
}

// DefaultSFTConfig returns the warm-start defaults for the ~1M-parameter policy.
// ContextWeight 0.5 trains the tool responses at half weight: a policy that has never
// modelled the passages reads them badly, and without it the warm start answers worse and RL
// gains nothing from it. Steps 2,400 (batches of 8 over the default 6,000 demonstrations,
// about 5 minutes on 2 cores with the avx512 kernels) runs past the point where the
// agent-token loss, after falling slowly to ~1.0, falls steeply as the policy starts to read
// names out of the passages (Config.Worlds); what the base reads bounds what RL can reach,
// and a shorter warm start stops before that fall. WeightDecay is PyTorch's AdamW default,
// 0.01: 0.1 raised the unseen gain on the avx2 kernels and lowered it on avx512
// (docs/RESULTS.md section 1.2, with the other measurements).
func DefaultSFTConfig() SFTConfig {
	return SFTConfig{Steps: 2400, Batch: 8, LR: 2e-3, WarmupSteps: 20, Decay: trainer.DecayCosine, MinLRRatio: 0.1, WeightDecay: 0.01, GradClip: 1.0, ContextWeight: 0.5, MistakeWeight: 1, NumberWeight: 1, ContextNumberWeight: 1, NameWeight: 1, CalcAnswerWeight: 1, CalcCallWeight: 1, ChoiceAnswerWeight: 1, CopyLR: 1e-3}
}

// TotalSteps is the warm start's optimiser steps: the copy steps, then the demonstrations'.
func (c SFTConfig) TotalSteps() int { return c.CopySteps + c.Steps + c.mixedCopySteps() }

// mixedCopySteps is the number of copy steps among the demonstrations' (CopyEvery).
func (c SFTConfig) mixedCopySteps() int {
	if c.CopyEvery <= 0 {
		return 0
	}
	return c.Steps / c.CopyEvery
}

// stepKind says what optimiser step step (from 0) of the warm start is, a copy step or not,
// and its index among the steps of its kind: a demonstration step's sets its learning rate, a
// copy step's its rows with CopyBoth. The copy steps come first; then, with CopyEvery k, each
// k demonstration steps are followed by one copy step.
func (c SFTConfig) stepKind(step int) (copyStep bool, index int) {
	if step < c.CopySteps {
		return true, step
	}
	j := step - c.CopySteps
	if c.CopyEvery <= 0 {
		return false, j
	}
	if (j+1)%(c.CopyEvery+1) == 0 {
		return true, c.CopySteps + (j+1)/(c.CopyEvery+1) - 1
	}
	return false, j - j/(c.CopyEvery+1)
}

// copyRows draws the rows of copy step index (stepKind): rows of spans of vocab (copyBatch),
// or with CopyNumbers rows of numbers of keys and digits (numberCopyBatch), or with CopyBoth
// the two in turn.
func (c SFTConfig) copyRows(index int, vocab, keys, digits []int, rng *rand.Rand) ([]mdp.Row, [][]float64) {
	if c.CopyNumbers && !(c.CopyBoth && index%2 == 1) {
		return numberCopyBatch(keys, digits, c.CopyNameShare, rng)
	}
	return copyBatch(vocab, rng)
}

// needsNumberTokens reports whether the settings use SFTOptions.NumberTokens.
func (c SFTConfig) needsNumberTokens() bool {
	return c.weighsNumbers() || c.CopyNumbers
}

// weighsNumbers reports whether the number tokens' loss weights differ from the others'.
func (c SFTConfig) weighsNumbers() bool { return c.NumberWeight != 1 || c.ContextNumberWeight != 1 }

// Validate reports the first invalid setting.
func (c SFTConfig) Validate() error {
	if c.Steps < 0 || c.Batch < 1 || c.LR < 0 {
		return fmt.Errorf("sft config: Steps %d, Batch %d, LR %g out of range", c.Steps, c.Batch, c.LR)
	}
	if c.CopyEvery < 0 || (c.CopyEvery > 0 && c.CopyLR == 0) {
		return fmt.Errorf("sft config: CopyEvery %d, CopyLR %g: want CopyEvery >= 0 and, with it, CopyLR > 0", c.CopyEvery, c.CopyLR)
	}
	if c.CopySteps < 0 || c.CopyLR < 0 || (c.CopySteps > 0 && c.CopyLR == 0) {
		return fmt.Errorf("sft config: CopySteps %d, CopyLR %g: want CopySteps >= 0 and, with copy steps, CopyLR > 0", c.CopySteps, c.CopyLR)
	}
	if c.ContextWeight < 0 || c.ContextWeight > 1 {
		return fmt.Errorf("sft config: ContextWeight %g, want 0..1", c.ContextWeight)
	}
	if c.MistakeWeight < 0 || c.MistakeWeight > 1 {
		return fmt.Errorf("sft config: MistakeWeight %g, want 0..1", c.MistakeWeight)
	}
	if c.CopyBoth && !c.CopyNumbers {
		return fmt.Errorf("sft config: CopyBoth needs CopyNumbers")
	}
	if !(c.CopyNameShare >= 0 && c.CopyNameShare <= 1) || (c.CopyNameShare > 0 && !c.CopyNumbers) {
		return fmt.Errorf("sft config: CopyNameShare %g, CopyNumbers %v: want a share in 0..1, and above 0 only with CopyNumbers", c.CopyNameShare, c.CopyNumbers)
	}
	for _, w := range []struct {
		name  string
		value float64
	}{{"NumberWeight", c.NumberWeight}, {"NameWeight", c.NameWeight}, {"CalcCallWeight", c.CalcCallWeight},
		{"CalcAnswerWeight", c.CalcAnswerWeight}, {"ChoiceAnswerWeight", c.ChoiceAnswerWeight}} {
		if !(w.value >= 0 && w.value <= 100) {
			return fmt.Errorf("sft config: %s %g, want 0..100", w.name, w.value)
		}
	}
	if !(c.ContextNumberWeight >= 0 && c.ContextNumberWeight <= 1) {
		return fmt.Errorf("sft config: ContextNumberWeight %g, want 0..1", c.ContextNumberWeight)
	}
	if _, err := trainer.ParseLRDecay(string(c.Decay)); err != nil {
		return fmt.Errorf("sft config: Decay: %w", err)
	}
	return trainer.Schedule{Peak: c.LR, Warmup: c.WarmupSteps, Total: c.Steps, Decay: c.Decay, MinRatio: c.MinLRRatio}.Validate()
}

// SFTOptions adds checkpoints to SFT: the state (step, parameters, AdamW moments, the data
// order) is saved every CheckpointEvery steps and when the context is cancelled, and a later
// call with Resume continues from the latest one exactly as the uninterrupted run would.
type SFTOptions struct {
	CheckpointDir   string                      // where SFT checkpoints go ("": none)
	CheckpointEvery int                         // SFT steps between checkpoints (0: only when interrupted)
	Resume          bool                        // continue from the latest SFT checkpoint in CheckpointDir, if any
	OnCheckpoint    func(path string)           // called after each checkpoint is written; may be nil
	OnResume        func(path string, step int) // called with the checkpoint and its step when SFT resumes; may be nil
	// ActionWeights holds, per demonstration and turn, the loss weight of that turn's action
	// tokens (nil, or a short or nil entry: 1).
	ActionWeights [][]float64
	// NumberTokens marks, by token id, the tokens SFTConfig.NumberWeight and
	// ContextNumberWeight apply to (NumberTokens gives them for a tokenizer); needed when
	// either is not 1.
	NumberTokens []bool
	// CopiedNames marks, per demonstration and token (laid out as mdp.Flatten lays it out), the
	// tokens SFTConfig.NameWeight applies to (CopiedNameTokens gives them); needed when it is
	// not 1.
	CopiedNames [][]bool
	// StopOnDivergence stops SFT at a step whose loss explodes (SFTMetrics.Diverging) instead
	// of going on; the state is not saved, so the last checkpoint stays the latest.
	StopOnDivergence bool
	// SaveState, when set, gives the caller's own state before each checkpoint, saved in it;
	// RestoreState, when set, receives it back when SFT resumes from that checkpoint, before
	// any step (a caller keeps there how far its output files had got: see RunState), or nil
	// when Resume finds no checkpoint and SFT starts over.
	SaveState    func() json.RawMessage
	RestoreState func(json.RawMessage) // receives the state SaveState gave, or nil (see above)
}

// SFT trains policy on the demonstration trajectories with the masked next-token loss
//
//	L = −Σ_{agent tokens} log p(a_t | s_t) / #agent tokens   (token-mean over the batch)
//
// so prompt and observation tokens are context only (the action mask), after cfg.CopySteps
// copy steps (copyBatch) if any. onStep, if not nil, receives each step's metrics. Each pass
// over the data is a seeded shuffle cut into batches of similar lengths (sftBatches). It is
// SFTWithOptions without checkpoints.
func SFT(ctx context.Context, policy *model.Model, demos []*mdp.Trajectory, cfg SFTConfig, padID int, seed uint64, onStep func(SFTMetrics)) error {
	return SFTWithOptions(ctx, policy, demos, cfg, padID, seed, SFTOptions{}, onStep)
}

// SFTWithOptions is SFT with checkpoints (opt). When ctx is cancelled the step under way
// finishes, the state is saved (if opt.CheckpointDir is set) and the error wraps ctx.Err().
// A latest checkpoint found damaged on resume is an error wrapping
// trainer.ErrDamagedCheckpoint that says how the run goes on (damagedAdvice).
func SFTWithOptions(ctx context.Context, policy *model.Model, demos []*mdp.Trajectory, cfg SFTConfig, padID int, seed uint64, opt SFTOptions, onStep func(SFTMetrics)) error {
	if err := checkSFTInputs(demos, cfg, opt); err != nil {
		return err
	}
	rows, weights, err := sftRows(demos, cfg, opt)
	if err != nil {
		return err
	}
	st := &sftState{
		cfg: cfg, seed: seed, policy: policy,
		opt:   tensor.AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: cfg.WeightDecay},
		watch: trainer.SFTLossDivergence(policy.Config.VocabSize),
	}
	if err := st.resume(opt); err != nil {
		return err
	}
	r := &sftRun{
		st: st, opt: opt, ws: model.NewWorkspace(), rows: rows, weights: weights, padID: padID,
		sched:     trainer.Schedule{Peak: cfg.LR, Warmup: cfg.WarmupSteps, Total: cfg.Steps, Decay: cfg.Decay, MinRatio: cfg.MinLRRatio},
		copySched: trainer.Schedule{Peak: cfg.CopyLR, Warmup: cfg.WarmupSteps, Total: cfg.CopySteps, Decay: trainer.DecayConstant},
	}
	if err := r.readCopyTokens(demos); err != nil {
		return err
	}
	return r.train(ctx, onStep)
}

// checkSFTInputs refuses settings cfg.Validate rejects, no demonstrations, and options that do
// not give what cfg's weights need (an action weight list per demonstration, the number tokens,
// the copied names).
func checkSFTInputs(demos []*mdp.Trajectory, cfg SFTConfig, opt SFTOptions) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(demos) == 0 {
		return fmt.Errorf("sft: no demonstrations")
	}
	if opt.ActionWeights != nil && len(opt.ActionWeights) != len(demos) {
		return fmt.Errorf("sft: %d action weight lists for %d demonstrations", len(opt.ActionWeights), len(demos))
	}
	if cfg.needsNumberTokens() && opt.NumberTokens == nil {
		return fmt.Errorf("sft: NumberWeight %g, ContextNumberWeight %g and CopyNumbers %v need the number tokens (SFTOptions.NumberTokens)", cfg.NumberWeight, cfg.ContextNumberWeight, cfg.CopyNumbers)
	}
	if cfg.NameWeight != 1 && len(opt.CopiedNames) != len(demos) {
		return fmt.Errorf("sft: NameWeight %g needs the copied names of each of the %d demonstrations (SFTOptions.CopiedNames), got %d", cfg.NameWeight, len(demos), len(opt.CopiedNames))
	}
	return nil
}

// sftRows flattens each demonstration into its row (mdp.Flatten) and gives the row's tokens
// their loss weights: weights[i] (len(rows[i].Tokens)) is tokenWeights', scaled on the number
// tokens (NumberWeight, ContextNumberWeight) and on the copied names (NameWeight) when these
// are not 1.
func sftRows(demos []*mdp.Trajectory, cfg SFTConfig, opt SFTOptions) (rows []mdp.Row, weights [][]float64, err error) {
	rows = make([]mdp.Row, len(demos))
	weights = make([][]float64, len(demos)) // per row (T): the loss weight of each token
	for i, d := range demos {
		r, err := mdp.Flatten(d, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("sft: demonstration %d: %w", i, err)
		}
		rows[i] = r
		var aw []float64
		if opt.ActionWeights != nil {
			aw = opt.ActionWeights[i]
		}
		weights[i] = tokenWeights(d, aw, cfg.ContextWeight, len(r.Tokens))
		if cfg.weighsNumbers() {
			scaleNumberTokens(weights[i], d, opt.NumberTokens, cfg.NumberWeight, cfg.ContextNumberWeight)
		}
		if cfg.NameWeight != 1 {
			scaleMarked(weights[i], opt.CopiedNames[i], cfg.NameWeight)
		}
	}
	return rows, weights, nil
}

// resume loads the latest SFT checkpoint of opt.CheckpointDir into st when opt.Resume asks for
// one, telling opt.OnResume, and gives the caller back the state it saved with it
// (opt.RestoreState), or nil when there is no checkpoint and SFT starts over.
func (st *sftState) resume(opt SFTOptions) error {
	if !opt.Resume || opt.CheckpointDir == "" {
		return nil
	}
	path, err := latestSFTCheckpoint(opt.CheckpointDir)
	if err != nil {
		return err
	}
	if path == "" {
		if opt.RestoreState != nil {
			opt.RestoreState(nil)
		}
		return nil
	}
	if err := st.load(path); err != nil {
		if errors.Is(err, trainer.ErrDamagedCheckpoint) {
			return fmt.Errorf("%w; %s", err, damagedAdvice(path, "SFT"))
		}
		return err
	}
	if opt.OnResume != nil {
		opt.OnResume(path, st.step)
	}
	if opt.RestoreState != nil && st.run != nil {
		opt.RestoreState(st.run)
	}
	return nil
}

// sftRun is one call of SFTWithOptions: the state it checkpoints (st) and what stays fixed
// from step to step.
type sftRun struct {
	st        *sftState
	opt       SFTOptions
	ws        *model.Workspace
	rows      []mdp.Row        // one per demonstration
	weights   [][]float64      // per row (T): the loss weight of each token
	padID     int              // the token padding a batch's rows to its longest
	sched     trainer.Schedule // the demonstration steps' learning rate
	copySched trainer.Schedule // the copy steps', counted among the copy steps
	copyVocab []int            // the copy rows' tokens: read off every demonstration, so only when needed
	// copyKeys and copyDigits are the number rows' keys and digits, parted from copyVocab.
	copyKeys, copyDigits []int
}

// readCopyTokens reads the copy rows' tokens off the demonstrations' tool responses
// (copyVocab; with CopyNumbers, parted into keys and digits) when copy steps remain to take.
func (r *sftRun) readCopyTokens(demos []*mdp.Trajectory) error {
	cfg := r.st.cfg
	if r.st.step >= cfg.CopySteps && cfg.CopyEvery <= 0 {
		return nil // no copy step left to take
	}
	r.copyVocab = observationTokens(demos)
	if cfg.CopyNumbers {
		if r.copyKeys, r.copyDigits = splitNumbers(r.copyVocab, r.opt.NumberTokens); len(r.copyDigits) == 0 || len(r.copyKeys) == 0 {
			return fmt.Errorf("sft: CopyNumbers: the tool responses hold %d number and %d other tokens, want some of each", len(r.copyDigits), len(r.copyKeys))
		}
	}
	return nil
}

// train takes the steps from st.step to cfg.TotalSteps(), saving the state every
// opt.CheckpointEvery steps and, before it returns, when ctx is cancelled.
func (r *sftRun) train(ctx context.Context, onStep func(SFTMetrics)) error {
	st, total := r.st, r.st.cfg.TotalSteps()
	for st.step < total {
		if err := ctx.Err(); err != nil {
			return r.interrupted(err)
		}
		if err := r.step(onStep); err != nil {
			return err
		}
		if r.opt.CheckpointDir != "" && r.opt.CheckpointEvery > 0 && st.step%r.opt.CheckpointEvery == 0 && st.step < total {
			if _, err := r.save(); err != nil {
				return r.fail(fmt.Errorf("sft step %d: %w", st.step, err))
			}
		}
	}
	// The last step's weights are finite (sftStep checked them); so must be what they
	// compute, before the caller saves the result as the SFT base.
	if err := finiteForward(r.ws, st.policy, r.rows[0].Tokens); err != nil && st.step > 0 {
		return r.fail(fmt.Errorf("after sft step %d: %w", st.step, err))
	}
	return nil
}

// interrupted saves the state (when opt.CheckpointDir is set) and returns the interrupt, err,
// wrapped with the step it came after and where the state went.
func (r *sftRun) interrupted(err error) error {
	msg := fmt.Sprintf("interrupted after SFT step %d", r.st.step)
	if r.opt.CheckpointDir != "" {
		path, serr := r.save()
		if serr != nil {
			return fmt.Errorf("%s; saving the state failed: %w", msg, serr)
		}
		msg += "; state saved to " + path
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// step takes optimiser step st.step+1 of the warm start, a copy step or a demonstration step
// (stepKind), hands its metrics to onStep (if not nil) and counts it done.
func (r *sftRun) step(onStep func(SFTMetrics)) error {
	st := r.st
	step := st.step
	start := time.Now()
	copyStep, index := st.cfg.stepKind(step)
	batch, batchWeights, lr, err := r.batch(copyStep, index)
	if err != nil {
		return fmt.Errorf("sft step %d: %w", step+1, err)
	}
	m, err := sftStep(r.ws, st.policy, &st.opt, batch, batchWeights, r.padID, st.cfg.GradClip, lr)
	if err != nil {
		return r.fail(fmt.Errorf("sft step %d: %w", step+1, err))
	}
	r.watchLoss(&m, step, copyStep)
	if onStep != nil {
		m.Step = step + 1 // counted from 1, as RL steps are
		m.TimeTotal = trainer.Num(time.Since(start).Seconds())
		m.TokensPerSec = m.TokensPerSec / m.TimeTotal
		onStep(m)
	}
	if m.Diverging != "" && r.opt.StopOnDivergence {
		return r.fail(fmt.Errorf("sft step %d: diverging: %s; stopped (stop on divergence), this step's state not saved", step+1, m.Diverging))
	}
	st.step++
	return nil
}

// batch returns the rows of a step, their token weights (len(rows[i].Tokens) each) and its
// learning rate: a copy step's rows are drawn afresh (copyRows), a demonstration step's are the
// next batch of the pass under way (demoBatch). index is the step's among its kind (stepKind).
func (r *sftRun) batch(copyStep bool, index int) ([]mdp.Row, [][]float64, float64, error) {
	st := r.st
	if copyStep {
		rng := rand.New(rand.NewPCG(st.seed^copySalt, uint64(st.step)))
		batch, batchWeights := st.cfg.copyRows(index, r.copyVocab, r.copyKeys, r.copyDigits, rng)
		return batch, batchWeights, r.copySched.LR(index), nil // counted among the copy steps, wherever they fall
	}
	batch, batchWeights, err := st.demoBatch(r.rows, r.weights)
	if err != nil {
		return nil, nil, 0, err
	}
	return batch, batchWeights, r.sched.LR(index), nil
}

// watchLoss marks m, the metrics of step (from 0), as a copy step's, and has the loss's
// divergence watch observe the loss of the series it belongs to, setting m.Diverging.
func (r *sftRun) watchLoss(m *SFTMetrics, step int, copyStep bool) {
	st, cfg := r.st, r.st.cfg
	if step == cfg.CopySteps && step > 0 {
		// The demonstrations' loss is a new series: it starts far above the copy rows'.
		st.watch = trainer.SFTLossDivergence(st.policy.Config.VocabSize)
	}
	if copyStep {
		m.Phase = PhaseCopy
	}
	if !copyStep || step < cfg.CopySteps {
		// A copy step among the demonstrations' is not of their series.
		m.Diverging = st.watch.Observe(float64(m.Loss))
	}
}

// save checkpoints the state into opt.CheckpointDir with the caller's own (opt.SaveState),
// tells opt.OnCheckpoint and returns the path.
func (r *sftRun) save() (string, error) {
	st := r.st
	// Finite weights can still be so large that the logits overflow: one forward pass over
	// a demonstration proves the policy before it is checkpointed.
	if err := finiteForward(r.ws, st.policy, r.rows[0].Tokens); err != nil {
		return "", fmt.Errorf("sft checkpoint after step %d refused: %w", st.step, err)
	}
	if r.opt.SaveState != nil {
		st.run = r.opt.SaveState()
	}
	path, err := st.save(r.opt.CheckpointDir)
	if err == nil && r.opt.OnCheckpoint != nil {
		r.opt.OnCheckpoint(path)
	}
	return path, err
}

// fail adds the last checkpoint, the one a resume continues from, to a step's error.
func (r *sftRun) fail(err error) error {
	if last, _ := latestSFTCheckpoint(r.opt.CheckpointDir); r.opt.CheckpointDir != "" && last != "" {
		err = fmt.Errorf("%w; the last SFT checkpoint is %s", err, last)
	}
	return err
}

// demoBatch takes the next batch of demonstrations (rows, with their token weights) off the
// pass under way, starting a new seeded pass (sftBatches) when the last one is used up.
func (st *sftState) demoBatch(rows []mdp.Row, weights [][]float64) ([]mdp.Row, [][]float64, error) {
	if len(st.batches) == 0 {
		st.batches = sftBatches(rows, st.cfg.Batch, rand.New(rand.NewPCG(st.seed, uint64(st.step))))
	}
	batch := make([]mdp.Row, 0, len(st.batches[0]))
	batchWeights := make([][]float64, 0, len(st.batches[0]))
	for _, i := range st.batches[0] {
		if i < 0 || i >= len(rows) {
			return nil, nil, fmt.Errorf("demonstration index %d out of range [0, %d) (checkpoint of other demonstrations?)", i, len(rows))
		}
		batch = append(batch, rows[i])
		batchWeights = append(batchWeights, weights[i])
	}
	st.batches = st.batches[1:]
	return batch, batchWeights, nil
}

// sftStep runs one optimiser step of the weighted next-token loss on batch at learning rate
// lr, weights[i] (len(batch[i].Tokens)) giving each token's weight (tokenWeights). The
// returned metrics' TokensPerSec holds the token count (the caller divides by the time). The
// reported loss is always the agent tokens' own, unweighted.
func sftStep(ws *model.Workspace, policy *model.Model, opt *tensor.AdamW, batch []mdp.Row, weights [][]float64, padID int, gradClip, lr float64) (SFTMetrics, error) {
	b := mdp.Collate(batch, padID)
	all := make([]int, b.B)
	for i := range all {
		all[i] = i
	}
	v := trainer.NewView(b, all)
	logpT, entT := policy.Forward(ws, v.Tokens, v.Attn, v.B, v.T) // (B, T) each
	logp := v.ResponseColumns(logpT)                              // (B, L)
	mask := v.Gather(b.ActionMask)                                // (B, L)
	entropy := rl.MaskedMean(v.ResponseColumns(entT), mask)
	negLogp := rl.NewMatrix(v.B, v.L)
	for k := range logp.Data {
		negLogp.Data[k] = -logp.Data[k]
	}
	w := v.Gather(responseWeights(b, batch, weights)) // (B, L)
	_, grad, err := rl.AggLoss(negLogp, w, rl.TokenMean, rl.AggOptions{})
	if err != nil {
		return SFTMetrics{}, err
	}
	loss := rl.MaskedMean(negLogp, mask)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return SFTMetrics{}, fmt.Errorf("the loss is not finite (%v)", loss)
	}
	for k := range grad.Data {
		grad.Data[k] = -grad.Data[k] // dL/dlogp = −w
	}
	policy.ZeroGrad()
	policy.Backward(ws, v.TokenGrad(grad), nil)
	// A gradient that is not finite would poison the weights and the AdamW moments for good:
	// the step is refused before it is applied.
	if name := nonFiniteParam(policy.Params, func(p *model.Param) []float32 { return p.Grad }); name != "" {
		return SFTMetrics{}, fmt.Errorf("the gradient of %s is not finite (loss %v)", name, loss)
	}
	gn := tensor.ClipGradNorm(policy.ParamGrads(), gradClip)
	opt.LR = lr
	opt.Update(policy.WritableParams(), policy.ParamGrads())
	if name := nonFiniteParam(policy.Params, func(p *model.Param) []float32 { return p.Data }); name != "" {
		return SFTMetrics{}, fmt.Errorf("the update made weight %s non-finite (learning rate %g)", name, lr)
	}
	tokens := 0
	for i := 0; i < b.B; i++ {
		tokens += b.PromptLens[i] + b.ResponseLens[i]
	}
	return SFTMetrics{
		Phase: "sft", Loss: trainer.Num(loss), GradNorm: trainer.Num(gn), LR: trainer.Num(lr), Entropy: trainer.Num(entropy),
		AgentTokens: trainer.Num(rl.MaskedSum(mask, mask) / float64(b.B)), TokensPerSec: trainer.Num(tokens),
	}, nil
}

// finiteForward reports an error when policy's log-probs or entropies over tokens are not
// finite.
func finiteForward(ws *model.Workspace, policy *model.Model, tokens []int) error {
	attn := make([]float32, len(tokens))
	for i := range attn {
		attn[i] = 1
	}
	logp, ent := policy.Forward(ws, tokens, attn, 1, len(tokens)) // (1, T) each
	for k := 1; k < len(tokens); k++ {
		if x, h := float64(logp[k]), float64(ent[k]); math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(h) || math.IsInf(h, 0) {
			return fmt.Errorf("the policy's log-probs over a demonstration are not finite (log p %v, entropy %v at position %d)", x, h, k)
		}
	}
	return nil
}

// nonFiniteParam returns the name of the first parameter whose values (of) hold a NaN or an
// infinity, or "".
func nonFiniteParam(params []*model.Param, of func(*model.Param) []float32) string {
	for _, p := range params {
		for _, x := range of(p) {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return p.Name
			}
		}
	}
	return ""
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
