package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/search"
	"agentr1/env/world"
	"agentr1/model"
	"agentr1/rl/trainer"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

// ModelConfig sets the policy's architecture (a Qwen2 decoder; the vocabulary comes from the
// tokenizer).
type ModelConfig struct {
	Hidden       int     // hidden size C
	Layers       int     // decoder layers
	Heads        int     // query heads
	KVHeads      int     // key/value heads (grouped-query attention)
	Intermediate int     // SwiGLU width
	InitRange    float64 // std of the normal initialisation
}

// Config is a whole agentr1 run: world, tokenizer, policy, demonstrations, SFT, RL and
// evaluation. DefaultConfig is the default run: docs/RESULTS.md section 1 gives its figures
// and its time on 2 cores of each machine measured (40-45% of it the SFT warm start).
type Config struct {
	Seed    uint64 // every random choice of the run derives from it
	Workers int    // tensor kernel goroutines and environment-step goroutines (0: GOMAXPROCS)
	// Shards is how many groups of rows the policy cuts each batch into, run at once
	// (model.SetShards; 0: model.DefaultShards). It is part of the run as Seed is: a gradient
	// is a sum over the groups, rounded differently for each count, where Workers decides only
	// how fast the groups run. So the same Shards and kernel set write the same run on any
	// machine, whatever its cores.
	Shards int

	// World: a training world and a held-out evaluation world whose names are disjoint, so
	// evaluation answers can only be found by searching.
	TrainWorld world.Config
	EvalWorld  world.Config // the evaluation world ("unseen")
	// Worlds is how many training worlds the demonstrations and RL questions are drawn from:
	// TrainWorld and Worlds-1 more of the same size and split with other seeds (1: only
	// TrainWorld). A policy trained on one small world memorises its facts instead of reading
	// the search results, and answers nothing about a world it never saw; across many worlds
	// only reading answers the questions. With the default 20 (and the default warm start)
	// the SFT base reads names out of the passages of a world it never saw, which it did not
	// with one world or eight.
	Worlds  int
	HeldOut int // last questions of TrainWorld held out of demonstrations and RL, evaluated ("heldout")
	// RLOnDemoQuestions puts the demonstrations' questions in the RL set too. By default RL
	// trains only on questions SFT never showed (the training worlds' questions after the
	// demonstrations' and before the held-out tail): the policy has memorised the answers to
	// the demonstrated ones, so rewards on them teach nothing that carries over to new
	// questions.
	RLOnDemoQuestions bool
	// StartStates is the share of the RL set that begins before the last tool call of an RL
	// question, as a patient scripted agent that makes no mistakes played it (StartProblems:
	// a reverse curriculum), the rest being the questions from their start. 0: off; 0.3 in
	// DefaultConfig.
	StartStates float64
	// StartStatesAnswer is the share of the start states that begin one step later, after
	// the last tool's result and before the answer turn, so that RL also practises the last
	// step alone (on the calculator task: answering with the calculator's result). 0: every
	// start state begins before the last tool call.
	StartStatesAnswer float64
	// StartStatesAnswerTool, when set, names the tool whose result an answer-turn start state
	// must follow: only the states whose last tool call is to it may begin at the answer turn,
	// StartStatesAnswer being then their share, and the others begin before their last call.
	// On the calculator task that leaves the answer turn of a search (a name to copy out of
	// the passages) to be practised from the policy's own notes. "": any tool.
	StartStatesAnswerTool string
	EvalQuestions         int // questions of EvalWorld evaluated ("unseen"; 0: all)

	// Tokenizer, search, environment.
	// VocabSize is the BPE vocabulary size, specials included. The generated world's text runs
	// out of merges near 1.5k; the default 768 keeps entity names split into syllable tokens
	// that are frequent in training (at 1k and more the evaluation world's names become
	// tokens the policy rarely or never saw).
	VocabSize int
	// NumberTokens, when above 0, gives each whole number below it ("0" .. "NumberTokens−1")
	// a token of its own, added beyond VocabSize like the tool tags, so that a number read in
	// a search result is copied as one token rather than digit by digit. 0: off, digits are
	// single tokens as in Qwen.
	NumberTokens int
	SearchTopK   int // passages per search (paper: 5)
	// Tools are the tools the agent is offered, by name (ToolRegistry: search, calculator):
	// each is built over every world's passages, the system prompt lists exactly these and
	// the environment routes each call by name. Default (and empty): search alone.
	Tools        env.ToolNames
	RequireThink bool // the format requires <think>...</think> in every turn
	// CompactPrompt replaces the Qwen2.5 system prompt with its tool-schema block (~200
	// tokens) by CompactSystemPrompt (~60 tokens), which states the same call format. Every
	// training row carries the prompt, so this cuts the cost of a step by a third on CPU.
	CompactPrompt bool
	ProcessRew    float64 // process reward per search that finds a new supporting passage (0: off)
	// AnswerRew is the process reward of the episode's first tool call whose whole result is
	// the answer (a calculation giving the asked number; qa.Config.AnswerReward). 0: off.
	AnswerRew float64
	// OperandRew is the process reward of the episode's first calculator call, scaled by the
	// share of the question's operands its expression holds (qa.Config.OperandReward). 0: off.
	OperandRew float64

	Model ModelConfig // the policy's architecture when the run builds it

	// Demonstrations from the scripted agent (SFT warm start).
	// Demos is how many questions are demonstrated, the first ones of each training world
	// (spread evenly over Worlds). The rest, but world 0's held-out tail, are the RL questions
	// (RLOnDemoQuestions). The default 6,000 over 20 worlds is 300 per world, each seen about
	// three times by the warm start, so that it learns to read names rather than the
	// demonstrations by heart, and it leaves RL 13,900 questions it has never seen: given few
	// RL questions, RL memorises their answers (their sampled EM rises while held-out EM does
	// not).
	Demos     int
	DemoNoise float64 // probability the scripted agent makes a mistake at each decision
	// DemoImpatience is the probability that the scripted agent, having read a fact and
	// needing more, answers from what it has instead of searching on (world.Habits). An
	// agent that always searches to the end makes a warm start that already is the policy RL
	// would look for, and RL then has nothing to learn but the reading, which its sparse
	// reward does not teach. Default 0.6: the greedy warm start then answers after one
	// search, and GRPO learns to search on.
	DemoImpatience float64
	SFT            SFTConfig // the warm start's training settings
	// BasePolicy, when set, caches the SFT base: if the directory holds a saved model it is
	// loaded instead of running SFT (the tokenizer is retrained identically from the same
	// seed), otherwise SFT runs and its result is saved there. Runs comparing algorithms share
	// one warm start this way.
	BasePolicy string

	RL              trainer.RLConfig // the RL phase's settings
	EvalEvery       int              // evaluate on the evaluation sets every this many RL steps (0: only at the end)
	EvalBatch       int              // problems per evaluation rollout batch
	CheckpointDir   string           // "" disables checkpoints
	CheckpointEvery int              // RL steps between checkpoints (0: only at the end)
	// SFTCheckpointEvery is the number of SFT steps between SFT checkpoints (in CheckpointDir;
	// 0: only when interrupted).
	SFTCheckpointEvery int
	// SaveDtype is the storage type of the model folders the run writes (final/ and the SFT
	// base): f32 or bf16. Empty, the default, keeps a pretrained policy's own type
	// (model.WeightsDType of InitModel: bf16 for Qwen's releases, which then stay their size)
	// and float32 for the policy trained here from scratch, whose SFT base later runs load
	// and continue from exactly. Training computes in float32 whatever is saved.
	SaveDtype model.DType
	// StopOnDivergence stops the run at the first SFT or RL step flagged as diverging (the SFT
	// loss or the RL update's KL exploding against its running level: trainer.Divergence),
	// keeping the last checkpoint; otherwise such steps are warned of and the run goes on.
	StopOnDivergence bool

	// Real data instead of the generated world (`agentr1 train --data D --model DIR`). The
	// pipeline records them (config.json, --resume) and the command line interprets them.
	Data      string `flag:"-"` // "world" (or ""), hotpotqa, 2wiki, musique or a question FILE
	InitModel string `flag:"-"` // the pretrained policy's folder (Hugging Face Qwen2 or ours); required with real Data
	Corpus    string `flag:"-"` // passages searched with real Data: mhqa (the embedded corpus) or a FILE
}

