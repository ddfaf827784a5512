package trainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"agentr1/model"
	"agentr1/tensor"
)

// Logger receives a run's records: kind "info" with a string, "setup" with the *Setup once it
// is prepared, "sft" with an SFTMetrics, "batch" with each RL step's *StepBatch before its update
// (masks, rewards and advantages, for report samples; it must not be modified), "rl" with a
// StepMetrics, "eval" with an *EvalMetrics, "checkpoint" with the path written.
type Logger func(kind string, record any)

// Result is what a run produced.
type Result struct {
	Setup    *Setup
	Policy   *model.Model
	Trainer  *Trainer
	SFTEval  []*EvalMetrics // figures of the SFT base on each evaluation set (nil when resumed)
	Final    []*EvalMetrics // figures after RL on each evaluation set
	Duration time.Duration
}

// Run is the whole pipeline: Prepare, a fresh policy, the SFT warm start, an evaluation of the
// SFT base, cfg.RL.Steps RL steps (evaluating every EvalEvery steps and checkpointing every
// CheckpointEvery steps when CheckpointDir is set) and a final evaluation. With resume set
// and a checkpoint in CheckpointDir, SFT is skipped and RL continues from the checkpoint with
// the checkpoint's settings, up to cfg.RL.Steps steps in all.
// log may be nil.
func Run(ctx context.Context, cfg Config, resume bool, log Logger) (*Result, error) {
	if log == nil {
		log = func(string, any) {}
	}
	start := time.Now()
	if cfg.Workers > 0 {
		defer tensor.SetWorkers(tensor.SetWorkers(cfg.Workers))
	}
	setup, err := Prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	log("info", setup.Describe())
	log("setup", setup)
	maxRow := cfg.RL.MaxLen
	for _, d := range setup.Demos {
		maxRow = max(maxRow, len(d.Prompt)+d.ResponseLen())
	}
	policy, err := NewPolicy(cfg.Model, setup.Tokenizer, 2*maxRow, cfg.Seed)
	if err != nil {
		return nil, err
	}
	log("info", fmt.Sprintf("policy: %d parameters, kernels %s, %d workers", policy.NumParams(), tensor.KernelName(), tensor.Workers()))
	res := &Result{Setup: setup, Policy: policy}
	evalCfg := EvalConfigFrom(cfg.RL, cfg.EvalBatch)
	evalCfg.Workers = cfg.Workers

	ckpt := ""
	if resume && cfg.CheckpointDir != "" {
		ckpt, err = LatestCheckpoint(cfg.CheckpointDir)
		if err != nil && !errors.Is(err, ErrNoCheckpoint) {
			return nil, err
		}
	}
	if ckpt == "" {
		if policy, err = basePolicy(ctx, cfg, setup, policy, log); err != nil {
			return nil, err
		}
		res.Policy = policy
		if res.SFTEval, err = evaluateSets(ctx, policy, setup, evalCfg, "sft", 0, log); err != nil {
			return nil, err
		}
	}
	tr, err := New(cfg.RL, cfg.Seed, policy, setup.Tokenizer, setup.Specials, setup.Train)
	if err != nil {
		return nil, err
	}
	tr.Workers = cfg.Workers
	tr.OnBatch = func(b *StepBatch) { log("batch", b) }
	res.Trainer = tr
	if ckpt != "" {
		if err := tr.LoadCheckpoint(ckpt); err != nil {
			return nil, err
		}
		// The checkpoint's settings continue the run; only its length may be extended (which
		// also stretches the learning-rate decay).
		tr.Config.Steps = cfg.RL.Steps
		log("info", fmt.Sprintf("resumed from %s at step %d", ckpt, tr.StepsDone))
	}
	for tr.StepsDone < tr.Config.Steps {
		// An interrupt (ctx cancelled) is honoured between steps: the step under way finishes
		// (it is not cancellable, so its update is never half applied), its state is saved, and
		// Run returns an error wrapping ctx.Err().
		if ctx.Err() != nil {
			msg := fmt.Sprintf("interrupted after RL step %d", tr.StepsDone)
			if cfg.CheckpointDir != "" {
				path, err := tr.SaveCheckpoint(cfg.CheckpointDir)
				if err != nil {
					return nil, fmt.Errorf("%s; saving the state failed: %w", msg, err)
				}
				log("checkpoint", path)
				msg += "; state saved to " + path
			}
			return nil, fmt.Errorf("%s: %w", msg, ctx.Err())
		}
		m, err := tr.Step(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		log("rl", m)
		if m.SkippedUpdates > 0 {
			log("info", fmt.Sprintf("step %d: %d optimiser step(s) skipped, not finite: %s", m.Step, m.SkippedUpdates, m.SkipReason))
		}
		if k := tr.Config.MaxNonFiniteSteps; k > 0 && tr.NonFiniteRun >= k {
			msg := fmt.Sprintf("stopped: %d steps in a row had a non-finite loss or gradient (last at step %d: %s)", tr.NonFiniteRun, m.Step, m.SkipReason)
			if cfg.CheckpointDir != "" {
				path, err := tr.SaveCheckpoint(cfg.CheckpointDir)
				if err != nil {
					return nil, fmt.Errorf("%s; saving the state failed: %w", msg, err)
				}
				msg += "; state saved to " + path
			}
			return nil, errors.New(msg)
		}
		done := tr.StepsDone
		if cfg.EvalEvery > 0 && done%cfg.EvalEvery == 0 && done < tr.Config.Steps {
			if _, err := evaluateSets(ctx, policy, setup, evalCfg, "rl", done, log); err != nil && ctx.Err() == nil {
				return nil, err
			} // an interrupted evaluation is dropped; the loop's next check saves the state
		}
		if cfg.CheckpointDir != "" && cfg.CheckpointEvery > 0 && done%cfg.CheckpointEvery == 0 {
			path, err := tr.SaveCheckpoint(cfg.CheckpointDir)
			if err != nil {
				return nil, err
			}
			log("checkpoint", path)
		}
	}
	if cfg.CheckpointDir != "" {
		path, err := tr.SaveCheckpoint(cfg.CheckpointDir)
		if err != nil {
			return nil, err
		}
		log("checkpoint", path)
	}
	if res.Final, err = evaluateSets(ctx, policy, setup, evalCfg, "rl", tr.StepsDone, log); err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// basePolicy returns the SFT base: loaded from cfg.BasePolicy when it holds a model, else
// fresh trained by SFT (and saved to cfg.BasePolicy when set).
func basePolicy(ctx context.Context, cfg Config, setup *Setup, fresh *model.Model, log Logger) (*model.Model, error) {
	if cfg.BasePolicy != "" {
		if _, err := os.Stat(filepath.Join(cfg.BasePolicy, model.WeightsFile)); err == nil {
			m, err := model.Load(cfg.BasePolicy)
			if err != nil {
				return nil, err
			}
			if m.Config.VocabSize != setup.Tokenizer.VocabSize() {
				return nil, fmt.Errorf("base policy %s: vocabulary %d, tokenizer has %d", cfg.BasePolicy, m.Config.VocabSize, setup.Tokenizer.VocabSize())
			}
			log("info", "loaded the SFT base from "+cfg.BasePolicy)
			return m, nil
		}
	}
	err := SFT(ctx, fresh, setup.Demos, cfg.SFT, setup.Specials.Pad, cfg.Seed, func(m SFTMetrics) { log("sft", m) })
	if err != nil {
		return nil, err
	}
	if cfg.BasePolicy != "" {
		if err := fresh.Save(cfg.BasePolicy); err != nil {
			return nil, err
		}
		log("info", "saved the SFT base to "+cfg.BasePolicy)
	}
	return fresh, nil
}

// evaluateSets evaluates policy on every evaluation set of setup, naming each result
// "<phase>/<set>", and logs them.
func evaluateSets(ctx context.Context, policy *model.Model, setup *Setup, ec EvalConfig, phase string, step int, log Logger) ([]*EvalMetrics, error) {
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
