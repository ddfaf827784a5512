package pipeline

import (
	"fmt"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/tokenizer"
)

// IsWorldData reports whether a Config.Data value names the generated world (the default)
// rather than real questions.
func IsWorldData(data string) bool { return data == "" || data == "world" }

// Pretrained lists the settings a run on real questions from a pretrained checkpoint takes
// in place of the generated world's defaults, which are tuned for a ~1M-parameter policy
// trained from scratch. Each names its Config field as config.json does.
var Pretrained = []Setting{
	{"RL.LR", 1e-6, "the paper's and verl's actor learning rate; the world's 3e-4 would wreck a pretrained model"},
	{"RL.CriticLR", 1e-5, "the paper's critic learning rate"},
	{"RL.MaxLen", 4096, "three real passages fill the world's 800 tokens"},
	{"RL.MaxTurnTokens", 256, "a pretrained model writes longer turns than the small policy"},
	{"RequireThink", false, "Qwen2.5-Instruct writes no <think> unless trained to"},
	{"CompactPrompt", false, "a pretrained Qwen model expects its own tool-schema system prompt"},
}

// ForPretrained gives a run on real questions (Data other than the world) the Pretrained
// settings, except those the user gave (given reports a Config field set by a flag or a
// configuration file), and returns the ones it set as "Field=value". A run on the generated
// world is left as it is.
func (c *Config) ForPretrained(given func(field string) bool) []string {
	if IsWorldData(c.Data) {
		return nil
	}
	return c.apply(Pretrained, given)
}

// PrepareData is Prepare for real questions and a pretrained policy's tokenizer: no worlds and
// no demonstrations (a pretrained policy needs no warm start). The last cfg.HeldOut questions
// form the "heldout" evaluation set (at least one question is left to train on); the others
// are the RL training problems. Every episode searches with tools.
func PrepareData(cfg Config, qs []qa.Question, tools []env.Tool, tok *tokenizer.Tokenizer) (*Setup, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(qs) < 2 {
		return nil, fmt.Errorf("prepare %s: %d questions; want at least 2 (one to train on, one held out)", cfg.Data, len(qs))
	}
	s := &Setup{Config: cfg, TrainTools: tools, EvalTools: tools, Tokenizer: tok}
	var err error
	if s.Specials, err = SpecialsOf(tok); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", cfg.Data, err)
	}
	qcfg := cfg.QAConfig()
	held := min(max(cfg.HeldOut, 1), len(qs)-1)
	trainQs, heldQs := qs[:len(qs)-held], qs[len(qs)-held:]
	if s.Train, err = QAProblems(trainQs, qcfg, tools, tok); err != nil {
		return nil, err
	}
	set := EvalSet{Name: "heldout", Questions: heldQs, Tools: tools}
	if set.Problems, err = QAProblems(heldQs, qcfg, tools, tok); err != nil {
		return nil, err
	}
	s.EvalSets = []EvalSet{set}
	return s, nil
}

// DescribeData summarises a PrepareData setup in one line for logs.
func (s *Setup) DescribeData() string {
	maxPrompt := 0
	for _, p := range s.Train {
		maxPrompt = max(maxPrompt, len(p.Prompt))
	}
	return fmt.Sprintf("data %s: %d training questions, %s; vocab %d; longest prompt %d tokens",
		s.Config.Data, len(s.Train), s.evalSetsText(), s.Tokenizer.VocabSize(), maxPrompt)
}