// DefaultConfig returns the run that the acceptance figures quote: GRPO on a ~1M-parameter
// policy. A policy trained from scratch must learn to copy what it reads, which a pretrained
// one brings, so its warm start adds copy rows to DefaultSFTConfig's: 500 copy steps first and
// one after every 8 demonstration steps; and 30% of the RL set begins before the last search
// (start states). Copy steps alone broke some seeds' warm starts, which then answered
// with names they invented; the copy rows kept among the demonstrations mended them
// (docs/RESULTS.md section 1).
func DefaultConfig() Config {
	sft := DefaultSFTConfig()
	sft.CopySteps, sft.CopyEvery = 500, 8
	return Config{
		Seed:           1,
		Shards:         model.DefaultShards,
		TrainWorld:     world.DefaultConfig(1, world.Train),
		EvalWorld:      world.DefaultConfig(2, world.Eval),
		HeldOut:        100,
		EvalQuestions:  100,
		VocabSize:      768,
		SearchTopK:     3,
		Tools:          DefaultTools,
		RequireThink:   true,
		CompactPrompt:  true,
		ProcessRew:     0.2,
		Model:          ModelConfig{Hidden: 128, Layers: 4, Heads: 4, KVHeads: 2, Intermediate: 384, InitRange: 0.02},
		Worlds:         20,
		Demos:          6000,
		DemoNoise:      0.15,
		DemoImpatience: 0.6,
		StartStates:    0.3,
		SFT:            sft,
		RL:             trainer.DefaultRLConfig(trainer.GRPO),
		EvalBatch:      50,
		EvalEvery:      40,
	}
}

