package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"agentr1/env/world"
	"agentr1/internal/atomicfile"
	"agentr1/model"
	"agentr1/rl/trainer"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

// Logger receives a run's records: kind "info" with a string, "warn" with a string (something
// went wrong but the run goes on), "setup" with the *Setup once it is prepared, "save" and
// "resume" with a *RunState around checkpoints, "sft" with an
// SFTMetrics, "batch" with each RL step's *StepBatch before its update (masks, rewards and
// advantages, for report samples; it must not be modified), "rl" with a StepMetrics, "eval"
// with an *EvalMetrics, "checkpoint" with the path written.
type Logger func(kind string, record any)

// RunState carries a Logger's own state through checkpoints, so that a resumed run can put its
// output files back as they were at the checkpoint (an uninterrupted run's, before the steps it
// redoes). Before each checkpoint is written the Logger receives kind "save" with a *RunState
// whose State it may set; a run resumed from that checkpoint logs kind "resume" with a
// *RunState holding the same State, before any record of the part it redoes. A "resume" with
// an empty State puts the files back as they were at the run's start, before any record.
type RunState struct {
	State json.RawMessage // the Logger's state, opaque here; empty for a run's start
}

// callerState asks log for its state to save with a checkpoint.
func callerState(log Logger) json.RawMessage {
	rs := &RunState{}
	log("save", rs)
	return rs.State
}

// rlRunState is the pipeline's part of an RL checkpoint (trainer.Trainer.RunState): what a
// resumed run cannot recompute.
type rlRunState struct {
	StartEval []*EvalMetrics  `json:"start_eval,omitempty"` // Result.SFTEval
	Caller    json.RawMessage `json:"caller,omitempty"`     // the Logger's RunState
}

// Result is what a run produced.
type Result struct {
	Setup   *Setup           // the run's worlds, tokenizer, problems and demonstrations
	Policy  *model.Model     // the trained policy
	Trainer *trainer.Trainer // the RL trainer in its final state (StepsDone, optimisers)
	SFTEval []*EvalMetrics   // figures of the starting policy (the SFT base) on each evaluation set (nil when not asked for; a resumed run's come from its checkpoint)
	Final   []*EvalMetrics   // figures after RL on each evaluation set
	// WarmStart holds the warnings about the starting policy logged before RL (a weak answer
	// turn after a calculation, a broken warm start), for a summary to repeat; none on a
	// resumed RL.
	WarmStart []string
	Duration  time.Duration // the run's wall time, setup included
}

// ReleaseTraining drops what only more training would use: the optimisers' moments, the
// policy's gradients, the reference policy and the critic; Trainer.StepsDone and the policy's
// weights stay. At a real checkpoint's size these are three times the weights (4 GB of AdamW
// moments and 2 GB of gradients at 0.5B parameters), and what follows a run (the baselines,
// which load the starting policy beside the trained one) then fits where they were: the
// memory is collected at once rather than when the heap next doubles.
func (r *Result) ReleaseTraining() {
	if t := r.Trainer; t != nil {
		t.Opt.M, t.Opt.V = nil, nil
		t.CritOpt.M, t.CritOpt.V = nil, nil
		t.Ref, t.Critic = nil, nil
	}
	for _, p := range r.Policy.Params {
		p.Grad = nil
	}
	runtime.GC()
}

