package pipeline

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"agentr1/env/qa"
	"agentr1/env/world"
	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

// An agent that reads writes into its thoughts what the tool response it has just read says:
// a name to search for next, a number to calculate with. This file measures whether a policy
// does, teacher-forced on the run's own demonstrations: for each token of a thought that
// copies a name or a number out of the response before it, the probability the policy gives
// it and whether it is the policy's most probable token (what greedy decoding would write).
// RESULTS section 6 uses it to show where the calculator task fails.

// CopyKind is what a token of the agent's thought, in the turn after a tool response, copies
// out of that response.
type CopyKind int

// The kinds of copied token. A number is a run of digit tokens; years mostly begin with 1,
// which a policy can write without reading, so a leading 1 is a kind of its own.
const (
	CopyNone       CopyKind = iota // a token that copies nothing the response holds
	CopyNameStart                  // a capitalised piece the response holds and the prompt does not
	CopyNameRest                   // a lower-case piece continuing such a piece, as a name goes on
	CopyLeadingOne                 // the first digit, 1, of a number the response holds
	CopyFirstDigit                 // the first digit, other than 1, of a number the response holds
	CopyLaterDigit                 // a later digit of a number the response holds
)

// copyKindNames are the kinds' names, in CopyKind order.
var copyKindNames = [...]string{"not copied", "name, first piece", "name, later piece",
	"number, leading 1", "number, first digit (not 1)", "number, later digit"}

// String returns the kind's name.
func (k CopyKind) String() string { return copyKindNames[k] }

// numberRE finds the numbers of a text.
var numberRE = regexp.MustCompile(`[0-9]+`)

