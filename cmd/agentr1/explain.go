package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"agentr1/env/world"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

func init() {
	c := &command{
		name:    "explain",
		summary: "run one RL step on a tiny policy and print, token by token, its masks, rewards, advantages, ratios, clips and gradients",
		usage: "agentr1 explain [--algo grpo|ppo|...] [--n 4] [--seed 1] [--sft-steps 300] [--epochs 2] [--all-tokens]\n" +
			"  e.g. agentr1 explain                 (a GRPO step on 1 prompt x 4 trajectories, a few seconds)\n" +
			"       agentr1 explain --algo ppo      (the same with GAE: the critic's values and returns)\n" +
			"  It builds a tiny world and policy, warm-starts it with a short SFT, runs one step of the real\n" +
			"  trainer (rollout, masks, rewards, advantages, the clipped update) and prints what the step\n" +
			"  computed for every response token: one block per trajectory under its group's rewards.",
	}
	c.flags = explainFlags(new(explainArgs))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		var a explainArgs
		fs := newFlagSet(c, stderr)
		explainFlags(&a)(fs)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return runExplain(context.Background(), a, stdout)
	}
	register(c)
}

// explainArgs are explain's settings (explainFlags documents each).
type explainArgs struct {
	algo                    string
	seed                    uint64
	prompts, n, sftSteps    int
	epochs, miniBatches     int
	lr, clipLow, clipHigh   float64
	klCoef, entropyCoef     float64
	temperature, processRew float64
	maxTurns, maxTurnTokens int
	recomputeOld            bool
	noLossMask              bool
	noAdvantageMask         bool
	obsShown                int
	allTokens               bool
	workers                 int
}

func explainFlags(a *explainArgs) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.StringVar(&a.algo, "algo", "grpo", "RL algorithm: "+trainer.AlgorithmNames())
		fs.Uint64Var(&a.seed, "seed", 1, "seed of the world, the policy, the warm start and the step")
		fs.IntVar(&a.prompts, "prompts", 1, "prompts (groups) in the step")
		fs.IntVar(&a.n, "n", 4, "trajectories per prompt (the group size)")
		fs.IntVar(&a.sftSteps, "sft-steps", 300, "warm-start steps on the scripted agent's demonstrations, so that the policy calls tools")
		fs.IntVar(&a.epochs, "epochs", 2, "passes over the step's batch; from the second on the policy has moved, so ratios leave 1 and clip")
		fs.IntVar(&a.miniBatches, "mini-batches", 2, "optimiser steps per pass")
		fs.Float64Var(&a.lr, "lr", 3e-4, "the policy's learning rate")
		fs.Float64Var(&a.clipLow, "clip-low", 0.2, "the ratio is clipped below at 1 - clip-low")
		fs.Float64Var(&a.clipHigh, "clip-high", 0.28, "the ratio is clipped above at 1 + clip-high")
		fs.Float64Var(&a.klCoef, "kl-coef", 0, "β of the KL to the initial policy (in the loss for GRPO, in the reward for PPO)")
		fs.Float64Var(&a.entropyCoef, "entropy-coef", 0, "entropy bonus coefficient")
		fs.Float64Var(&a.processRew, "process-reward", 0.2, "process reward per search that finds a new supporting passage")
		fs.Float64Var(&a.temperature, "temperature", 0.6, "sampling temperature of the rollout")
		fs.IntVar(&a.maxTurns, "max-turns", 2, "agent turns per trajectory")
		fs.IntVar(&a.maxTurnTokens, "max-turn-tokens", 64, "tokens per agent turn")
		fs.BoolVar(&a.recomputeOld, "recompute-old", false, "recompute the old log-probs with a forward pass instead of taking the sampled ones")
		fs.BoolVar(&a.noLossMask, "no-loss-mask", false, "ablation: train on the tool tokens too")
		fs.BoolVar(&a.noAdvantageMask, "no-advantage-mask", false, "ablation: compute advantages over every response token")
		fs.IntVar(&a.obsShown, "obs-tokens", 3, "tool tokens shown at each end of an observation (the middle is summarised)")
		fs.BoolVar(&a.allTokens, "all-tokens", false, "show every tool token")
		fs.IntVar(&a.workers, "workers", 0, "goroutines for the kernels and the environment (0: GOMAXPROCS)")
	}
}

