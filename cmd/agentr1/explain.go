package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"agentr1/env/qa"
	"agentr1/env/world"
	"agentr1/model"
	"agentr1/rl/pipeline"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
	"agentr1/tokenizer"
)

func init() {
	c := &command{
		name:    "explain",
		summary: "run one RL step on a tiny policy and print, token by token, its masks, rewards, advantages, ratios, clips and gradients",
		usage: "agentr1 explain [--algo grpo|ppo|...] [--n 4] [--seed 1] [--demos 12] [--sft-steps 300] [--question 0] [--epochs 2] [--all-tokens]\n" +
			"  e.g. agentr1 explain                 (a GRPO step on 1 question x 4 trajectories, a few seconds)\n" +
			"       agentr1 explain --algo ppo      (the same with GAE: the critic's values and returns)\n" +
			"  It builds a tiny world and policy, warm-starts it by SFT on a dozen demonstrations of a scripted\n" +
			"  agent until it can replay them, runs one step of the real trainer (rollout, masks, rewards,\n" +
			"  advantages, the clipped update) on a demonstrated question and prints what the step computed\n" +
			"  for every response token: one block per trajectory under its group's rewards. The question is\n" +
			"  the first whose step rewards a search: a trajectory searches and answers right, another scores\n" +
			"  less (--question picks one instead).",
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
	prompts, n              int
	demos, sftSteps         int
	sftLR                   float64
	question                int
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
		fs.IntVar(&a.prompts, "prompts", 1, "prompts (groups) in the step: that many consecutive demonstrated questions")
		fs.IntVar(&a.n, "n", 4, "trajectories per prompt (the group size)")
		fs.IntVar(&a.demos, "demos", 12, "questions the scripted agent demonstrates for the warm start; the step's questions are among them")
		fs.IntVar(&a.sftSteps, "sft-steps", 300, "warm-start steps (4 demonstrations each) on the scripted agent's demonstrations, so that the policy replays them: searches and answers")
		fs.Float64Var(&a.sftLR, "sft-lr", 1e-2, "the warm start's peak learning rate")
		fs.IntVar(&a.question, "question", 0, "step on the demonstrated question of this number (from 1); 0: the first whose step rewards a search (a trajectory searches and answers right, another of its group scores less)")
		fs.IntVar(&a.epochs, "epochs", 2, "passes over the step's batch; from the second on the policy has moved, so ratios leave 1 and clip")
		fs.IntVar(&a.miniBatches, "mini-batches", 2, "optimiser steps per pass")
		fs.Float64Var(&a.lr, "lr", 3e-4, "the policy's learning rate")
		fs.Float64Var(&a.clipLow, "clip-low", 0.2, "the ratio is clipped below at 1 - clip-low")
		fs.Float64Var(&a.clipHigh, "clip-high", 0.28, "the ratio is clipped above at 1 + clip-high")
		fs.Float64Var(&a.klCoef, "kl-coef", 0, "β of the KL to the initial policy (in the loss for GRPO, in the reward for PPO)")
		fs.Float64Var(&a.entropyCoef, "entropy-coef", 0, "entropy bonus coefficient")
		fs.Float64Var(&a.processRew, "process-reward", 0.2, "process reward per search that finds a new supporting passage")
		fs.Float64Var(&a.temperature, "temperature", 0.6, "sampling temperature of the rollout")
		fs.IntVar(&a.maxTurns, "max-turns", 3, "agent turns per trajectory (3: two searches and the answer, what a two-hop question takes)")
		fs.IntVar(&a.maxTurnTokens, "max-turn-tokens", 64, "tokens per agent turn")
		fs.BoolVar(&a.recomputeOld, "recompute-old", false, "recompute the old log-probs with a forward pass instead of taking the sampled ones")
		fs.BoolVar(&a.noLossMask, "no-loss-mask", false, "ablation: train on the tool tokens too")
		fs.BoolVar(&a.noAdvantageMask, "no-advantage-mask", false, "ablation: compute advantages over every response token")
		fs.IntVar(&a.obsShown, "obs-tokens", 3, "tool tokens shown at each end of an observation (the middle is summarised)")
		fs.BoolVar(&a.allTokens, "all-tokens", false, "show every tool token")
		fs.IntVar(&a.workers, "workers", 0, "goroutines for the kernels and the environment (0: GOMAXPROCS)")
	}
}