// Run is the whole pipeline on the generated world: Prepare, a fresh policy, the SFT warm
// start, an evaluation of the SFT base, then RunFrom's RL phase. With resume set, an RL
// checkpoint in CheckpointDir continues RL (SFT is skipped); failing that, an SFT checkpoint
// there continues SFT where it stopped. log may be nil.
func Run(ctx context.Context, cfg Config, resume bool, log Logger) (*Result, error) {
	if log == nil {
		log = func(string, any) {}
	}
	start := time.Now()
	setup, err := Prepare(ctx, cfg) // no model pass: RunFrom sets the workers and shards
	if err != nil {
		return nil, err
	}
	log("info", setup.Describe())
	log("setup", setup)
	policy, err := NewPolicy(cfg.Model, setup.Tokenizer, 2*MaxRow(cfg, setup), cfg.Seed)
	if err != nil {
		return nil, err
	}
	res, err := RunFrom(ctx, cfg, Start{Setup: setup, Policy: policy, SFT: true, EvalStart: true, Resume: resume}, log)
	if err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// MaxRow is the longest row a run of cfg on setup meets: the rollout limit or the longest
// demonstration. A policy's rotary table needs some margin over it (NewPolicy's maxLen).
func MaxRow(cfg Config, setup *Setup) int {
	maxRow := cfg.RL.MaxLen
	for _, d := range setup.Demos {
		maxRow = max(maxRow, len(d.Prompt)+d.ResponseLen())
	}
	return maxRow
}

// Start says where RunFrom begins.
type Start struct {
	Setup  *Setup       // the run's worlds, tokenizer, problems and demonstrations
	Policy *model.Model // the initial policy; trained in place
	// SFT runs the warm start on Setup.Demos first (or loads Config.BasePolicy when it holds a
	// saved model); otherwise Policy is already the starting point (the SFT base shared by
	// several runs, or a pretrained model).
	SFT bool
	// EvalStart evaluates the starting policy on every evaluation set ("<StartPhase>/<set>",
	// Result.SFTEval).
	EvalStart bool
	// StartPhase names the starting policy's evaluations ("" means "sft").
	StartPhase string
	// Resume continues from the latest checkpoint in Config.CheckpointDir: RL from an RL
	// checkpoint (skipping SFT and EvalStart), else SFT from an SFT checkpoint.
	Resume bool
	// Folder, when set, is the checkpoint folder Policy was loaded from, unchanged (a
	// pretrained model, with SFT off): the frozen reference policy is read from it for
	// inference where that is exact (FrozenReference) instead of copied from Policy.
	Folder string
}

// RunFrom runs the RL phase from st: cfg.RL.Steps steps of st.Policy on st.Setup.Train
// (evaluating every EvalEvery steps and checkpointing every CheckpointEvery steps when
// CheckpointDir is set), then a final evaluation of every evaluation set. With an RL
// checkpoint to resume, RL continues from it with the checkpoint's settings, up to
// cfg.RL.Steps steps in all. When ctx is cancelled, the step under way finishes, its state is
// saved and the error wraps ctx.Err(). log may be nil.
func RunFrom(ctx context.Context, cfg Config, st Start, log Logger) (*Result, error) {
	if log == nil {
		log = func(string, any) {}
	}
	start := time.Now()
	defer SetParallelism(cfg)()
	var watch divergenceCount
	log = watch.logger(log)
	setup, policy := st.Setup, st.Policy
	log("info", fmt.Sprintf("policy: %d parameters, kernels %s, %d workers, %d shards", policy.NumParams(), tensor.KernelName(), tensor.Workers(), model.Shards()))
	res := &Result{Setup: setup, Policy: policy}
	evalCfg := EvalConfigFrom(cfg.RL, cfg.EvalBatch)
	evalCfg.Workers = cfg.Workers

	ckpt, err := rlResumePoint(cfg, st)
	if err != nil {
		return nil, err
	}
	if ckpt == "" {
		if res.SFTEval, res.WarmStart, err = startPolicy(ctx, cfg, st, evalCfg, log); err != nil {
			return nil, err
		}
	}
	if res.Trainer, err = newRunTrainer(cfg, st, log); err != nil {
		return nil, err
	}
	tr := res.Trainer
	if ckpt != "" {
		if res.SFTEval, err = resumeRL(tr, ckpt, cfg.RL.Steps, log); err != nil {
			return nil, err
		}
	}
	if err := rlLoop(ctx, cfg, tr, ckpt, res.SFTEval, setup, evalCfg, log); err != nil {
		return nil, err
	}
	if res.Final, err = EvaluateSets(ctx, policy, setup, evalCfg, "rl", tr.StepsDone, log); err != nil {
		return nil, err
	}
	if msg := watch.summary(); msg != "" {
		log("warn", msg)
	}
	res.Duration = time.Since(start)
	return res, nil
}

// rlResumePoint returns the RL checkpoint the run continues from: with st.Resume, the latest
// in cfg.CheckpointDir; "" when there is none or resuming is not asked for.
func rlResumePoint(cfg Config, st Start) (string, error) {
	if !st.Resume || cfg.CheckpointDir == "" {
		return "", nil
	}
	ckpt, err := trainer.LatestCheckpoint(cfg.CheckpointDir)
	if err != nil && !errors.Is(err, trainer.ErrNoCheckpoint) {
		return "", err
	}
	return ckpt, nil
}

// startPolicy readies the starting policy of a run with no RL checkpoint to resume: the SFT
// warm start when st.SFT (SFTBase), warning on the calculator task when its answer turn after
// a calculation is weak (WeakAnswerTurn), then, when st.EvalStart, its evaluation on every
// evaluation set, which it returns (Result.SFTEval) with the warnings it logged, broken warm
// start included (BrokenWarmStart).
func startPolicy(ctx context.Context, cfg Config, st Start, evalCfg EvalConfig, log Logger) (evals []*EvalMetrics, warnings []string, err error) {
	warn := func(msg string) {
		if msg != "" {
			log("warn", msg)
			warnings = append(warnings, msg)
		}
	}
	if st.Resume && !st.SFT {
		// Nothing saved to resume RL from, and no SFT here to say so: RL starts over, and the
		// output files go back to the run's start.
		log("resume", &RunState{})
	}
	if st.SFT {
		if err := SFTBase(ctx, cfg, st.Setup, st.Policy, st.Resume, log); err != nil {
			return nil, nil, err
		}
		if IsWorldData(cfg.Data) && cfg.OffersCalculator() {
			msg, err := WeakAnswerTurn(ctx, st.Policy, st.Setup, cfg.RL.MaxTurnTokens)
			if err != nil {
				return nil, nil, err
			}
			warn(msg)
		}
	}
	if !st.EvalStart {
		return nil, warnings, nil
	}
	phase := st.StartPhase
	if phase == "" {
		phase = "sft"
	}
	if evals, err = EvaluateSets(ctx, st.Policy, st.Setup, evalCfg, phase, 0, log); err != nil {
		return nil, nil, err
	}
	if IsWorldData(cfg.Data) {
		warn(BrokenWarmStart(evals))
	}
	return evals, warnings, nil
}

// brokenInventedShare is the share of invented name answers (AnswerSources) above which, on
// every evaluation set, a starting policy on the generated world counts as a broken warm
// start. Sound warm starts of the default invent at most 16% of them, broken ones 80% and
// more, the previous default's bases up to about half on the unseen world and a sixth on the
// held-out one (docs/RESULTS.md section 1).
const brokenInventedShare = 0.5

// BrokenWarmStart returns a warning when the starting policy's evaluations show a broken warm
// start: most of its name answers, on every set, written nowhere earlier in their episodes.
// Such a policy recites instead of reading, and RL gains little from it. "" otherwise.
func BrokenWarmStart(evals []*EvalMetrics) string {
	var sets []string
	for _, m := range evals {
		a := m.Answers
		if a == nil || a.Names == 0 || a.InventedShare() <= brokenInventedShare {
			return ""
		}
		sets = append(sets, fmt.Sprintf("%d of %d on %s", a.Invented, a.Names, m.Set()))
	}
	if len(sets) == 0 {
		return ""
	}
	return fmt.Sprintf("the starting policy invents most of its name answers (%s): it writes names it never read, "+
		"a broken warm start from which RL gains little (docs/RESULTS.md section 1); another seed draws another warm start",
		strings.Join(sets, ", "))
}

// newRunTrainer builds the RL trainer of st.Policy on st.Setup.Train, its frozen reference
// read from st.Folder where that is exact (FrozenReference), each step's batch logged.
func newRunTrainer(cfg Config, st Start, log Logger) (*trainer.Trainer, error) {
	if st.SFT && st.Folder != "" {
		return nil, fmt.Errorf("pipeline: Start.Folder %s with SFT: the policy after SFT is not the folder's", st.Folder)
	}
	ref, err := FrozenReference(cfg.RL, st.Folder)
	if err != nil {
		return nil, err
	}
	if ref != nil {
		log("info", fmt.Sprintf("reference policy: %s held for inference, its BF16 matrices packed (no float32 copy)", st.Folder))
	}
	setup := st.Setup
	tr, err := trainer.NewWithReference(cfg.RL, cfg.Seed, st.Policy, ref, setup.Tokenizer, setup.Specials, setup.Train)
	if err != nil {
		return nil, err
	}
	tr.Workers = cfg.Workers
	tr.OnBatch = func(b *trainer.StepBatch) { log("batch", b) }
	return tr, nil
}

// resumeRL loads the RL checkpoint ckpt into tr, to run up to steps steps in all, gives the
// Logger back the state it saved with it, and returns the starting policy's evaluations saved
// with it (Result.SFTEval).
func resumeRL(tr *trainer.Trainer, ckpt string, steps int, log Logger) ([]*EvalMetrics, error) {
	if err := tr.LoadCheckpoint(ckpt); err != nil {
		if errors.Is(err, trainer.ErrDamagedCheckpoint) {
			return nil, fmt.Errorf("%w; %s", err, damagedAdvice(ckpt, "RL"))
		}
		return nil, err
	}
	// The checkpoint's settings continue the run; only its length may be extended (which
	// also stretches the learning-rate decay).
	tr.Config.Steps = steps
	log("info", fmt.Sprintf("resumed from %s at step %d", ckpt, tr.StepsDone))
	if len(tr.RunState) == 0 {
		return nil, nil
	}
	var rs rlRunState
	if err := json.Unmarshal(tr.RunState, &rs); err != nil {
		return nil, fmt.Errorf("checkpoint %s: run state: %w", ckpt, err)
	}
	if rs.Caller != nil {
		log("resume", &RunState{State: rs.Caller})
	}
	return rs.StartEval, nil
}

// damagedAdvice says how a run whose latest checkpoint of phase ("RL" or "SFT"), path, is
// damaged goes on: from the checkpoint of that phase before it once path is moved aside, or
// with the phase started over when there is none. Nothing is removed for the user, who may
// want to keep the file to look into.
func damagedAdvice(path, phase string) string {
	aside := fmt.Sprintf("move the damaged file aside (mv %s %s.damaged) or remove it", path, path)
	prev, err := trainer.PreviousCheckpoint(path)
	if err != nil {
		return fmt.Sprintf("%s, and resume again: there is no earlier %s checkpoint, so %s starts over from step 1", aside, phase, phase)
	}
	return fmt.Sprintf("the run can continue from the checkpoint before it, %s: %s, and resume again", prev, aside)
}

// divergenceCount counts the steps of this process flagged as diverging (SFTMetrics and
// StepMetrics.Diverging), to warn of each and say so again at the end of the run.
type divergenceCount struct {
	sft, rl     int
	first, what string
}

// logger returns log with a warning after each record of a diverging step.
func (d *divergenceCount) logger(log Logger) Logger {
	return func(kind string, rec any) {
		log(kind, rec)
		var step int
		var why, phase string
		switch v := rec.(type) {
		case SFTMetrics:
			step, why, phase = v.Step, v.Diverging, "SFT"
			if why != "" {
				d.sft++
			}
		case trainer.StepMetrics:
			step, why, phase = v.Step, v.Diverging, "RL"
			if why != "" {
				d.rl++
			}
		}
		if why == "" {
			return
		}
		where := fmt.Sprintf("%s step %d", phase, step)
		if d.first == "" {
			d.first, d.what = where, why
		}
		log("warn", fmt.Sprintf("diverging at %s: %s", where, why))
	}
}

// summary is the end-of-run warning, or "" when no step diverged.
func (d *divergenceCount) summary() string {
	if d.sft+d.rl == 0 {
		return ""
	}
	return fmt.Sprintf("this run diverged: %d SFT and %d RL steps flagged, the first at %s (%s); its figures are suspect: lower the learning rate, or stop at the first with --stop-on-divergence",
		d.sft, d.rl, d.first, d.what)
}

// rlLoop takes tr from its StepsDone to its Config.Steps, evaluating and checkpointing as cfg
// says, and saves a final checkpoint. resumed is the checkpoint tr was loaded from ("" for
// none); startEval, the starting policy's evaluations, is saved with each checkpoint. A policy that diverges (trainer.ErrDiverged) stops the run without a checkpoint of
// it, naming the step and the last checkpoint written before it.
func rlLoop(ctx context.Context, cfg Config, tr *trainer.Trainer, resumed string, startEval []*EvalMetrics, setup *Setup, evalCfg EvalConfig, log Logger) error {
	r := &rlRun{cfg: cfg, tr: tr, startEval: startEval, setup: setup, evalCfg: evalCfg, log: log, saved: -1, lastGood: resumed}
	for tr.StepsDone < tr.Config.Steps {
		// An interrupt (ctx cancelled) is honoured between steps: the step under way finishes
		// (it is not cancellable, so its update is never half applied), its state is saved, and
		// the error wraps ctx.Err().
		if ctx.Err() != nil {
			return r.interrupted(ctx.Err())
		}
		m, err := tr.Step(context.WithoutCancel(ctx))
		if err != nil {
			return r.diverged(err)
		}
		log("rl", m)
		if err := r.checkStep(m); err != nil {
			return err
		}
		if err := r.evalAndCheckpoint(ctx); err != nil {
			return err
		}
	}
	if r.saved == tr.StepsDone {
		return nil
	}
	_, err := r.save()
	return r.diverged(err)
}

// rlRun is one call of rlLoop: the trainer, what it saves with each checkpoint, and which
// checkpoints it wrote.
type rlRun struct {
	cfg       Config
	tr        *trainer.Trainer
	startEval []*EvalMetrics // saved with each checkpoint
	setup     *Setup
	evalCfg   EvalConfig
	log       Logger
	saved     int    // the step whose checkpoint was written last (-1: none)
	lastGood  string // the latest checkpoint written or resumed from
}

// save writes the RL checkpoint of the trainer's state into cfg.CheckpointDir, with the run
// state (rlRunState), and returns its path; "" when there is no CheckpointDir.
func (r *rlRun) save() (string, error) {
	if r.cfg.CheckpointDir == "" {
		return "", nil
	}
	// A broken policy is never checkpointed: resuming it could only fail again.
	if err := r.tr.CheckPolicy(); err != nil {
		return "", fmt.Errorf("after RL step %d: %w", r.tr.StepsDone, err)
	}
	rs, err := json.Marshal(rlRunState{StartEval: r.startEval, Caller: callerState(r.log)})
	if err != nil {
		return "", fmt.Errorf("checkpoint run state: %w", err)
	}
	r.tr.RunState = rs
	path, err := r.tr.SaveCheckpoint(r.cfg.CheckpointDir)
	if err != nil {
		return "", err
	}
	r.saved, r.lastGood = r.tr.StepsDone, path
	r.log("checkpoint", path)
	return path, nil
}

// diverged turns a trainer.ErrDiverged into the run's closing message.
func (r *rlRun) diverged(err error) error {
	if !errors.Is(err, trainer.ErrDiverged) {
		return err
	}
	msg := "stopped: " + err.Error() + "; no checkpoint of the diverged policy was written"
	if r.lastGood != "" {
		msg += "; the last checkpoint is " + r.lastGood
	}
	return errors.New(msg + " (a lower learning rate may train where this one diverged)")
}

// interrupted saves the state and returns the interrupt, err, wrapped with the step it came
// after and where the state went.
func (r *rlRun) interrupted(err error) error {
	msg := fmt.Sprintf("interrupted after RL step %d", r.tr.StepsDone)
	path, serr := r.save()
	if serr != nil {
		return r.diverged(fmt.Errorf("%s; saving the state failed: %w", msg, serr))
	}
	if path != "" {
		msg += "; state saved to " + path
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// checkStep warns of the optimiser steps step m skipped, and returns the error that stops the
// run after it, or nil: m diverging with cfg.StopOnDivergence (its state not saved), or
// MaxNonFiniteSteps steps in a row with a non-finite loss or gradient (the state saved).
func (r *rlRun) checkStep(m trainer.StepMetrics) error {
	if m.Diverging != "" && r.cfg.StopOnDivergence {
		msg := fmt.Sprintf("RL step %d: diverging: %s; stopped (stop on divergence), this step's state not saved", m.Step, m.Diverging)
		if r.lastGood != "" {
			msg += "; the last checkpoint is " + r.lastGood
		}
		return errors.New(msg)
	}
	if m.SkippedUpdates > 0 {
		r.log("warn", fmt.Sprintf("step %d: %d optimiser step(s) skipped, not finite: %s", m.Step, m.SkippedUpdates, m.SkipReason))
	}
	if k := r.tr.Config.MaxNonFiniteSteps; k > 0 && r.tr.NonFiniteRun >= k {
		msg := fmt.Sprintf("stopped: %d steps in a row had a non-finite loss or gradient (last at step %d: %s)", r.tr.NonFiniteRun, m.Step, m.SkipReason)
		path, err := r.save()
		if err != nil {
			return r.diverged(fmt.Errorf("%s; saving the state failed: %w", msg, err))
		}
		if path != "" {
			msg += "; state saved to " + path
		}
		return errors.New(msg)
	}
	return nil
}

// evalAndCheckpoint evaluates every evaluation set every cfg.EvalEvery steps (but after the
// last step, which the run's final evaluation covers) and checkpoints every
// cfg.CheckpointEvery steps.
func (r *rlRun) evalAndCheckpoint(ctx context.Context) error {
	done := r.tr.StepsDone
	if r.cfg.EvalEvery > 0 && done%r.cfg.EvalEvery == 0 && done < r.tr.Config.Steps {
		if _, err := EvaluateSets(ctx, r.tr.Policy, r.setup, r.evalCfg, "rl", done, r.log); err != nil && ctx.Err() == nil {
			return err
		} // an interrupted evaluation is dropped; the loop's next check saves the state
	}
	if r.cfg.CheckpointEvery > 0 && done%r.cfg.CheckpointEvery == 0 {
		if _, err := r.save(); err != nil {
			return r.diverged(err)
		}
	}
	return nil
}

// SFTBase turns policy into the SFT base in place: it loads cfg.BasePolicy when that folder
// holds a saved model, else runs SFT on setup.Demos (checkpointing into cfg.CheckpointDir every
// cfg.SFTCheckpointEvery steps and when interrupted; with resume, continuing from the latest
// SFT checkpoint there) and saves the result, with the run's tokenizer, to cfg.BasePolicy when
// set. A saved base whose tokenizer.json differs from the run's tokenizer is an error: the
// run's settings (demonstrations, VocabSize) retrain the tokenizer, and a policy
// read through another tokenizer's ids answers nonsense without any other sign.
func SFTBase(ctx context.Context, cfg Config, setup *Setup, policy *model.Model, resume bool, log Logger) error {
	if cfg.BasePolicy != "" {
		if _, err := os.Stat(filepath.Join(cfg.BasePolicy, model.WeightsFile)); err == nil {
			m, err := loadPolicyOf(cfg.BasePolicy, setup.Tokenizer)
			if err != nil {
				return fmt.Errorf("base policy: %w", err)
			}
			if err := copyParams(policy, m, cfg.BasePolicy); err != nil {
				return err
			}
			log("info", "loaded the SFT base from "+cfg.BasePolicy)
			if resume && cfg.CheckpointDir != "" {
				// This run trained the base and stopped before its first RL checkpoint.
				path := filepath.Join(cfg.CheckpointDir, baseStateFile)
				state, err := os.ReadFile(path)
				switch {
				case err == nil && !json.Valid(state):
					// Refused before the run goes on: the Logger could only report it once
					// RL had run, its files not restored.
					return fmt.Errorf("%s: damaged (not JSON): the state of the output files when the SFT base was saved", path)
				case err == nil:
					log("resume", &RunState{State: state})
				case errors.Is(err, fs.ErrNotExist):
					// No state saved with the base: the run did not train it but loaded it at
					// its start (a base shared through BasePolicy), before logging any step, so
					// RL redone from step 1 starts the output files over.
					log("resume", &RunState{})
				default:
					return err
				}
			}
			return nil
		}
	}
	opt := SFTOptions{
		CheckpointDir: cfg.CheckpointDir, CheckpointEvery: cfg.SFTCheckpointEvery, Resume: resume,
		OnCheckpoint: func(path string) { log("checkpoint", path) },
		OnResume: func(path string, step int) {
			log("info", fmt.Sprintf("resumed SFT from %s at step %d", path, step))
		},
		ActionWeights:    actionWeights(setup, cfg.SFT),
		StopOnDivergence: cfg.StopOnDivergence,
		SaveState:        func() json.RawMessage { return callerState(log) },
		RestoreState:     func(state json.RawMessage) { log("resume", &RunState{State: state}) },
	}
	if cfg.SFT.needsNumberTokens() {
		opt.NumberTokens = NumberTokens(setup.Tokenizer) // a decode of every id: only when used
	}
	if cfg.SFT.NameWeight != 1 {
		opt.CopiedNames = CopiedNameTokens(setup.Demos, setup.Tokenizer)
	}
	err := SFTWithOptions(ctx, policy, setup.Demos, cfg.SFT, setup.Specials.Pad, cfg.Seed, opt, func(m SFTMetrics) { log("sft", m) })
	if err != nil {
		return err
	}
	if cfg.BasePolicy != "" {
		// The Logger's state once SFT is done, for a resume that finds the base saved and no
		// RL checkpoint yet; written before the base, whose weights file marks SFT as done.
		if state := callerState(log); cfg.CheckpointDir != "" && state != nil {
			if err := os.MkdirAll(cfg.CheckpointDir, 0o755); err != nil {
				return err
			}
			if err := atomicfile.WriteBytes(filepath.Join(cfg.CheckpointDir, baseStateFile), state); err != nil {
				return err
			}
		}
		dtype, err := SaveDtypeOf(cfg)
		if err != nil {
			return err
		}
		// The weights file, written last, marks the base as done.
		if err := SaveModelFolder(cfg.BasePolicy, policy, setup.Tokenizer, dtype, ""); err != nil {
			return err
		}
		// RL goes on from the base as saved, as a resumed run or another run sharing the base
		// does after loading it.
		policy.RoundWeights(dtype)
		log("info", fmt.Sprintf("saved the SFT base to %s (%s)", cfg.BasePolicy, dtype))
		if cfg.CheckpointDir != "" {
			if err := RemoveSFTCheckpoints(cfg.CheckpointDir); err != nil {
				log("warn", err.Error())
			}
		}
	}
	return nil
}

// loadPolicyOf loads the policy folder dir for a run whose tokenizer is tok. A folder whose
// vocabulary or tokenizer.json is not tok's is refused: the run's settings (demonstrations,
// VocabSize) retrain the tokenizer, and a policy read through another tokenizer's ids answers
// nonsense without any other sign.
func loadPolicyOf(dir string, tok *tokenizer.Tokenizer) (*model.Model, error) {
	m, err := model.Load(dir)
	if err != nil {
		return nil, err
	}
	if m.Config.VocabSize != tok.VocabSize() {
		return nil, fmt.Errorf("%s: vocabulary %d, the run's tokenizer has %d", dir, m.Config.VocabSize, tok.VocabSize())
	}
	tokPath := filepath.Join(dir, tokenizer.FileName)
	if _, err := os.Stat(tokPath); err == nil {
		saved, err := tokenizer.Load(tokPath)
		if err != nil {
			return nil, err
		}
		if err := sameTokenizer(saved, tok); err != nil {
			return nil, fmt.Errorf("%s: %w; the run's settings (demonstrations, VocabSize) train a different tokenizer than the policy's", tokPath, err)
		}
	}
	return m, nil
}

// baseStateFile, in the checkpoint folder, holds the Logger's RunState as SFT ended.
const baseStateFile = "sft-base.state.json"

// actionWeights returns the loss weight of each demonstration's turns (SFTOptions.ActionWeights):
// MistakeWeight on the mistakes, times CalcCallWeight on the calculating turns and
// CalcAnswerWeight on the answer turns after a calculation, times ChoiceAnswerWeight on the
// answer turns of the questions that choose between two names, 1 elsewhere.
func actionWeights(setup *Setup, cfg SFTConfig) [][]float64 {
	w := mistakeWeights(setup.DemoMistakes, cfg.MistakeWeight) // one per demonstration and turn, as Setup.DemoMistakes
	if cfg.CalcCallWeight != 1 || cfg.CalcAnswerWeight != 1 {
		scaleCalcTurns(w, setup.Tokenizer, setup.Demos, setup.DemoMistakes, cfg.CalcCallWeight, cfg.CalcAnswerWeight)
	}
	if cfg.ChoiceAnswerWeight != 1 {
		scaleChoiceAnswers(w, setup.DemoFinals, setup.DemoMistakes, cfg.ChoiceAnswerWeight)
	}
	return w
}

// scaleChoiceAnswers multiplies the action weight of the answer turn of each demonstration
// whose question chooses between two names (world.Final.Chooses) by weight, unless that
// answer is a mistake (a wrong name on purpose). The answer is the last turn: the scripted
// agent always leaves itself a turn to answer.
func scaleChoiceAnswers(weights [][]float64, finals []world.Final, mistakes [][]bool, weight float64) {
	for i, f := range finals {
		k := len(mistakes[i]) - 1
		if f.Chooses() && k >= 0 && !mistakes[i][k] {
			weights[i][k] *= weight
		}
	}
}

// mistakeWeights turns each demonstration's mistake marks into its turns' action weights:
// weight on a mistake, 1 elsewhere.
func mistakeWeights(mistakes [][]bool, weight float64) [][]float64 {
	out := make([][]float64, len(mistakes))
	for i, m := range mistakes {
		out[i] = make([]float64, len(m))
		for k, isMistake := range m {
			out[i][k] = 1
			if isMistake {
				out[i][k] = weight
			}
		}
	}
	return out
}

// sameTokenizer reports the first difference between two tokenizers' vocabularies, or nil.
func sameTokenizer(a, b *tokenizer.Tokenizer) error {
	if a.VocabSize() != b.VocabSize() {
		return fmt.Errorf("tokenizer with %d tokens, want %d", a.VocabSize(), b.VocabSize())
	}
	for id := range a.VocabSize() {
		x, _ := a.Token(id)
		y, _ := b.Token(id)
		if x != y {
			return fmt.Errorf("token %d is %q, want %q", id, x, y)
		}
	}
	return nil
}

// copyParams copies src's parameter values into dst, which must have the same parameters
// (names and shapes); from names src for errors.
func copyParams(dst, src *model.Model, from string) error {
	if len(dst.Params) != len(src.Params) {
		return fmt.Errorf("base policy %s: %d parameters, the run's policy has %d (different model settings?)", from, len(src.Params), len(dst.Params))
	}
	for i, p := range dst.Params {
		q := src.Params[i]
		if p.Name != q.Name || len(p.Data) != len(q.Data) {
			return fmt.Errorf("base policy %s: parameter %d is %s with %d values, the run's policy has %s with %d (different model settings?)", from, i, q.Name, len(q.Data), p.Name, len(p.Data))
		}
		copy(p.Data, q.Data)
	}
	dst.MarkWeightsChanged() // its decoders repack the new weights
	return nil
}

// EvaluateSets evaluates policy on every evaluation set of setup, naming each result
// "<phase>/<set>", and logs them.
func EvaluateSets(ctx context.Context, policy *model.Model, setup *Setup, ec EvalConfig, phase string, step int, log Logger) ([]*EvalMetrics, error) {
	var out []*EvalMetrics
	for _, set := range setup.EvalSets {
		m, _, err := Evaluate(ctx, policy, setup.Tokenizer, setup.Specials, set.Problems, ec, phase+"/"+set.Name)
		if err != nil {
			return nil, err
		}
		m.Step = step
		log("eval", m)
		out = append(out, m)
	}
	return out, nil
}
