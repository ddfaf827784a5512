package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// flagDoc is the help of one `agentr1 train` flag: the section of `help train` it is listed
// under and what it does, in words, with its unit (the default is printed after it).
type flagDoc struct {
	group string
	text  string
}

// trainFlagGroups are the sections of `agentr1 help train`, in the order printed.
var trainFlagGroups = []string{"run", "environment", "model", "SFT", "RL", "algorithm", "evaluation"}

// trainFlagDocs is the help of every `agentr1 train` flag, keyed by flag name: the command's
// own flags and the run settings bindConfig declares from pipeline.Config's fields. It lives here
// rather than in struct tags so the config structs stay plain; TestTrainFlagDocs fails when a
// declared flag has no entry or an entry names no flag, so the two cannot drift apart. The
// texts follow the fields' doc comments in rl/pipeline, rl/trainer and env/world.
var trainFlagDocs = map[string]flagDoc{
	// run: where the run lives, what it trains on, how it logs.
	"out":                  {"run", "run directory for config.json, metrics.jsonl, checkpoints, eval.json, report.html (default runs/<timestamp>); one holding a run already is refused (continue that with --resume)"},
	"config":               {"run", "JSON file of settings (pipeline.Config field names), applied before the flags"},
	"resume":               {"run", "continue the run in DIR from its latest checkpoint, RL or SFT (its config.json is reused)"},
	"data":                 {"run", "training data: world (generated), hotpotqa, 2wiki, musique (embedded samples) or a question FILE (mhqa JSONL, FlashRAG JSONL, HotpotQA JSON); all but world need --model"},
	"model":                {"run", "pretrained policy for real --data: a Hugging Face Qwen2/Qwen2.5/Qwen3 folder (config.json, safetensors, tokenizer.json) or one of ours (runs/X/final); no SFT"},
	"corpus":               {"run", "passages searched with real --data: mhqa (the embedded 19,719-passage corpus) or a FILE (mhqa or FlashRAG JSONL)"},
	"log-format":           {"run", "log lines (setup, warnings, errors) on stderr as text or json (log/slog); progress and per-step lines stay on stdout"},
	"seed":                 {"run", "seed of every random choice of the run (demonstrations, initialisation, sampling); the worlds have their own seeds"},
	"workers":              {"run", "goroutines for the tensor kernels and the environment steps (0: one per core, GOMAXPROCS); they change the speed, never the run"},
	"shards":               {"run", "groups of rows each batch is cut into and run at once (0: 2); part of the run, as the seed is: the same shards and kernel set write the same run on any machine"},
	"base-policy":          {"run", "folder caching the SFT base: loaded when it holds a model, else SFT runs and saves there (share one warm start between runs; default OUT/sft-base)"},
	"checkpoint-every":     {"run", "RL steps between checkpoints in OUT/checkpoints (0: every max(10, steps/4) steps); the last step and an interrupt always save"},
	"sft-checkpoint-every": {"run", "SFT steps between SFT checkpoints in OUT/checkpoints (0: every max(100, sft.steps/10) steps); an interrupt always saves"},
	"save-dtype":           {"run", "storage type of the weights in final/ and sft-base/: f32 or bf16 (default: a pretrained --model's own, f32 on the generated world); training computes in float32 either way"},
	"stop-on-divergence":   {"run", "stop at the first SFT or RL step whose loss or KL explodes against its running level (warned of in the log and metrics.jsonl either way), keeping the last checkpoint"},

	// environment: the generated worlds, the search tool and the QA episode.
	"worlds":                  {"environment", "training worlds the demonstrations and RL questions are drawn from: train-world and worlds-1 more of its size with other seeds (1: train-world only)"},
	"train-world.seed":        {"environment", "seed of the training world (the extra worlds' seeds derive from it)"},
	"train-world.countries":   {"environment", "countries in each training world"},
	"train-world.cities":      {"environment", "cities in each training world"},
	"train-world.people":      {"environment", "people in each training world"},
	"train-world.companies":   {"environment", "companies in each training world"},
	"train-world.bands":       {"environment", "bands in each training world"},
	"train-world.distractors": {"environment", "distractor passages per training world: rivers and clubs named after cities, lexical near-misses (negative: none)"},
	"train-world.questions":   {"environment", "questions generated per training world (demonstrations, RL questions and the held-out tail)"},
	"train-world.numeric":     {"environment", "share in [0, 1] of the training worlds' questions that need two searches and a calculation (needs --tools with calculator, which sets it to " + numericShare + " unless given; 0: none)"},
	"eval-world.seed":         {"environment", "seed of the evaluation world, whose names never occur in training (the unseen set)"},
	"eval-world.countries":    {"environment", "countries in the evaluation world"},
	"eval-world.cities":       {"environment", "cities in the evaluation world"},
	"eval-world.people":       {"environment", "people in the evaluation world"},
	"eval-world.companies":    {"environment", "companies in the evaluation world"},
	"eval-world.bands":        {"environment", "bands in the evaluation world"},
	"eval-world.distractors":  {"environment", "distractor passages in the evaluation world (negative: none)"},
	"eval-world.questions":    {"environment", "questions generated in the evaluation world (the unseen set takes the first --eval-questions)"},
	"eval-world.numeric":      {"environment", "share in [0, 1] of the evaluation world's questions that need a calculation (needs --tools with calculator, which sets it to " + numericShare + " unless given; 0: none)"},
	"search-top-k":            {"environment", "passages one search returns (paper: 5)"},
	"tools":                   {"environment", "tools the agent is offered, by name, separated by commas: search, calculator (the system prompt lists exactly these; with the calculator, the run is the calculator task and takes, unless given, " + calculatorTaskFlags() + ")"},
	"require-think":           {"environment", "the answer format requires <think>...</think> in every turn"},
	"compact-prompt":          {"environment", "use the ~60-token system prompt stating the call format instead of Qwen2.5's ~200-token tool-schema block (a third cheaper steps on CPU)"},
	"process-rew":             {"environment", "process reward per search that finds a new supporting passage, added to the outcome reward (0: off)"},
	"answer-rew":              {"environment", "process reward for the episode's first tool call whose whole result is the answer, e.g. a calculation giving the asked number (0: off)"},
	"operand-rew":             {"environment", "process reward for the episode's first calculator call, times the share of the question's operands (the two numbers it is about) that the expression holds (0: off; the calculator task's is 0.2)"},

	// model: the tokenizer and the policy trained from scratch on the generated world.
	"number-tokens":      {"model", "give each whole number below this a token of its own, added beyond --vocab-size, so that numbers are copied as one token (0: digits are tokens, as in Qwen)"},
	"vocab-size":         {"model", "BPE vocabulary size in tokens, specials included (at least 300)"},
	"model.hidden":       {"model", "hidden size C of the policy"},
	"model.layers":       {"model", "decoder layers of the policy"},
	"model.heads":        {"model", "query heads per attention layer (must divide --model.hidden)"},
	"model.kv-heads":     {"model", "key/value heads per attention layer, grouped-query attention (must divide --model.heads)"},
	"model.intermediate": {"model", "width of the SwiGLU feed-forward layer"},
	"model.init-range":   {"model", "standard deviation of the normal initialisation of the weights"},

	// SFT: the scripted agent's demonstrations and the warm start trained on them.
	"demos":                     {"SFT", "questions the scripted agent demonstrates, spread evenly over the training worlds (the first ones of each)"},
	"demo-noise":                {"SFT", "probability in [0, 1] that the scripted agent errs at each decision (a wrong search, a malformed call, a wrong answer)"},
	"demo-impatience":           {"SFT", "probability in [0, 1] that the scripted agent answers from what it has read instead of searching on"},
	"sft.steps":                 {"SFT", "SFT optimiser steps (0: no warm start)"},
	"sft.batch":                 {"SFT", "demonstrations per SFT step"},
	"sft.lr":                    {"SFT", "peak SFT learning rate (AdamW)"},
	"sft.warmup-steps":          {"SFT", "SFT steps of linear learning-rate warm-up"},
	"sft.decay":                 {"SFT", "SFT learning-rate decay after warm-up: cosine, linear or constant"},
	"sft.min-lr-ratio":          {"SFT", "final SFT learning rate as a fraction of the peak"},
	"sft.weight-decay":          {"SFT", "AdamW decoupled weight decay of SFT"},
	"sft.grad-clip":             {"SFT", "largest global gradient norm of an SFT step (clipped above)"},
	"sft.context-weight":        {"SFT", "weight of the next-token loss on tool-response tokens against 1 on agent tokens (0: the paper's loss on agent tokens only)"},
	"sft.mistake-weight":        {"SFT", "weight of the loss on the scripted agent's deliberate mistakes (0: learn the recoveries only; 1: imitate everything)"},
	"sft.number-weight":         {"SFT", "weight of the loss on the agent's digit (number) tokens against 1 on its other tokens"},
	"sft.name-weight":           {"SFT", "weight of the loss on the tokens of the agent's thoughts that copy a name out of the tool response just read, against 1 on its other tokens"},
	"sft.calc-answer-weight":    {"SFT", "weight of the loss on the answer turn that follows a demonstrated calculation, against 1 on the other turns"},
	"sft.calc-call-weight":      {"SFT", "weight of the loss on a demonstration's calculating turn (its first calculator call), against 1 on the other turns"},
	"sft.choice-answer-weight":  {"SFT", "weight of the loss on the answer turn of a question that chooses between two names (who was born first, A or B?), against 1 on the other turns"},
	"sft.context-number-weight": {"SFT", "factor in [0, 1] on the loss weight of the tool responses' digit (number) tokens (0: the random numbers a passage states are context only)"},
	"sft.copy-lr":               {"SFT", "learning rate of the copy steps (AdamW, constant after the warm-up)"},
	"sft.copy-both":             {"SFT", "with --sft.copy-numbers, alternate the copy steps' rows: numbers, then spans, in turn"},
	"sft.copy-every":            {"SFT", "after the copy steps, one more copy step after every this many demonstration steps (0: none)"},
	"sft.copy-name-share":       {"SFT", "with --sft.copy-numbers, the share in [0, 1] of the copy rows' recalled values that are names rather than numbers"},
	"sft.copy-numbers":          {"SFT", "make the copy steps' rows numbers recalled by the key before them, digit by digit, instead of spans cued by their first token"},
	"sft.copy-steps":            {"SFT", "SFT steps, before the demonstrations, on copying spans of tool-response tokens read earlier in the row (0: none)"},

	// RL: the rollouts, the batch and the optimiser.
	"steps":                    {"RL", "RL steps, one rollout and update each (same as --rl.steps)"},
	"rl.steps":                 {"RL", "RL steps, one rollout and update each"},
	"rl.prompts":               {"RL", "questions per RL step (paper: 128)"},
	"rl.n":                     {"RL", "samples per question, the GRPO group (paper: 5); rows per step = prompts x n"},
	"rl-on-demo-questions":     {"RL", "also train RL on the questions SFT demonstrated (false: only on questions SFT never showed)"},
	"start-states":             {"RL", "share of the RL questions that begin before their last tool call, as a patient scripted agent played them, the policy writing the rest (a reverse curriculum; 0: off)"},
	"start-states-answer":      {"RL", "share in [0, 1] of the start states that begin one step later, after the last tool's result, before the answer turn (0: all before the last tool call; the calculator task's is 0.5)"},
	"start-states-answer-tool": {"RL", "only the start states whose last tool call is to this tool may begin at the answer turn, --start-states-answer being their share (\"\": any tool; the calculator task's is calculator)"},
	"rl.max-turns":             {"RL", "agent turns per episode (paper: 5-10)"},
	"rl.max-turn-tokens":       {"RL", "tokens generated per turn at most"},
	"rl.max-len":               {"RL", "prompt + response tokens per trajectory at most (must hold the longest three-hop path, ~700)"},
	"rl.max-obs-tokens":        {"RL", "tokens kept of one tool response (0: all)"},
	"rl.temperature":           {"RL", "sampling temperature of training rollouts, > 0 (paper: 1.0); evaluation is greedy"},
	"rl.top-p":                 {"RL", "nucleus filter of training rollouts: keep the smallest set of tokens with this much probability (0: off)"},
	"rl.top-k":                 {"RL", "keep the k most likely tokens when sampling training rollouts (0: off)"},
	"rl.old-log-probs":         {"RL", "old log-probs of the PPO ratio: sampled (the rollout's, a third cheaper) or recompute (a pass before the update, as verl)"},
	"rl.check-old-every":       {"RL", "with sampled old log-probs, recompute them every this many steps to log the drift (0: never)"},
	"rl.epochs":                {"RL", "passes over a step's batch (paper: 1)"},
	"rl.mini-batches":          {"RL", "optimiser steps per epoch: the batch is split into this many (paper: 2)"},
	"rl.mini-batch-order":      {"RL", "how a step's rows are cut into mini-batches: length (sorted by length, little padding) or rows (in row order, whole groups together, as verl)"},
	"rl.micro-batch":           {"RL", "rows per forward pass of the old-log-prob, reference and critic passes (0: one mini-batch)"},
	"rl.lr":                    {"RL", "peak learning rate of the policy (paper: 1e-6 for a 3B model)"},
	"rl.critic-lr":             {"RL", "peak learning rate of the critic, PPO only (paper: 1e-5)"},
	"rl.warmup-steps":          {"RL", "optimiser steps of linear learning-rate warm-up"},
	"rl.decay":                 {"RL", "learning-rate decay after warm-up: cosine, linear or constant"},
	"rl.min-lr-ratio":          {"RL", "final learning rate as a fraction of the peak"},
	"rl.weight-decay":          {"RL", "AdamW decoupled weight decay"},
	"rl.beta1":                 {"RL", "AdamW beta1, the first-moment decay"},
	"rl.beta2":                 {"RL", "AdamW beta2, the second-moment decay"},
	"rl.max-non-finite-steps":  {"RL", "stop the run, its state saved, after this many steps in a row with a non-finite loss or gradient (0: never stop)"},

	// algorithm: the advantage estimator and the loss.
	"algo":                   {"algorithm", "RL algorithm (sets its defaults before the other flags; grpo, or on the calculator task " + string(pipeline.CalculatorAlgorithm) + "): " + trainer.AlgorithmNames()},
	"rl.agg-mode":            {"algorithm", "how the per-token loss is reduced: token-mean, seq-mean-token-sum, seq-mean-token-mean or seq-mean-token-sum-norm (Dr.GRPO's)"},
	"rl.clip-low":            {"algorithm", "PPO ratio clip below: 1 - clip-low, in (0, 1) (gspo clips the sequence ratio: verl's recipe 3e-4, its default)"},
	"rl.clip-high":           {"algorithm", "PPO ratio clip above: 1 + clip-high (above clip-low is clip-higher)"},
	"rl.clip-c":              {"algorithm", "dual-clip constant c > 1 bounding the loss of negative advantages (verl: 3)"},
	"rl.entropy-coef":        {"algorithm", "entropy bonus coefficient, subtracted from the loss (0: off)"},
	"rl.grad-clip":           {"algorithm", "largest global gradient norm of an RL optimiser step (verl: 1.0)"},
	"rl.kl-coef":             {"algorithm", "KL coefficient beta to the frozen initial policy (paper: 0.001; 0: no KL and no reference pass)"},
	"rl.kl-placement":        {"algorithm", "where the KL acts: reward (--rl.kl-reward-estimator in the token reward), loss (--rl.kl-estimator as a loss term), auto (per algorithm) or none"},
	"rl.kl-estimator":        {"algorithm", "KL estimator of the loss placement: k1, abs, k2 (mse) or k3 (low_var_kl; paper: k3)"},
	"rl.kl-reward-estimator": {"algorithm", "KL estimator of the reward placement: k1 (verl's default kl_penalty), abs, k2 (mse) or k3 (low_var_kl)"},
	"rl.kl-ctrl":             {"algorithm", "how the KL coefficient moves: fixed (--rl.kl-coef throughout) or adaptive (verl's AdaptiveKLController, starting at --rl.kl-coef)"},
	"rl.kl-target":           {"algorithm", "adaptive KL controller: the KL per token it steers towards (verl target_kl: 0.1)"},
	"rl.kl-horizon":          {"algorithm", "adaptive KL controller: rollout rows over which beta can change by a factor e^(+-0.2) (verl horizon: 10000)"},
	"rl.gamma":               {"algorithm", "discount gamma of returns and GAE (paper: 1)"},
	"rl.lambda":              {"algorithm", "GAE lambda, PPO (paper: 1)"},
	"rl.norm-by-std":         {"algorithm", "GRPO divides the group-centred reward by the group's std (Dr.GRPO: false)"},
	"rl.advantage-eps":       {"algorithm", "epsilon added to the group std before GRPO's division"},
	"rl.reset-at-mask":       {"algorithm", "REINFORCE++ returns restart at tool-response tokens, as verl (false: bridge them, the paper's mask)"},
	"rl.value-clip":          {"algorithm", "range of the clipped value loss, PPO (verl cliprange_value: 0.5)"},
	"rl.critic-warmup":       {"algorithm", "first RL steps that update only the critic, PPO (paper: 5)"},
	"rl.no-loss-mask":        {"algorithm", "ablation: train on tool-response tokens too (the loss mask becomes every response token)"},
	"rl.no-advantage-mask":   {"algorithm", "ablation: compute advantages over every response position, as Search-R1"},

	// evaluation: what is evaluated and how often.
	"held-out":       {"evaluation", "last questions of the training world kept out of SFT and RL and evaluated (the heldout set); with real --data, the last questions of the set"},
	"eval-questions": {"evaluation", "questions of the evaluation world evaluated (the unseen set; 0: all)"},
	"eval-every":     {"evaluation", "RL steps between evaluations of both sets (0: only before and after RL)"},
	"eval-batch":     {"evaluation", "questions decoded together in an evaluation"},
}