// explainConfig is a run small enough to warm-start and step in seconds: one small world, a
// one-layer hidden-32 policy, a few dozen demonstrations.
func explainConfig(a explainArgs) (pipeline.Config, error) {
	algo, err := trainer.ParseAlgorithm(a.algo)
	if err != nil {
		return pipeline.Config{}, fmt.Errorf("%w: --algo %q: want one of %s", errUsage, a.algo, trainer.AlgorithmNames())
	}
	cfg := pipeline.DefaultConfig()
	cfg.Seed, cfg.Workers = a.seed, a.workers
	cfg.TrainWorld = world.Config{Seed: a.seed, Split: world.Train, Countries: 3, Cities: 6, People: 12, Companies: 4, Bands: 4, Distractors: 6, Questions: 80}
	cfg.EvalWorld = world.Config{Seed: a.seed + 1, Split: world.Eval, Countries: 3, Cities: 6, People: 12, Companies: 4, Bands: 4, Distractors: 6, Questions: 4}
	cfg.Worlds, cfg.HeldOut, cfg.EvalQuestions = 1, 1, 1
	cfg.VocabSize = 512
	cfg.ProcessRew = a.processRew
	cfg.Model = pipeline.ModelConfig{Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 64, InitRange: 0.02}
	cfg.Demos = 48
	cfg.SFT.Steps, cfg.SFT.Batch, cfg.SFT.WarmupSteps = a.sftSteps, 4, 10
	rl := trainer.DefaultRLConfig(algo)
	rl.Steps, rl.Prompts, rl.N = 1, a.prompts, a.n
	rl.MaxTurns, rl.MaxTurnTokens, rl.MaxLen = a.maxTurns, a.maxTurnTokens, 400
	rl.Temperature = a.temperature
	rl.Epochs, rl.MiniBatches = a.epochs, a.miniBatches
	rl.LR, rl.WarmupSteps, rl.CriticWarmup = a.lr, 0, 0
	rl.ClipLow, rl.ClipHigh = a.clipLow, a.clipHigh
	rl.KLCoef, rl.EntropyCoef = a.klCoef, a.entropyCoef
	rl.NoLossMask, rl.NoAdvantageMask = a.noLossMask, a.noAdvantageMask
	if a.recomputeOld {
		rl.OldLogProbs = trainer.OldLogProbsRecompute
	}
	cfg.RL = rl
	if err := cfg.Validate(); err != nil {
		return pipeline.Config{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	return cfg, nil
}

// runExplain warm-starts the tiny policy, runs one traced RL step and prints it.
func runExplain(ctx context.Context, a explainArgs, stdout io.Writer) error {
	cfg, err := explainConfig(a)
	if err != nil {
		return err
	}
	if a.obsShown < 0 {
		return fmt.Errorf("%w: --obs-tokens must be at least 0, got %d", errUsage, a.obsShown)
	}
	if cfg.Workers > 0 {
		defer tensor.SetWorkers(tensor.SetWorkers(cfg.Workers))
	}
	setup, err := pipeline.Prepare(ctx, cfg)
	if err != nil {
		return err
	}
	policy, err := pipeline.NewPolicy(cfg.Model, setup.Tokenizer, 2*pipeline.MaxRow(cfg, setup), cfg.Seed)
	if err != nil {
		return err
	}
	if err := pipeline.SFT(ctx, policy, setup.Demos, cfg.SFT, setup.Specials.Pad, cfg.Seed, nil); err != nil {
		return err
	}
	tr, err := trainer.New(cfg.RL, cfg.Seed, policy, setup.Tokenizer, setup.Specials, setup.Train)
	if err != nil {
		return err
	}
	tr.Workers = cfg.Workers
	trace, err := tr.TraceStep(ctx)
	if err != nil {
		return err
	}
	x := explainer{w: stdout, trace: trace, tok: setup.Tokenizer, cfg: cfg.RL, args: a}
	x.header(policy.NumParams())
	for _, g := range trace.Groups() {
		x.group(g)
	}
	x.footer()
	return nil
}

// explainer prints a traced step.
type explainer struct {
	w     io.Writer
	trace *trainer.StepTrace
	tok   *tokenizer.Tokenizer
	cfg   trainer.RLConfig
	args  explainArgs
}

// critic reports whether the step has a critic (PPO), whose values and returns get columns.
func (x *explainer) critic() bool { return x.cfg.Algorithm.NeedsCritic() }

func (x *explainer) header(params int) {
	c := x.cfg
	fmt.Fprintf(x.w, "one %s step (seed %d): %d prompt(s) x %d trajectories, a %d-parameter policy after %d SFT steps\n",
		strings.ToUpper(string(c.Algorithm)), x.args.seed, c.Prompts, c.N, params, x.args.sftSteps)
	fmt.Fprintf(x.w, "update: %d epoch(s) x %d mini-batch(es), ratio clipped to [%.2f, %.2f], lr %g, %s loss; each row shows the last mini-batch that trained on it\n",
		c.Epochs, c.MiniBatches, 1-c.ClipLow, 1+c.ClipHigh, c.LR, c.AggMode)
	fmt.Fprintf(x.w, "advantage: %s\n", x.advantageFormula())
	fmt.Fprintln(x.w, "columns: role (agent: sampled by the policy; tool: the environment's observation), act (action mask: in the loss),")
	fmt.Fprintln(x.w, "  adv (advantage mask), reward (token-level), A (advantage)"+map[bool]string{true: ", V (the critic's value), R (return: the critic's target)", false: ""}[x.critic()]+",")
	fmt.Fprintln(x.w, "  old and new log-prob, ratio = e^(new - old), clip (clip: the clipped branch won; dual: the dual clip won; either")
	fmt.Fprintln(x.w, "  zeroes the token's gradient), dL/dlogp (the gradient handed to the model's backward pass); '-' where it does not apply")
}

// advantageFormula says in one line how the step's advantages were computed.
func (x *explainer) advantageFormula() string {
	c := x.cfg
	switch c.Algorithm {
	case trainer.GRPO:
		return fmt.Sprintf("GRPO, A = (r - mean) / (std + %g) of the trajectory's reward r within its group, on every agent token", c.AdvantageEps)
	case trainer.DrGRPO:
		return "Dr.GRPO, A = r - mean of the trajectory's reward r within its group, on every agent token"
	case trainer.PPO:
		return fmt.Sprintf("GAE (gamma %g, lambda %g) over the agent tokens, skipping the tool tokens: delta = r + gamma V(next) - V,\n"+
			"  A_raw = delta + gamma lambda A_raw(next), R = A_raw + V; A is A_raw whitened over the batch's agent tokens (verl)", c.Gamma, c.Lambda)
	case trainer.RLOO:
		return "RLOO, A = r - the mean reward of the group's other trajectories, on every agent token"
	}
	return string(c.Algorithm) + " (see rl/trainer/step.go, Trainer.advantages)"
}

// group prints one group's header and its trajectories.
func (x *explainer) group(g trainer.GroupSummary) {
	col := x.trace.Batch.Collated
	question := lastUserMessage(x.tok.Decode(col.Results[g.Rows[0]].Prompt))
	fmt.Fprintf(x.w, "\n== group %d, %d trajectories: %q\n   rewards", g.Group, len(g.Rows), question)
	for _, s := range g.Scores {
		fmt.Fprintf(x.w, " %.3f", s)
	}
	fmt.Fprintf(x.w, "   mean %.3f   std %.3f\n", g.Mean, g.Std)
	for k, r := range g.Rows {
		x.trajectory(k, len(g.Rows), r)
	}
}

// trajectory prints one row: a line on its outcome, then its response tokens.
func (x *explainer) trajectory(k, n, r int) {
	res := x.trace.Batch.Collated.Results[r]
	toks := x.trace.Tokens(r)
	outcome := res.OutcomeReward
	var cuts []string
	if res.Truncated() {
		cuts = append(cuts, res.Cuts...)
	}
	trained := "not trained on (no loss-masked token has a non-zero advantage)"
	if len(toks) > 0 && toks[0].Trained {
		trained = fmt.Sprintf("trained in epoch %d, mini-batch %d", toks[0].Epoch+1, toks[0].MiniBatch+1)
	}
	adv := ""
	if !x.critic() {
		for _, t := range toks {
			if t.AdvantageMask != 0 {
				adv = fmt.Sprintf(", advantage %.4f", t.Advantage)
				break
			}
		}
	}
	fmt.Fprintf(x.w, "\n-- trajectory %d/%d (batch row %d): reward %.3f = outcome %.3f + process %.3f%s, %d turn(s); %s\n",
		k+1, n, r, res.TotalReward(), outcome, res.TotalReward()-outcome, adv, len(res.Turns), trained)
	for _, c := range cuts {
		fmt.Fprintf(x.w, "   cut: %s\n", c)
	}
	fmt.Fprintf(x.w, "   %4s  %-5s  %-18s %3s %3s %8s %8s", "#", "role", "token", "act", "adv", "reward", "A")
	if x.critic() {
		fmt.Fprintf(x.w, " %8s %8s", "V", "R")
	}
	fmt.Fprintf(x.w, " %9s %9s %8s %4s %10s\n", "old logp", "new logp", "ratio", "clip", "dL/dlogp")
	for j := 0; j < len(toks); {
		if toks[j].Agent || x.args.allTokens {
			x.token(j, toks[j])
			j++
			continue
		}
		end := j // the observation run is toks[j:end]
		for end < len(toks) && !toks[end].Agent {
			end++
		}
		show := x.args.obsShown
		if end-j <= 2*show+1 {
			show = end - j
		}
		for i := j; i < j+show; i++ {
			x.token(i, toks[i])
		}
		if hidden := end - j - 2*show; hidden > 0 {
			fmt.Fprintf(x.w, "   %4s  %-5s  ... %d more tool tokens (act %g, adv %g) ...\n", "", "tool", hidden, toks[j].ActionMask, toks[j].AdvantageMask)
			for i := end - show; i < end; i++ {
				x.token(i, toks[i])
			}
		}
		j = end
	}
}

// token prints one response token's row.
func (x *explainer) token(j int, t trainer.TokenTrace) {
	role := "tool"
	if t.Agent {
		role = "agent"
	}
	text := strconv.Quote(x.tok.Decode([]int{t.Token}))
	if len(text) > 18 {
		text = text[:17] + "…"
	}
	num := func(on bool, format string, v float64) string {
		if !on {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	inAdv, inLoss := t.AdvantageMask != 0, t.ActionMask != 0
	fmt.Fprintf(x.w, "   %4d  %-5s  %-18s %3g %3g %8s %8s", j, role, text, t.ActionMask, t.AdvantageMask,
		num(true, "%.4f", t.Reward), num(inAdv, "%.4f", t.Advantage))
	if x.critic() {
		fmt.Fprintf(x.w, " %8s %8s", num(inAdv, "%.4f", t.Value), num(inAdv, "%.4f", t.Return))
	}
	trained := inLoss && t.Trained
	clip := "-"
	switch {
	case !trained:
	case t.ClippedLower:
		clip = "dual"
	case t.Clipped:
		clip = "clip"
	}
	fmt.Fprintf(x.w, " %9s %9s %8s %4s %10s\n", num(inLoss, "%.4f", t.OldLogProb), num(trained, "%.4f", t.NewLogProb),
		num(trained, "%.4f", t.Ratio), clip, num(trained, "%.3e", t.GradLogProb))
}

// footer prints the step's metrics.
func (x *explainer) footer() {
	m := x.trace.Metrics
	fmt.Fprintf(x.w, "\nstep: loss %.4f (policy %.4f), clip fraction %.3f, approx KL %.2e, grad norm %.3f, lr %g",
		float64(m.Loss), float64(m.PGLoss), float64(m.ClipFrac), float64(m.ApproxKL), float64(m.GradNorm), float64(m.LR))
	if x.critic() {
		fmt.Fprintf(x.w, ", value loss %.4f", float64(m.ValueLoss))
	}
	if d := float64(m.LogpDiffMax); !math.IsNaN(d) {
		fmt.Fprintf(x.w, ", max |recomputed - sampled log-prob| %.1e", d)
	}
	fmt.Fprintln(x.w)
}