// explainWorldQuestions is how many questions the tiny training world draws: the demonstrated
// ones (--demos) are its first, and its last is held out (HeldOut 1), so this bounds --demos.
const explainWorldQuestions = 80

// explainConfig is a run small enough to warm-start and step in seconds: one small world, a
// one-layer hidden-32 policy, a dozen demonstrations.
//
// It departs from the default run where a policy of 25k parameters warm-started for seconds
// would otherwise show a step with nothing to learn from. The default run's policy,
// warm-started for minutes on thousands of demonstrations, reads the search results; this one
// cannot, and answers right only what it has memorised. So the scripted agent it imitates
// makes no mistakes and always searches to the end (noise and impatience 0, where the default
// run's agent makes mistakes so that RL has something to fix); the policy sees each of the few
// demonstrations about 100 times (sft-steps x 4 / demos) at a high learning rate (1e-2, five
// times the default run's, which a policy this small takes without diverging); and the step's
// questions are demonstrated ones (RLOnDemoQuestions, where the default run trains on
// questions SFT never showed). Sampled at temperature 0.6 the policy replays a demonstration
// often but not always, which is what makes a group's rewards differ. Three turns let it
// search twice and answer, what the world's two-hop questions take (with two it could answer
// only by guessing). The default run's copy rows and start states are off: a policy this
// small memorises its few demonstrations without them, and the step shown begins at a
// question's start.
func explainConfig(a explainArgs) (pipeline.Config, error) {
	algo, err := trainer.ParseAlgorithm(a.algo)
	if err != nil {
		return pipeline.Config{}, fmt.Errorf("%w: --algo %q: want one of %s", errUsage, a.algo, trainer.AlgorithmNames())
	}
	cfg := pipeline.DefaultConfig()
	cfg.Seed, cfg.Workers = a.seed, a.workers
	cfg.TrainWorld = world.Config{Seed: a.seed, Split: world.Train, Countries: 3, Cities: 6, People: 12, Companies: 4, Bands: 4, Distractors: 6, Questions: explainWorldQuestions}
	cfg.EvalWorld = world.Config{Seed: a.seed + 1, Split: world.Eval, Countries: 3, Cities: 6, People: 12, Companies: 4, Bands: 4, Distractors: 6, Questions: 4}
	cfg.Worlds, cfg.HeldOut, cfg.EvalQuestions = 1, 1, 1
	cfg.VocabSize = 512
	cfg.ProcessRew = a.processRew
	cfg.Model = pipeline.ModelConfig{Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 64, InitRange: 0.02}
	cfg.Demos, cfg.DemoNoise, cfg.DemoImpatience = a.demos, 0, 0
	cfg.RLOnDemoQuestions, cfg.StartStates = true, 0
	cfg.SFT.CopySteps, cfg.SFT.CopyEvery = 0, 0
	cfg.SFT.Steps, cfg.SFT.Batch, cfg.SFT.WarmupSteps, cfg.SFT.LR = a.sftSteps, 4, 10, a.sftLR
	rl := trainer.DefaultRLConfig(algo)
	rl.Steps, rl.Prompts, rl.N = 1, a.prompts, a.n
	// MaxLen stays the default run's 800: a three-turn episode runs to ~500 tokens.
	rl.MaxTurns, rl.MaxTurnTokens = a.maxTurns, a.maxTurnTokens
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
	// The step's questions are demonstrated ones: --prompts of them from --question on.
	switch {
	case a.demos < 1 || a.demos > explainWorldQuestions-1:
		return pipeline.Config{}, fmt.Errorf("%w: --demos must be in [1, %d], got %d", errUsage, explainWorldQuestions-1, a.demos)
	case a.prompts > a.demos:
		return pipeline.Config{}, fmt.Errorf("%w: --prompts %d: the step's questions are demonstrated ones, and --demos is %d", errUsage, a.prompts, a.demos)
	case a.question < 0 || a.question+a.prompts-1 > a.demos:
		return pipeline.Config{}, fmt.Errorf("%w: --question %d: want 0 or a demonstrated question's number, from 1 to %d (--demos %d, --prompts %d)",
			errUsage, a.question, a.demos-a.prompts+1, a.demos, a.prompts)
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
	defer pipeline.SetParallelism(cfg)()
	setup, err := pipeline.Prepare(ctx, cfg)
	if err != nil {
		return err
	}
	demonstrated, err := demonstratedProblems(setup)
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
	pick, err := pickExplainStep(ctx, cfg, setup, policy, demonstrated, a.question)
	if err != nil {
		return err
	}
	x := explainer{w: stdout, trace: pick.trace, tok: setup.Tokenizer, cfg: cfg.RL, args: a, problems: pick.problems}
	x.header(policy.NumParams(), pick)
	for _, g := range pick.trace.Groups() {
		x.group(g)
	}
	x.footer()
	return nil
}

// demonstratedProblems returns the RL problems of the questions the warm start demonstrated,
// in order: with RLOnDemoQuestions and one world, Prepare puts them first in Setup.Train. It
// checks that their prompts are the demonstrations', so that a change of that order cannot
// silently make explain step on questions the tiny policy never saw.
func demonstratedProblems(setup *pipeline.Setup) ([]trainer.Problem, error) {
	n := len(setup.Demos)
	if len(setup.Train) < n {
		return nil, fmt.Errorf("explain: %d RL problems, fewer than the %d demonstrations", len(setup.Train), n)
	}
	for i, d := range setup.Demos {
		if !slices.Equal(d.Prompt, setup.Train[i].Prompt) {
			return nil, fmt.Errorf("explain: RL problem %d is not demonstration %d's question: Prepare no longer puts the demonstrated questions first", i+1, i+1)
		}
	}
	return setup.Train[:n], nil
}

// explainPick is the step explain prints and how it was chosen.
type explainPick struct {
	trace    *trainer.StepTrace
	problems []trainer.Problem // the step's questions
	first    int               // the number (from 1) of the step's first demonstrated question
	tried    int               // candidate steps run (1 when --question fixed it)
	rewarded bool              // the step rewards a search (rewardsSearch)
}

// pickExplainStep runs the step on the demonstrated questions question, question+1, ... (as
// many as the step's prompts), or, when question is 0, on the first such run of consecutive
// demonstrated questions, in order, whose step rewards a search (rewardsSearch). Each
// candidate steps a copy of the same warm-started policy with a trainer of the same seed, so
// the step printed is exactly the one --question would give. The search is there because a
// tiny policy's group is often all failures or all successes, and then its advantages are 0:
// a step that teaches nothing. When no candidate rewards a search, the first one is shown.
func pickExplainStep(ctx context.Context, cfg pipeline.Config, setup *pipeline.Setup, policy *model.Model, demonstrated []trainer.Problem, question int) (explainPick, error) {
	width := cfg.RL.Prompts
	from, to := 0, len(demonstrated)-width // candidate first questions, from 0
	if question > 0 {
		from, to = question-1, question-1
	}
	var fallback *explainPick
	for k := from; k <= to; k++ {
		probs := demonstrated[k : k+width]
		tr, err := trainer.New(cfg.RL, cfg.Seed, policy.Clone(), setup.Tokenizer, setup.Specials, probs)
		if err != nil {
			return explainPick{}, err
		}
		tr.Workers = cfg.Workers
		trace, err := tr.TraceStep(ctx)
		if err != nil {
			return explainPick{}, err
		}
		p := explainPick{trace: trace, problems: probs, first: k + 1, tried: k - from + 1, rewarded: rewardsSearch(trace, cfg.ProcessRew)}
		if p.rewarded || question > 0 {
			return p, nil
		}
		if fallback == nil {
			fallback = &p
		}
	}
	fallback.tried = to - from + 1
	return *fallback, nil
}

// rewardsSearch reports whether a step shows what explain is for: a trajectory that searches
// and is rewarded for it, next to one that scores less, so that the advantages take both
// signs and the gradient pushes toward searching and answering right. The rewarded trajectory
// calls a tool, answers right in a well-formed episode (outcome reward 1: Eq. 6's exact match)
// and, with process rewards on, was paid one for a search; the one scoring less is in its
// group, or anywhere in the batch when groups have one trajectory (--n 1).
func rewardsSearch(trace *trainer.StepTrace, processRew float64) bool {
	results := trace.Batch.Collated.Results
	groups := trace.Groups()
	var all []float64
	for _, g := range groups {
		all = append(all, g.Scores...)
	}
	for _, g := range groups {
		others := g.Scores
		if len(g.Rows) == 1 {
			others = all
		}
		for i, r := range g.Rows {
			if !searchedAndAnswered(results[r], processRew) {
				continue
			}
			for _, s := range others {
				if s < g.Scores[i] {
					return true
				}
			}
		}
	}
	return false
}

// searchedAndAnswered reports whether a trajectory called a tool and answered right in a
// well-formed episode, and, when process rewards are on (processRew not 0), was paid one.
func searchedAndAnswered(res *rollout.Result, processRew float64) bool {
	calls := 0
	for _, t := range res.Turns {
		calls += len(t.ToolCalls)
	}
	process := res.TotalReward() - res.OutcomeReward // as the trajectory's line prints it
	return calls > 0 && res.OutcomeReward == 1 && (processRew == 0 || process != 0)
}

// explainer prints a traced step.
type explainer struct {
	w        io.Writer
	trace    *trainer.StepTrace
	tok      *tokenizer.Tokenizer
	cfg      trainer.RLConfig
	args     explainArgs
	problems []trainer.Problem // the step's questions, for their gold answers
}

// critic reports whether the step has a critic (PPO), whose values and returns get columns.
func (x *explainer) critic() bool { return x.cfg.Algorithm.NeedsCritic() }

// header prints the step's settings, how its questions were chosen and the columns' legend.
func (x *explainer) header(params int, pick explainPick) {
	c := x.cfg
	fmt.Fprintf(x.w, "one %s step (seed %d): %d prompt(s) x %d trajectories, a %d-parameter policy after %d SFT steps on %d demonstrations\n",
		strings.ToUpper(string(c.Algorithm)), x.args.seed, c.Prompts, c.N, params, x.args.sftSteps, x.args.demos)
	questions := fmt.Sprintf("demonstrated question %d", pick.first)
	if c.Prompts > 1 {
		questions = fmt.Sprintf("demonstrated questions %d-%d", pick.first, pick.first+c.Prompts-1)
	}
	switch {
	case x.args.question > 0:
		fmt.Fprintf(x.w, "questions: %s (--question)\n", questions)
	case pick.rewarded:
		fmt.Fprintf(x.w, "questions: %s, the first whose step rewards a search (a trajectory searches and answers right, another scores less); %d step(s) tried\n",
			questions, pick.tried)
	default:
		fmt.Fprintf(x.w, "questions: %s: none of the %d steps tried rewards a search (a trajectory that searches and answers right, another scoring less); the first is shown\n",
			questions, pick.tried)
	}
	fmt.Fprintf(x.w, "rollout: up to %d turns of up to %d tokens, temperature %g, process reward %g per search that finds a new supporting passage\n",
		c.MaxTurns, c.MaxTurnTokens, c.Temperature, x.args.processRew)
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
	case trainer.GRPOProcess:
		return fmt.Sprintf("GRPO with process supervision: each turn's reward r normalised as (r - mean) / (std + %g) over every turn of the group,\n"+
			"  A on a turn's tokens = the sum of the normalised rewards of that turn and the turns after it", c.AdvantageEps)
	}
	return string(c.Algorithm) + " (see rl/trainer/step.go, Trainer.advantages)"
}

// group prints one group's header and its trajectories.
func (x *explainer) group(g trainer.GroupSummary) {
	col := x.trace.Batch.Collated
	prompt := col.Results[g.Rows[0]].Prompt
	question := lastUserMessage(x.tok.Decode(prompt))
	gold := ""
	for _, p := range x.problems {
		if slices.Equal(p.Prompt, prompt) && len(p.Answers) > 0 {
			gold = fmt.Sprintf(" (gold answer %q)", p.Answers[0])
		}
	}
	fmt.Fprintf(x.w, "\n== group %d, %d trajectories: %q%s\n   rewards", g.Group, len(g.Rows), question, gold)
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
	answer := "no answer"
	if len(res.Turns) > 0 {
		if a, _ := qa.CheckAnswerTurn(x.tok.Decode(res.Turns[len(res.Turns)-1].Action), true); a != "" {
			answer = fmt.Sprintf("answer %q", a)
		}
	}
	fmt.Fprintf(x.w, "\n-- trajectory %d/%d (batch row %d): reward %.3f = outcome %.3f + process %.3f%s, %d turn(s), %s; %s\n",
		k+1, n, r, res.TotalReward(), outcome, res.TotalReward()-outcome, adv, len(res.Turns), answer, trained)
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
