package pipeline

import (
	"context"
	"fmt"
	"strings"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/world"
	"agentr1/mdp"
	"agentr1/rl/trainer"
	"agentr1/tokenizer"
)

// EvalSet is a set of evaluation questions with the tools that answer them.
type EvalSet struct {
	Name      string            // "heldout" or "unseen"
	Problems  []trainer.Problem // rendered prompts and episodes
	Questions []qa.Question     // the questions, for the baselines' own prompts
	Tools     []env.Tool        // the chosen tools (Config.Tools), search over the questions' world
}

// Setup is everything a run needs before training: the two worlds, their search tools, the
// tokenizer trained on the training world's text, the training problems, the evaluation sets
// and the scripted agent's demonstrations.
type Setup struct {
	Config     Config               // the run's configuration
	Worlds     []*world.World       // the training worlds (Config.Worlds of them); Worlds[0] is TrainWorld
	WorldTools [][]env.Tool         // the chosen tools over each training world's passages
	TrainWorld *world.World         // Worlds[0], whose tail holds the held-out questions
	EvalWorld  *world.World         // the evaluation world, its names disjoint from the training worlds'
	TrainTools []env.Tool           // the chosen tools over the training world's passages
	EvalTools  []env.Tool           // the chosen tools over the evaluation world's passages
	Tokenizer  *tokenizer.Tokenizer // BPE trained on the demonstrations and the training worlds' passages
	Specials   trainer.Specials     // the tokenizer's special ids the trainer needs
	// Train holds the RL questions: every training world's but world 0's held-out tail and (by
	// default) the demonstrated ones, then the start states (rlProblems, addStartStates).
	Train    []trainer.Problem
	EvalSets []EvalSet         // "heldout" (training world) and "unseen" (evaluation world)
	Demos    []*mdp.Trajectory // the scripted agent's transcripts, tokenised
	// DemoMistakes marks, per demonstration and turn, the actions in which the noisy agent
	// erred on purpose (world.DemoTurn.Mistake).
	DemoMistakes [][]bool
	// DemoFinals holds, per demonstration, how its question's answer follows from the facts
	// read (world.Plan.Final): which demonstrations choose between two names, which calculate.
	DemoFinals  []world.Final
	DemoSummary world.Summary // how well the (noisy) scripted agent did
	// StartStates is how many of Train begin from a scripted agent's state before its last
	// tool call (Config.StartStates); they are Train's last problems.
	StartStates int
}

// extraWorldSeedStride separates the seeds of the extra training worlds (Config.Worlds).
const extraWorldSeedStride = 1_000_003