// SetParallelism makes the kernels run on cfg.Workers goroutines (when set) and the policy cut
// its batches into cfg.Shards groups of rows (model.SetShards), and returns the function that
// restores both. Every command that runs or replays a configured job calls it first, so that
// the job's bits follow its settings and not the machine's cores.
func SetParallelism(cfg Config) (restore func()) {
	shards := cfg.Shards
	if shards == 0 {
		shards = model.DefaultShards
	}
	oldShards, oldWorkers := model.SetShards(shards), tensor.Workers()
	if cfg.Workers > 0 {
		tensor.SetWorkers(cfg.Workers)
	}
	return func() {
		model.SetShards(oldShards)
		tensor.SetWorkers(oldWorkers)
	}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	if c.VocabSize < 300 {
		return fmt.Errorf("config: VocabSize = %d, want >= 300 (256 bytes + specials + merges)", c.VocabSize)
	}
	if c.Shards < 0 {
		return fmt.Errorf("config: Shards = %d, want >= 1 (0: model.DefaultShards)", c.Shards)
	}
	if c.SFTCheckpointEvery < 0 {
		return fmt.Errorf("config: SFTCheckpointEvery = %d, want >= 0", c.SFTCheckpointEvery)
	}
	if c.CheckpointEvery < 0 {
		return fmt.Errorf("config: CheckpointEvery = %d, want >= 0", c.CheckpointEvery)
	}
	if c.EvalEvery < 0 {
		return fmt.Errorf("config: EvalEvery = %d, want >= 0", c.EvalEvery)
	}
	if c.SaveDtype != "" && !slices.Contains(model.DTypes, c.SaveDtype) {
		return fmt.Errorf("config: SaveDtype = %q, want f32 or bf16", string(c.SaveDtype))
	}
	if c.Worlds < 1 {
		return fmt.Errorf("config: Worlds = %d, want >= 1 (1: only TrainWorld)", c.Worlds)
	}
	if c.Data != "" && c.Data != "world" && c.InitModel == "" {
		return fmt.Errorf("config: Data = %q needs InitModel (a pretrained policy): a policy trained from scratch here cannot learn real QA", c.Data)
	}
	if err := c.checkTools(); err != nil {
		return err
	}
	if c.SearchTopK < 1 {
		return fmt.Errorf("config: SearchTopK = %d, want >= 1", c.SearchTopK)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"ProcessRew", c.ProcessRew}, {"AnswerRew", c.AnswerRew}, {"OperandRew", c.OperandRew}} {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) {
			return fmt.Errorf("config: %s = %v, want a finite reward", r.name, r.v)
		}
	}
	if !(c.StartStates >= 0 && c.StartStates < 1) {
		return fmt.Errorf("config: StartStates = %v, want a share in [0, 1)", c.StartStates)
	}
	if err := probability("StartStatesAnswer", c.StartStatesAnswer); err != nil {
		return err
	}
	if err := probability("DemoNoise", c.DemoNoise); err != nil {
		return err
	}
	if err := probability("DemoImpatience", c.DemoImpatience); err != nil {
		return err
	}
	m := c.Model
	if m.Hidden < 1 || m.Layers < 1 || m.Heads < 1 || m.KVHeads < 1 || m.Heads%m.KVHeads != 0 || m.Hidden%m.Heads != 0 {
		return fmt.Errorf("config: model %+v: heads must divide hidden and KV heads divide heads", m)
	}
	if err := c.SFT.Validate(); err != nil {
		return err
	}
	return c.RL.Validate()
}