// CopyKinds classifies the tokens of one action, given as their decoded pieces in order, that
// follows a tool response (its text) in an episode whose prompt is prompt (its text). Only the
// pieces inside <think>...</think> can copy; every other piece is CopyNone.
func CopyKinds(pieces []string, response, prompt string) []CopyKind {
	numbers := map[string]bool{}
	for _, n := range numberRE.FindAllString(response, -1) {
		numbers[n] = true
	}
	kinds := make([]CopyKind, len(pieces))
	var text strings.Builder
	for i := 0; i < len(pieces); i++ {
		text.WriteString(pieces[i])
		so := text.String()
		open := strings.LastIndex(so, "<think>")
		if open < 0 || strings.LastIndex(so, "</think>") > open || strings.HasSuffix(so, "<think>") {
			continue // outside a thought, or the tag itself
		}
		p := strings.TrimLeft(pieces[i], " ")
		if isDigits(p) {
			// A number starts here: its digits run on while the pieces are digits with no
			// space before them.
			j := i + 1
			num := p
			for j < len(pieces) && isDigits(pieces[j]) {
				num += pieces[j]
				j++
			}
			if numbers[num] {
				kinds[i] = CopyFirstDigit
				if num[0] == '1' {
					kinds[i] = CopyLeadingOne
				}
				for k := i + 1; k < j; k++ {
					kinds[k] = CopyLaterDigit
				}
			}
			for k := i + 1; k < j; k++ {
				text.WriteString(pieces[k])
			}
			i = j - 1
			continue
		}
		r, _ := utf8.DecodeRuneInString(p)
		switch {
		case unicode.IsUpper(r) && strings.Contains(response, p) && !strings.Contains(prompt, p):
			kinds[i] = CopyNameStart
		case unicode.IsLower(r) && p == pieces[i] && i > 0 && (kinds[i-1] == CopyNameStart || kinds[i-1] == CopyNameRest):
			kinds[i] = CopyNameRest
		}
	}
	return kinds
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// turnCopyKinds classifies, with CopyKinds, the action tokens of every turn of d that follows
// a tool response: kinds[k][i] is what token i of turn k's action copies (nil for turn 0,
// which follows the prompt). tok must be the tokenizer d was encoded with.
func turnCopyKinds(d *mdp.Trajectory, tok *tokenizer.Tokenizer) [][]CopyKind {
	prompt := tok.Decode(d.Prompt)
	kinds := make([][]CopyKind, len(d.Turns))
	for k := 1; k < len(d.Turns); k++ {
		action := d.Turns[k].Action
		pieces := make([]string, len(action))
		for i, id := range action {
			pieces[i] = tok.Decode([]int{id})
		}
		kinds[k] = CopyKinds(pieces, tok.Decode(d.Turns[k-1].Observation), prompt)
	}
	return kinds
}

// CopiedNameTokens marks, per demonstration and token laid out as mdp.Flatten lays it out
// (prompt, then each turn's action and observation), the tokens of the agent's thoughts that
// copy a name out of the tool response before them: the tokens MeasureCopying measures as
// CopyNameStart and CopyNameRest. tok must be the tokenizer the demonstrations were encoded
// with.
func CopiedNameTokens(demos []*mdp.Trajectory, tok *tokenizer.Tokenizer) [][]bool {
	out := make([][]bool, len(demos))
	for i, d := range demos {
		marks := make([]bool, len(d.Prompt), len(d.Prompt)+d.ResponseLen())
		for k, kinds := range turnCopyKinds(d, tok) {
			turn := d.Turns[k]
			for j := range turn.Action {
				marks = append(marks, k > 0 && (kinds[j] == CopyNameStart || kinds[j] == CopyNameRest))
			}
			marks = append(marks, make([]bool, len(turn.Observation))...)
		}
		out[i] = marks
	}
	return out
}

// CopyStat is a policy's teacher-forced figures on the tokens of one CopyKind.
type CopyStat struct {
	N      int     // tokens
	P      float64 // mean probability of the demonstrated token
	Argmax float64 // share of the tokens that are the policy's most probable one
}

// MeasureCopying runs policy over each demonstration (teacher forcing: the demonstration's
// own tokens as context) and returns its figures on the copied tokens of every kind but
// CopyNone, with the number of demonstrations left out for being longer than the policy's
// context. tok must be the tokenizer the demonstrations were encoded with.
func MeasureCopying(ctx context.Context, policy *model.Model, tok *tokenizer.Tokenizer, demos []*mdp.Trajectory) (stats map[CopyKind]CopyStat, skipped int, err error) {
	ws := model.NewWorkspace()
	V := policy.Config.VocabSize
	logp := make([]float32, V) // (V,) one position's log-probabilities
	stats = map[CopyKind]CopyStat{}
	for _, d := range demos {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		// The episode's tokens (T,) and, per turn, where its action starts.
		ids := append([]int(nil), d.Prompt...)
		starts := make([]int, len(d.Turns))
		for k, turn := range d.Turns {
			starts[k] = len(ids)
			ids = append(ids, turn.Action...)
			ids = append(ids, turn.Observation...)
		}
		T := len(ids)
		if T > policy.Config.MaxPositionEmbeddings {
			skipped++
			continue
		}
		mask := make([]float32, T)
		for i := range mask {
			mask[i] = 1
		}
		logits := policy.ForwardLogits(ws, ids, mask, 1, T) // (1, T, V)
		for k, kinds := range turnCopyKinds(d, tok) {
			for i, kind := range kinds {
				if kind == CopyNone {
					continue
				}
				t := starts[k] + i           // the token's position; the logits at t-1 predict it
				row := logits[(t-1)*V : t*V] // (V,): the logits that predict token t
				tensor.LogSoftmaxForward(logp, row, 1, V)
				s := stats[kind]
				s.N++
				s.P += math.Exp(float64(logp[ids[t]]))
				if tensor.Argmax(row) == ids[t] {
					s.Argmax++
				}
				stats[kind] = s
			}
		}
	}
	for kind, s := range stats {
		s.P /= float64(s.N)
		s.Argmax /= float64(s.N)
		stats[kind] = s
	}
	return stats, skipped, nil
}

// OutputSimilarity is how alike a policy's output rows (lm_head, the embedding when tied) of
// two groups of tokens are: the mean cosine over the pairs within each group. Copying a
// token means giving it a higher logit than the others of its kind, and two rows with a
// cosine near 1 get nearly the same logit from any hidden state.
type OutputSimilarity struct {
	Digits     float64 // the number tokens (NumberTokens)
	NameStarts float64 // the tokens that begin a capitalised word (" Fak", "Rol")
	NDigits    int     // number tokens measured
	NNames     int     // name-start tokens measured
}

// OutputSimilarities measures policy's OutputSimilarity under tok.
func OutputSimilarities(policy *model.Model, tok *tokenizer.Tokenizer) OutputSimilarity {
	head := policy.Param("lm_head.weight")
	if head == nil {
		head = policy.Param("model.embed_tokens.weight")
	}
	C := policy.Config.HiddenSize
	number := NumberTokens(tok)
	var digits, names []int
	for id := range min(len(number), policy.Config.VocabSize) {
		piece := strings.TrimPrefix(tok.Decode([]int{id}), " ")
		r, _ := utf8.DecodeRuneInString(piece)
		switch {
		case number[id]:
			digits = append(digits, id)
		case len(piece) >= 2 && unicode.IsUpper(r) && isLetters(piece):
			names = append(names, id)
		}
	}
	// meanCos is the mean cosine over the pairs of ids' rows, each row's norm taken once.
	meanCos := func(ids []int) float64 {
		rows := make([][]float32, 0, len(ids)) // (n, C), the rows of non-zero norm
		norms := make([]float64, 0, len(ids))  // (n)
		for _, id := range ids {
			x := head.Data[id*C : (id+1)*C] // (C,)
			if nx := math.Sqrt(float64(tensor.Dot(x, x))); nx > 0 {
				rows, norms = append(rows, x), append(norms, nx)
			}
		}
		var sum float64
		var n int
		for i, x := range rows {
			for j := i + 1; j < len(rows); j++ {
				sum += float64(tensor.Dot(x, rows[j])) / (norms[i] * norms[j])
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return sum / float64(n)
	}
	return OutputSimilarity{Digits: meanCos(digits), NameStarts: meanCos(names), NDigits: len(digits), NNames: len(names)}
}

// isLetters reports whether s is letters only.
func isLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// CopyingReport is what CopyingOfRun measures of one policy on its run's demonstrations.
type CopyingReport struct {
	Stats      map[CopyKind]CopyStat // teacher-forced copying (MeasureCopying)
	Similarity OutputSimilarity      // output-row similarity of number and name tokens (OutputSimilarities)
	Used       int                   // demonstrations measured
	Skipped    int                   // of those, left out for being longer than the policy's context
	// CalcTurn is the free-running calculating turn (MeasureCalcTurn) from every
	// demonstrated calculation among the Used demonstrations, sampled as RL's rollouts are
	// (the run's temperature and filters, CalcTurnSamples per state); zero when the run
	// has no calculator.
	CalcTurn CalcTurnStats
	// AnswerTurn is the free-running answer turn after a calculation (MeasureAnswerTurn),
	// from every demonstrated answer of a calculator's result, sampled as CalcTurn is.
	AnswerTurn AnswerTurnStats
	// Answers are where the policy's greedy answers come from on each evaluation set
	// (EvalMetrics.Answers), by the set's name ("heldout", "unseen").
	Answers map[string]AnswerSources
}

// CalcTurnSamples is the number of sampled turns CopyingOfRun draws per calculating state.
const CalcTurnSamples = 8

// CopyingOfRun prepares the run of cfg (its worlds, tokenizer and demonstrations), loads the
// policy of modelDir and measures its copying (MeasureCopying), its calculating turn
// (MeasureCalcTurn) and its answer turn after a calculation (MeasureAnswerTurn) on the first
// n demonstrations (all when n <= 0), then where its answers come from on the run's
// evaluation sets (EvalMetrics.Answers). With unseen, the
// demonstrations are the scripted agent's on the evaluation world's questions instead (its
// habits and seed as in the run), whose names and numbers the policy never saw: there a name
// it writes is read, not recalled. modelDir may also be one of the run's checkpoint files
// (policyOfRun). A policy folder whose tokenizer is not the run's is refused.
func CopyingOfRun(ctx context.Context, cfg Config, modelDir string, n int, unseen bool) (CopyingReport, error) {
	var r CopyingReport
	setup, err := Prepare(ctx, cfg)
	if err != nil {
		return r, err
	}
	policy, err := policyOfRun(cfg, setup, modelDir)
	if err != nil {
		return r, err
	}
	demos, mistakes := setup.Demos, setup.DemoMistakes
	if unseen {
		if demos, mistakes, err = unseenDemos(ctx, setup, n); err != nil {
			return r, err
		}
	}
	if n > 0 && n < len(demos) {
		demos, mistakes = demos[:n], mistakes[:n]
	}
	r.Used = len(demos)
	if r.Stats, r.Skipped, err = MeasureCopying(ctx, policy, setup.Tokenizer, demos); err != nil {
		return r, err
	}
	r.Similarity = OutputSimilarities(policy, setup.Tokenizer)
	rl := cfg.RL
	sampler := model.Sampler{Temperature: rl.Temperature, TopP: rl.TopP, TopK: rl.TopK}
	stop := setup.Specials.TurnStops()
	r.CalcTurn, err = MeasureCalcTurn(ctx, policy, setup.Tokenizer, CalcStates(setup.Tokenizer, demos, mistakes),
		sampler, CalcTurnSamples, rl.MaxTurnTokens, stop, cfg.Seed)
	if err != nil {
		return r, err
	}
	r.AnswerTurn, err = MeasureAnswerTurn(ctx, policy, setup.Tokenizer, AnswerStates(setup.Tokenizer, demos, mistakes),
		sampler, CalcTurnSamples, rl.MaxTurnTokens, stop, cfg.Seed)
	if err != nil {
		return r, err
	}
	ec := EvalConfigFrom(rl, cfg.EvalBatch)
	ec.Workers = cfg.Workers
	r.Answers = map[string]AnswerSources{}
	for _, set := range setup.EvalSets {
		m, _, err := Evaluate(ctx, policy, setup.Tokenizer, setup.Specials, set.Problems, ec, "answer sources/"+set.Name)
		if err != nil {
			return r, err
		}
		r.Answers[set.Name] = *m.Answers
	}
	return r, nil
}

// policyOfRun loads the policy at path for the run of cfg: a policy folder (loadPolicyOf), or
// a checkpoint file the run wrote (RUN/checkpoints/step-N.ckpt, of SFT or of RL), whose
// policy parameters are read into the run's own architecture, so that a run's policy can be
// measured as it was at any saved step.
func policyOfRun(cfg Config, setup *Setup, path string) (*model.Model, error) {
	if !strings.HasSuffix(path, ".ckpt") {
		return loadPolicyOf(path, setup.Tokenizer)
	}
	policy, err := NewPolicy(cfg.Model, setup.Tokenizer, 2*MaxRow(cfg, setup), cfg.Seed)
	if err != nil {
		return nil, err
	}
	if err := LoadCheckpointPolicy(path, policy); err != nil {
		return nil, err
	}
	return policy, nil
}

// PolicyAtCheckpoint returns the policy a run's checkpoint file holds (RUN/checkpoints/
// step-N.ckpt, of SFT or of RL): the file keeps parameters alone, so the model folder dir (the
// run's SFT base or final policy) gives the architecture they are read into.
func PolicyAtCheckpoint(dir, path string) (*model.Model, error) {
	policy, err := model.Load(dir)
	if err != nil {
		return nil, err
	}
	if err := LoadCheckpointPolicy(path, policy); err != nil {
		return nil, err
	}
	return policy, nil
}

// LoadCheckpointPolicy reads the policy parameters of the checkpoint file at path into policy,
// whose shapes must be the checkpoint's.
func LoadCheckpointPolicy(path string, policy *model.Model) error {
	f, err := trainer.ReadCheckpointFile(path)
	if err != nil {
		return err
	}
	if err := trainer.LoadParams(f, path, "policy/", policy.Params); err != nil {
		return fmt.Errorf("%w (a checkpoint of another run's settings?)", err)
	}
	policy.MarkWeightsChanged()
	return nil
}

// unseenDemos plays the scripted agent, with the run's habits and seed, on the first n of the
// evaluation world's questions (all when n <= 0) and tokenises its demonstrations as the
// run's own are (tokenizeDemos).
func unseenDemos(ctx context.Context, setup *Setup, n int) ([]*mdp.Trajectory, [][]bool, error) {
	cfg := setup.Config
	tasks := setup.EvalWorld.Tasks
	if n > 0 && n < len(tasks) {
		tasks = tasks[:n]
	}
	qcfg := cfg.QAConfig()
	demos, _, err := world.Run(ctx, setup.EvalWorld, qcfg, setup.EvalTools, tasks, cfg.DemoHabits(), cfg.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("demonstrations on the evaluation world: %w", err)
	}
	trajs, mistakes := tokenizeDemos(demos, setup.Tokenizer, qcfg.PaysProcessRewards())
	return trajs, mistakes, nil
}

// AnswerSources is where the names a policy answers with, free-running and greedy, stand
// earlier in their episodes. A policy that reads answers a two-hop question with the name its
// second search returned, or its own note of it; one that recites writes a name it never saw
// in the episode. Teacher forcing (MeasureCopying) cannot see this: it shows the policy the
// demonstrated note, where free-running the policy must write and then copy its own.
type AnswerSources struct {
	Episodes   int `json:"episodes"`    // episodes run
	Names      int `json:"names"`       // of them, ended with an answer other than yes or no
	InQuestion int `json:"in_question"` // of Names: the answer stands in the prompt (a comparison names its candidates)
	Read       int `json:"read"`        // of Names: not in the prompt but in a tool response or a thought before the answer
	Invented   int `json:"invented"`    // of Names: nowhere earlier in the episode
}

// add counts b's episodes and answers in a.
func (a *AnswerSources) add(b AnswerSources) {
	a.Episodes += b.Episodes
	a.Names += b.Names
	a.InQuestion += b.InQuestion
	a.Read += b.Read
	a.Invented += b.Invented
}

// InventedShare is the share of the name answers written nowhere earlier in their episodes
// (0 with no name answer).
func (a AnswerSources) InventedShare() float64 {
	if a.Names == 0 {
		return 0
	}
	return float64(a.Invented) / float64(a.Names)
}

// AnswerSourcesOf classifies the final answers of episodes encoded with tok. An episode with no
// <answer> in its last turn (cut by a limit), or whose answer is yes or no as EM normalises it
// (qa.NormalizeAnswer), counts in Episodes only; the text compared is the answer's, exactly
// (spaces trimmed at its ends), against everything decoded before its <answer> tag.
func AnswerSourcesOf(episodes []*mdp.Trajectory, tok rollout.Encoder) AnswerSources {
	var a AnswerSources
	for _, d := range episodes {
		a.Episodes++
		if len(d.Turns) == 0 {
			continue
		}
		last := tok.Decode(d.Turns[len(d.Turns)-1].Action)
		answer, _ := qa.CheckAnswerTurn(last, false)
		if n := qa.NormalizeAnswer(answer); n == "" || n == "yes" || n == "no" {
			continue
		}
		a.Names++
		var before strings.Builder // the turns' text before the answer tag
		for _, turn := range d.Turns[:len(d.Turns)-1] {
			before.WriteString(tok.Decode(turn.Action))
			before.WriteString(tok.Decode(turn.Observation))
		}
		before.WriteString(last[:strings.LastIndex(last, "<answer>")])
		switch {
		case strings.Contains(tok.Decode(d.Prompt), answer):
			a.InQuestion++
		case strings.Contains(before.String(), answer):
			a.Read++
		default:
			a.Invented++
		}
	}
	return a
}