// Prepare builds the worlds, indexes their passages for search, runs the noisy scripted agent
// on the first Demos training questions, trains the tokenizer on the demonstrations' text and
// the training passages, and renders every problem's prompt. RL trains on the questions the
// demonstrations did not show (all of them with RLOnDemoQuestions). The last HeldOut
// questions of the training world are never trained on: they form the "heldout" evaluation
// set (in-domain: entities seen in training, questions new); the first EvalQuestions of the
// evaluation world form the "unseen" set (every name new, so only search can answer).
func Prepare(ctx context.Context, cfg Config) (*Setup, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Setup{Config: cfg}
	if err := s.buildWorlds(); err != nil {
		return nil, err
	}
	demos, demoQs, err := s.demonstrate(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.trainTokenizer(demos); err != nil {
		return nil, err
	}
	rlTasks, err := s.rlProblems(demoQs)
	if err != nil {
		return nil, err
	}
	if err := s.addStartStates(ctx, rlTasks); err != nil {
		return nil, err
	}
	if err := s.buildEvalSets(); err != nil {
		return nil, err
	}
	return s, nil
}

// buildWorlds builds the Config.Worlds training worlds, each seeded apart, and the evaluation
// world, with the chosen tools over each world's passages.
func (s *Setup) buildWorlds() error {
	cfg := &s.Config
	for k := range max(cfg.Worlds, 1) {
		wc := cfg.TrainWorld
		wc.Seed += uint64(k) * extraWorldSeedStride
		w, err := world.New(wc)
		if err != nil {
			return fmt.Errorf("training world %d: %w", k, err)
		}
		tools, err := BuildTools(cfg.Tools, w.Passages, cfg.SearchTopK, cfg.Workers)
		if err != nil {
			return fmt.Errorf("training world %d: %w", k, err)
		}
		s.Worlds = append(s.Worlds, w)
		s.WorldTools = append(s.WorldTools, tools)
	}
	s.TrainWorld, s.TrainTools = s.Worlds[0], s.WorldTools[0]
	var err error
	if s.EvalWorld, err = world.New(cfg.EvalWorld); err != nil {
		return fmt.Errorf("evaluation world: %w", err)
	}
	if s.EvalTools, err = BuildTools(cfg.Tools, s.EvalWorld.Passages, cfg.SearchTopK, cfg.Workers); err != nil {
		return fmt.Errorf("evaluation world: %w", err)
	}
	return nil
}

// demonstrate runs the scripted agent for the demonstrations: Config.Demos questions spread
// evenly over the training worlds (the first ones of each, never the held-out tail of world
// 0), each world with its own noisy agent. It returns them and, per world, how many of its
// first questions they demonstrate (demoQs), and sets DemoSummary.
func (s *Setup) demonstrate(ctx context.Context) (demos []world.Demo, demoQs []int, err error) {
	cfg := &s.Config
	nw := len(s.Worlds)
	qcfg := cfg.QAConfig()
	var sums []world.Summary
	demoQs = make([]int, nw)
	held := heldOutCount(*cfg, len(s.TrainWorld.Tasks))
	for k, w := range s.Worlds {
		n := cfg.Demos / nw
		if k < cfg.Demos%nw {
			n++
		}
		avail := len(w.Tasks)
		if k == 0 {
			avail -= held // the held-out tail is never demonstrated
		}
		tasks := w.Tasks[:min(n, avail)]
		demoQs[k] = len(tasks)
		d, sum, err := world.Run(ctx, w, qcfg, s.WorldTools[k], tasks, cfg.DemoHabits(), cfg.Seed+uint64(k))
		if err != nil {
			return nil, nil, fmt.Errorf("demonstrations (world %d): %w", k, err)
		}
		demos = append(demos, d...)
		sums = append(sums, sum)
	}
	s.DemoSummary = world.Merge(sums)
	return demos, demoQs, nil
}

// trainTokenizer trains the tokenizer on the demonstrations' text and the training worlds'
// passages, and tokenises the demonstrations with it (Demos, DemoMistakes, DemoFinals).
func (s *Setup) trainTokenizer(demos []world.Demo) error {
	cfg := &s.Config
	texts := make([]string, 0, len(demos)+len(s.Worlds)*len(s.TrainWorld.Passages))
	for i := range demos {
		texts = append(texts, demos[i].Text())
	}
	for _, w := range s.Worlds {
		for _, p := range w.Passages {
			texts = append(texts, p.Title+"\n"+p.Text)
		}
	}
	var err error
	if s.Tokenizer, err = TrainTokenizer(texts, cfg.VocabSize, cfg.NumberTokens); err != nil {
		return err
	}
	if s.Specials, err = SpecialsOf(s.Tokenizer); err != nil {
		return err
	}
	s.Demos, s.DemoMistakes = tokenizeDemos(demos, s.Tokenizer, cfg.QAConfig().PaysProcessRewards())
	s.DemoFinals = make([]world.Final, len(demos))
	for i := range demos {
		s.DemoFinals[i] = demos[i].Task.Plan.Final
	}
	return nil
}

// rlProblems renders the RL questions into Train: the training worlds' questions but world 0's
// held-out tail and, unless RLOnDemoQuestions, the demonstrated ones (demoQs[k] of world k's
// first). It returns, per world, its RL questions' tasks.
func (s *Setup) rlProblems(demoQs []int) ([][]world.Task, error) {
	cfg := &s.Config
	qcfg := cfg.QAConfig()
	held := heldOutCount(*cfg, len(s.TrainWorld.Tasks))
	rlTasks := make([][]world.Task, len(s.Worlds)) // per world, its RL questions' tasks
	for k, w := range s.Worlds {
		tasks := w.Tasks
		if k == 0 {
			tasks = tasks[:len(tasks)-held]
		}
		if !cfg.RLOnDemoQuestions {
			tasks = tasks[min(demoQs[k], len(tasks)):]
		}
		rlTasks[k] = tasks
		probs, err := QAProblems(world.QuestionsOf(tasks), qcfg, s.WorldTools[k], s.Tokenizer)
		if err != nil {
			return nil, err
		}
		s.Train = append(s.Train, probs...)
	}
	if len(s.Train) == 0 {
		return nil, fmt.Errorf("no RL questions: the training world's %d questions are all demonstrated (Demos %d) or held out (HeldOut %d); raise --train-world.questions or set --rl-on-demo-questions",
			len(s.TrainWorld.Tasks), cfg.Demos, held)
	}
	return rlTasks, nil
}

// addStartStates appends the start states (StartStates) to Train: drawn from each world's RL
// questions (rlTasks) in turn, so that they make up their share of the set; the prompt leaves
// the rollout room for two turns.
func (s *Setup) addStartStates(ctx context.Context, rlTasks [][]world.Task) error {
	cfg := &s.Config
	want := startCount(cfg.StartStates, len(s.Train))
	if want <= 0 {
		return nil
	}
	qcfg := cfg.QAConfig()
	nw := len(s.Worlds)
	maxPrompt := cfg.RL.MaxLen - 2*cfg.RL.MaxTurnTokens
	var starts []trainer.Problem
	for k, w := range s.Worlds {
		quota := (want - len(starts)) / (nw - k)
		probs, err := StartProblems(ctx, w, rlTasks[k], s.WorldTools[k], qcfg, s.Tokenizer, maxPrompt, quota, cfg.StartStatesAnswer, cfg.StartStatesAnswerTool, cfg.Seed+uint64(k))
		if err != nil {
			return err
		}
		starts = append(starts, probs...)
	}
	s.StartStates = len(starts)
	s.Train = append(s.Train, starts...)
	return nil
}

// buildEvalSets renders the evaluation sets (EvalQuestions): "heldout" with the training
// world's tools, "unseen" with the evaluation world's, each left out when it has no question.
func (s *Setup) buildEvalSets() error {
	qcfg := s.Config.QAConfig()
	heldQs, unseenQs := EvalQuestions(s.Config, s.TrainWorld, s.EvalWorld)
	for _, set := range []EvalSet{{Name: "heldout", Questions: heldQs, Tools: s.TrainTools}, {Name: "unseen", Questions: unseenQs, Tools: s.EvalTools}} {
		if len(set.Questions) == 0 {
			continue
		}
		var err error
		if set.Problems, err = QAProblems(set.Questions, qcfg, set.Tools, s.Tokenizer); err != nil {
			return err
		}
		s.EvalSets = append(s.EvalSets, set)
	}
	return nil
}

// heldOutCount is how many of the training world's n last questions are held out: HeldOut, at
// most all but one (at least one question must remain to train on).
func heldOutCount(cfg Config, n int) int { return min(max(cfg.HeldOut, 0), n-1) }

// EvalQuestions returns a run's two evaluation sets as Prepare draws them, from its first
// training world and its evaluation world: heldout, the training world's last HeldOut
// questions (never demonstrated nor trained on; their names were seen in training), and unseen,
// the evaluation world's first EvalQuestions (every name new; all of them when 0).
func EvalQuestions(cfg Config, train, eval *world.World) (heldout, unseen []qa.Question) {
	trainQs := train.Questions()
	heldout = trainQs[len(trainQs)-heldOutCount(cfg, len(trainQs)):]
	unseen = eval.Questions()
	if cfg.EvalQuestions > 0 && cfg.EvalQuestions < len(unseen) {
		unseen = unseen[:cfg.EvalQuestions]
	}
	return heldout, unseen
}

// Describe summarises the setup in one line for logs.
func (s *Setup) Describe() string {
	var b strings.Builder
	maxPrompt, demoTokens, maxAction := 0, 0, 0
	for _, p := range s.Train {
		maxPrompt = max(maxPrompt, len(p.Prompt))
	}
	for _, d := range s.Demos {
		demoTokens = max(demoTokens, len(d.Prompt)+d.ResponseLen())
		for _, t := range d.Turns {
			maxAction = max(maxAction, len(t.Action))
		}
	}
	if len(s.Worlds) > 1 {
		fmt.Fprintf(&b, "%d training worlds (demonstrations and RL questions from all; held-out questions from the first); ", len(s.Worlds))
	}
	starts := ""
	if s.StartStates > 0 {
		starts = fmt.Sprintf(" (%d of them start states)", s.StartStates)
	}
	fmt.Fprintf(&b, "train world: %d passages, %d training questions%s; %s; evaluation world: %d passages; vocab %d; longest prompt %d tokens, longest demonstration %d tokens, longest turn %d tokens; scripted agent (noise %.2f, impatience %.2f): EM %.3f, format %.3f, %.2f searches",
		len(s.TrainWorld.Passages), len(s.Train), starts, s.evalSetsText(), len(s.EvalWorld.Passages), s.Tokenizer.VocabSize(),
		maxPrompt, demoTokens, maxAction, s.Config.DemoNoise, s.Config.DemoImpatience, s.DemoSummary.EM, s.DemoSummary.FormatOK, s.DemoSummary.Searches)
	return b.String()
}

func (s *Setup) evalSetsText() string {
	var parts []string
	for _, e := range s.EvalSets {
		parts = append(parts, fmt.Sprintf("%d %s questions", len(e.Problems), e.Name))
	}
	return strings.Join(parts, ", ")
}

// tokenizeDemos turns the scripted agent's demonstrations into trajectories under tok (with
// the process rewards when pays) and marks, per demonstration and turn, the actions in which
// the agent erred on purpose.
func tokenizeDemos(demos []world.Demo, tok *tokenizer.Tokenizer, pays bool) (trajs []*mdp.Trajectory, mistakes [][]bool) {
	for i := range demos {
		t := demos[i].Trajectory(tok.Encode, pays)
		trajs = append(trajs, &t)
		m := make([]bool, len(demos[i].Turns))
		for k, turn := range demos[i].Turns {
			m[k] = turn.Mistake
		}
		mistakes = append(mistakes, m)
	}
	return trajs, mistakes
}