// numericShare is pipeline.NumericShare as the help prints it.
var numericShare = strconv.FormatFloat(pipeline.NumericShare, 'g', -1, 64)

// trainFixedFields are pipeline.Config's settings that `train` does not bind as flags, with the
// reason: each is decided by another flag, and a flag of its own would be silently overwritten.
var trainFixedFields = map[string]string{
	"rl.algorithm":      "set by --algo, which also picks the algorithm's defaults",
	"checkpoint-dir":    "always OUT/checkpoints, where --resume looks",
	"train-world.split": "the training world draws its names from the train half of the name space",
	"eval-world.split":  "the evaluation world draws its names from the other half, so they are unseen",
}

// trainUsage is the help text of train's flag name, for the flag declarations.
func trainUsage(name string) string { return trainFlagDocs[name].text }

// printGroupedFlags prints the flags of fs under section headings, groupOf naming each flag's
// section, in the order of groups and by name within a section, in the layout of
// flag.PrintDefaults. A flag in no section is listed under "other".
func printGroupedFlags(w io.Writer, fs *flag.FlagSet, groupOf func(name string) string, groups []string) {
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		g := groupOf(f.Name)
		if g == "" {
			g = "other"
		}
		byGroup[g] = append(byGroup[g], f)
	})
	for _, g := range append(slices.Clone(groups), "other") {
		if len(byGroup[g]) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s flags:\n", g)
		for _, f := range byGroup[g] {
			printFlag(w, f)
		}
	}
}

// printFlag prints one flag as flag.PrintDefaults does: "  -name type" and the indented text
// with its default, naming a config field's type (int, float, string, ...) instead of "value".
func printFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	if ff, ok := f.Value.(*fieldFlag); ok {
		typ = ff.typeName()
	}
	line := "  -" + f.Name
	if typ != "" {
		line += " " + typ
	}
	if f.DefValue != "" {
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
}