// Specials lists the added tokens of the trained tokenizer: ChatML markers, the tool-call and
// tool-response tags and the reasoning and answer tags, each one token.
var SpecialTokens = []string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>",
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	"<think>", "</think>", "<answer>", "</answer>",
}

// probability reports a setting outside [0, 1] (NaN included), naming it.
func probability(name string, v float64) error {
	if !(v >= 0 && v <= 1) {
		return fmt.Errorf("config: %s = %v, want a probability in [0, 1]", name, v)
	}
	return nil
}

// TrainTokenizer learns a byte-level BPE vocabulary of vocabSize from texts, with
// SpecialTokens added, then numberTokens whole numbers ("0", "1", ...) as tokens of their own.
func TrainTokenizer(texts []string, vocabSize, numberTokens int) (*tokenizer.Tokenizer, error) {
	specials := slices.Clone(SpecialTokens)
	for n := range numberTokens {
		specials = append(specials, strconv.Itoa(n))
	}
	tok, err := tokenizer.Train(texts, vocabSize+numberTokens, specials, nil)
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	return tok, nil
}

// SpecialsOf returns the ids the trainer (trainer.Specials) needs from tok.
func SpecialsOf(tok *tokenizer.Tokenizer) (trainer.Specials, error) {
	var sp trainer.Specials
	for _, x := range []struct {
		name string
		id   *int
	}{{"<|endoftext|>", &sp.Pad}, {"</tool_call>", &sp.ToolEnd}, {"<|im_end|>", &sp.ImEnd}} {
		id, ok := tok.TokenID(x.name)
		if !ok {
			return sp, fmt.Errorf("tokenizer has no %s token", x.name)
		}
		*x.id = id
	}
	return sp, nil
}

// NewPolicy returns a freshly initialised policy of cfg over tok's vocabulary, with a rotary
// table for maxLen positions (a padded batch is as wide as its longest prompt plus its longest
// response, so give some margin over the longest row).
func NewPolicy(cfg ModelConfig, tok *tokenizer.Tokenizer, maxLen int, seed uint64) (*model.Model, error) {
	im := tok.EOS()
	mc := model.Config{
		VocabSize: tok.VocabSize(), HiddenSize: cfg.Hidden, IntermediateSize: cfg.Intermediate,
		NumHiddenLayers: cfg.Layers, NumAttentionHeads: cfg.Heads, NumKeyValueHeads: cfg.KVHeads,
		RMSNormEps: 1e-6, RopeTheta: 10000, TieWordEmbeddings: true, MaxPositionEmbeddings: maxLen,
		InitializerRange: cfg.InitRange, EOSTokenIDs: []int{im},
	}
	return model.New(mc, seed)
}

// SearchTools builds a BM25 index over passages and returns the search tool over it.
func SearchTools(passages []env.Passage, topK, workers int) ([]env.Tool, error) {
	opt := search.DefaultOptions()
	opt.Workers = workers
	ix, err := search.Build(passages, opt)
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	return []env.Tool{search.NewTool(ix, topK)}, nil
}

// QAConfig is the QA environment's configuration for a run: the rollout's turn limit, the
// format requirement and the process reward.
func (c *Config) QAConfig() qa.Config {
	q := qa.DefaultConfig()
	q.Env.MaxTurns = c.RL.MaxTurns
	q.RequireThink = c.RequireThink
	q.ProcessReward = c.ProcessRew
	q.AnswerReward = c.AnswerRew
	q.OperandReward = c.OperandRew
	if c.CompactPrompt {
		q.SystemPrompt = compactSystemPrompt(c.Tools)
	}
	return q
}

// DemoHabits is the scripted agent's habits in the run's demonstrations.
func (c *Config) DemoHabits() world.Habits {
	return world.Habits{Noise: c.DemoNoise, Impatience: c.DemoImpatience}
}

// CompactSystemPrompt is the short system message of Config.CompactPrompt: the task, the
// search tool's call format and the think/answer tags, without the JSON schema block.
const CompactSystemPrompt = `Answer the question. To search the wiki, write <tool_call>
{"name": "search", "arguments": {"query": "..."}}
</tool_call> and the results come back in <tool_response> </tool_response>. ` +
	`Think inside <think> </think> first. Give only the short answer inside <answer> </answer>.`
