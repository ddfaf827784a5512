package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/mdp"
	"agentr1/rl/trainer"
)

// TestCopyKinds classifies the pieces of one thought after a tool response: the digits of a
// number the response holds (a leading 1 apart), the pieces of a name it holds that the
// prompt does not, and nothing outside <think> or that the response does not hold.
func TestCopyKinds(t *testing.T) {
	response := "Nipus Zabis founded Luma Bank in 1912. Luma Bank employs 378 people."
	prompt := "Question: Who founded Luma Bank?"
	pieces := []string{"<think>", "The", " founder", " is", " Nip", "us", " Z", "abis", ",", " in", " 1", "9", "1", "2",
		";", " 3", "7", "8", " and", " 4", "5", " people", " at", " Luma", "</think>", " 3", "7", "8", " Nip"}
	want := []CopyKind{CopyNone, CopyNone, CopyNone, CopyNone, CopyNameStart, CopyNameRest, CopyNameStart, CopyNameRest, CopyNone, CopyNone,
		CopyLeadingOne, CopyLaterDigit, CopyLaterDigit, CopyLaterDigit,
		CopyNone, CopyFirstDigit, CopyLaterDigit, CopyLaterDigit, CopyNone,
		CopyNone, CopyNone, // 45: not in the response
		CopyNone, CopyNone, CopyNone, // Luma: in the prompt
		CopyNone, CopyNone, CopyNone, CopyNone, CopyNone} // after </think>
	got := CopyKinds(pieces, response, prompt)
	if !slices.Equal(got, want) {
		for i := range pieces {
			if got[i] != want[i] {
				t.Errorf("piece %d %q: %v, want %v", i, pieces[i], got[i], want[i])
			}
		}
	}
	// A number of the response written as part of a longer one copies nothing.
	if got := CopyKinds([]string{"<think>", " 3", "7", "8", "9", "</think>"}, response, prompt); !slices.Equal(got, make([]CopyKind, 6)) {
		t.Errorf("3789: %v, want nothing copied", got)
	}
}

// TestMeasureCopying measures a tiny policy on its run's demonstrations: every kind counted is
// one CopyKinds finds, and the figures are probabilities.
func TestMeasureCopying(t *testing.T) {
	cfg := tinyConfig(t)
	s, p := tinySetupPolicy(t, cfg)
	stats, skipped, err := MeasureCopying(context.Background(), p, s.Tokenizer, s.Demos)
	if err != nil {
		t.Fatal(err)
	}
	want := map[CopyKind]int{}
	for _, d := range s.Demos {
		prompt := s.Tokenizer.Decode(d.Prompt)
		for k := 1; k < len(d.Turns); k++ {
			pieces := make([]string, len(d.Turns[k].Action))
			for i, id := range d.Turns[k].Action {
				pieces[i] = s.Tokenizer.Decode([]int{id})
			}
			for _, kind := range CopyKinds(pieces, s.Tokenizer.Decode(d.Turns[k-1].Observation), prompt) {
				if kind != CopyNone {
					want[kind]++
				}
			}
		}
	}
	if skipped != 0 || want[CopyNameStart] == 0 {
		t.Fatalf("skipped %d demonstrations, %d name pieces to measure: the fixture no longer tests this", skipped, want[CopyNameStart])
	}
	for kind, st := range stats {
		if st.N != want[kind] || st.P <= 0 || st.P > 1 || st.Argmax < 0 || st.Argmax > 1 {
			t.Errorf("%v: %+v, want %d tokens and probabilities", kind, st, want[kind])
		}
		delete(want, kind)
	}
	if len(want) > 0 {
		t.Errorf("kinds not measured: %v", want)
	}
}

// TestOutputSimilarities sets the digits' output rows alike and the names' apart, and checks
// the cosines it reads off them.
func TestOutputSimilarities(t *testing.T) {
	cfg := tinyConfig(t)
	s, p := tinySetupPolicy(t, cfg)
	head := p.Param("model.embed_tokens.weight")
	C := p.Config.HiddenSize
	number := NumberTokens(s.Tokenizer)
	for id := range p.Config.VocabSize {
		row := head.Data[id*C : (id+1)*C]
		clear(row)
		if number[id] {
			row[0], row[1] = 1, float32(id%2) // digits: cosine 1 or 1/√2 between any two
		} else {
			row[id%C] = 1 // the rest: cosine 0 unless their ids agree mod C
		}
	}
	sim := OutputSimilarities(p, s.Tokenizer)
	if sim.NDigits != 10 || sim.NNames == 0 {
		t.Fatalf("%d digits and %d name pieces; want 10 and some", sim.NDigits, sim.NNames)
	}
	// Of the 45 digit pairs, 20 agree in parity (cosine 1) and 25 do not (1/√2).
	if want := (20 + 25/math.Sqrt2) / 45; math.Abs(sim.Digits-want) > 1e-6 {
		t.Errorf("digits: mean cosine %v, want %v", sim.Digits, want)
	}
	if sim.NameStarts > 0.5 {
		t.Errorf("name pieces: mean cosine %v, want near 0", sim.NameStarts)
	}
}

// TestUnseenDemos checks that the unseen demonstrations are the evaluation world's: each
// prompt asks the matching evaluation question, and each has a mistake flag per turn.
func TestUnseenDemos(t *testing.T) {
	cfg := tinyConfig(t)
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	demos, mistakes, err := unseenDemos(context.Background(), s, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(demos) != n || len(mistakes) != n {
		t.Fatalf("%d demonstrations, %d mistake lists, want %d each", len(demos), len(mistakes), n)
	}
	for i, d := range demos {
		prompt := s.Tokenizer.Decode(d.Prompt)
		if q := s.EvalWorld.Tasks[i].Question.Question; !strings.Contains(prompt, q) {
			t.Errorf("demonstration %d: the prompt does not ask evaluation question %q:\n%s", i, q, prompt)
		}
		if q := s.TrainWorld.Tasks[i].Question.Question; strings.Contains(prompt, q) {
			t.Errorf("demonstration %d asks training question %q", i, q)
		}
		if len(mistakes[i]) != len(d.Turns) {
			t.Errorf("demonstration %d: %d mistake flags for %d turns", i, len(mistakes[i]), len(d.Turns))
		}
	}
}

// TestCopiedNameTokens checks the marks SFTConfig.NameWeight applies by: they line up with
// mdp.Flatten's tokens, fall only on agent tokens after a tool response, and every marked
// piece is one CopyKinds calls a copied name.
func TestCopiedNameTokens(t *testing.T) {
	cfg := tinyConfig(t)
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	demos := s.Demos[:min(40, len(s.Demos))]
	marks := CopiedNameTokens(demos, s.Tokenizer)
	if len(marks) != len(demos) {
		t.Fatalf("%d mark lists for %d demonstrations", len(marks), len(demos))
	}
	total := 0
	for i, d := range demos {
		row, err := mdp.Flatten(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(marks[i]) != len(row.Tokens) {
			t.Fatalf("demonstration %d: %d marks for %d tokens", i, len(marks[i]), len(row.Tokens))
		}
		pos := len(d.Prompt)
		for j := range pos {
			if marks[i][j] {
				t.Errorf("demonstration %d: prompt token %d marked", i, j)
			}
		}
		for k, turn := range d.Turns {
			for j, id := range turn.Action {
				if !marks[i][pos+j] {
					continue
				}
				total++
				if k == 0 {
					t.Errorf("demonstration %d: token %q of the first action marked, before any tool response", i, s.Tokenizer.Decode([]int{id}))
				}
			}
			pos += len(turn.Action)
			for j := range turn.Observation {
				if marks[i][pos+j] {
					t.Errorf("demonstration %d: observation token %d of turn %d marked", i, j, k)
				}
			}
			pos += len(turn.Observation)
		}
	}
	if total == 0 {
		t.Fatal("no token marked in 40 demonstrations: the thoughts copy names out of every search")
	}
}

// TestAnswerSourcesOf classifies hand-written episodes: an answer read in a tool response, one
// noted in the final thought only, one the question names, one invented, a yes and a cut
// episode with no answer.
func TestAnswerSourcesOf(t *testing.T) {
	tok := transcriptTokenizer(t) // byte-level: any text round-trips
	episode := func(prompt string, turns ...string) *mdp.Trajectory {
		d := &mdp.Trajectory{Prompt: tok.Encode(prompt)}
		for i := 0; i < len(turns); i += 2 {
			turn := mdp.Turn{Action: tok.Encode(turns[i])}
			if i+1 < len(turns) {
				turn.Observation = tok.Encode(turns[i+1])
			}
			d.Turns = append(d.Turns, turn)
		}
		return d
	}
	search := "<think>Find the founder.</think>\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"Luma Bank\"}}</tool_call>"
	twoHop := "Question: Who founded the bank that sponsors Kiro?"
	episodes := []*mdp.Trajectory{
		episode(twoHop, search, "Luma Bank was founded by Nipus Zabis.", "<think>done</think>\n<answer>Nipus Zabis</answer>"),
		episode(twoHop, "<think>The founder is Rol Fak.</think>\n<answer>Rol Fak</answer>"),
		episode("Question: Which is older, Luma Bank or Kiro?", "<think>done</think>\n<answer>Kiro</answer>"),
		episode(twoHop, search, "Luma Bank was founded by Nipus Zabis.", "<think>done</think>\n<answer>Nipus Mopis</answer>"),
		episode("Question: Is Kiro older than Luma Bank?", "<think>done</think>\n<answer>yes</answer>"),
		episode(twoHop, search, "Luma Bank was founded by Nipus Zabis.", "<think>The founder"),
	}
	want := AnswerSources{Episodes: 6, Names: 4, InQuestion: 1, Read: 2, Invented: 1}
	got := AnswerSourcesOf(episodes, tok)
	if got != want {
		t.Errorf("AnswerSourcesOf = %+v, want %+v", got, want)
	}
	if s := got.InventedShare(); s != 0.25 {
		t.Errorf("InventedShare = %g, want 1 of 4", s)
	}
	// The answer tag itself is not a source: the name written only there is invented.
	only := episode(twoHop, "<think>done</think>\n<answer>Rol Fak</answer>")
	if got := AnswerSourcesOf([]*mdp.Trajectory{only}, tok); got.Invented != 1 {
		t.Errorf("a name written only in the answer: %+v, want it invented", got)
	}
	// Yes and no are told as EM tells them, after normalisation: "No." is not a name.
	no := episode("Question: Is Kiro older than Luma Bank?", "<think>done</think>\n<answer>No.</answer>")
	if got := AnswerSourcesOf([]*mdp.Trajectory{no}, tok); got.Names != 0 {
		t.Errorf("the answer No.: %+v, want no name", got)
	}
}

// TestBrokenWarmStart checks the warning on a starting policy's evaluations: given when most
// name answers are invented on every set, with the counts, and not when one set reads, when a
// set has no name answers or when the sources are missing.
func TestBrokenWarmStart(t *testing.T) {
	eval := func(name string, names, invented int) *EvalMetrics {
		return &EvalMetrics{Name: name, Answers: &AnswerSources{Episodes: 100, Names: names, Read: names - invented, Invented: invented}}
	}
	broken := []*EvalMetrics{eval("sft/heldout", 89, 71), eval("sft/unseen", 87, 78)}
	msg := BrokenWarmStart(broken)
	for _, want := range []string{"71 of 89 on heldout", "78 of 87 on unseen", "RESULTS.md"} {
		if !strings.Contains(msg, want) {
			t.Errorf("warning %q does not say %q", msg, want)
		}
	}
	for name, evals := range map[string][]*EvalMetrics{
		"sound":             {eval("sft/heldout", 89, 3), eval("sft/unseen", 87, 8)},
		"one set reads":     {eval("sft/heldout", 89, 12), eval("sft/unseen", 87, 78)},
		"exactly half":      {eval("sft/heldout", 80, 40), eval("sft/unseen", 80, 40)},
		"no name answers":   {eval("sft/heldout", 0, 0), eval("sft/unseen", 87, 78)},
		"no answer sources": {{Name: "sft/heldout"}, eval("sft/unseen", 87, 78)},
		"no evaluations":    nil,
	} {
		if msg := BrokenWarmStart(evals); msg != "" {
			t.Errorf("%s: warning %q, want none", name, msg)
		}
	}
}

// TestEvaluateAnswerSources runs a tiny policy on its run's evaluation sets: Evaluate counts
// every episode once in the answer sources, gives every name answer one source, and counts
// what AnswerSourcesOf counts of the episodes it returns, over the set and in each group.
func TestEvaluateAnswerSources(t *testing.T) {
	cfg := tinyConfig(t)
	s, p := tinySetupPolicy(t, cfg)
	for _, set := range s.EvalSets {
		m, results, err := Evaluate(context.Background(), p, s.Tokenizer, s.Specials, set.Problems, EvalConfigFrom(cfg.RL, cfg.EvalBatch), "eval/"+set.Name)
		if err != nil {
			t.Fatal(err)
		}
		got := m.Answers
		if got == nil {
			t.Fatalf("%s: no answer sources", set.Name)
		}
		if got.Episodes != len(set.Problems) || got.Names > got.Episodes || got.InQuestion+got.Read+got.Invented != got.Names {
			t.Errorf("%s: %+v over %d problems", set.Name, *got, len(set.Problems))
		}
		episodes := make([]*mdp.Trajectory, len(results))
		for i, r := range results {
			episodes[i] = &r.Trajectory
		}
		if want := AnswerSourcesOf(episodes, s.Tokenizer); *got != want {
			t.Errorf("%s: Evaluate's answer sources %+v, AnswerSourcesOf of its episodes %+v", set.Name, *got, want)
		}
		// Each group counts its own episodes, and the types partition the set.
		var sum AnswerSources
		for k, g := range m.Groups {
			var eps []*mdp.Trajectory
			for i, pr := range set.Problems {
				if slices.Contains(groupKeys(pr), k) {
					eps = append(eps, episodes[i])
				}
			}
			if g.Answers == nil || *g.Answers != AnswerSourcesOf(eps, s.Tokenizer) {
				t.Errorf("%s: group %s: answer sources %v, want AnswerSourcesOf of its %d episodes", set.Name, k, g.Answers, len(eps))
				continue
			}
			if strings.HasPrefix(k, "type=") {
				sum.add(*g.Answers)
			}
		}
		if sum != *got {
			t.Errorf("%s: the types' answer sources add up to %+v, the set's are %+v", set.Name, sum, *got)
		}
	}
}

// TestPolicyOfRunCheckpoint reads a run's checkpoint file as a policy: the parameters are the
// checkpoint's, and a checkpoint without the policy's tensors is an error naming the file.
func TestPolicyOfRunCheckpoint(t *testing.T) {
	cfg := tinyConfig(t)
	s, p := tinySetupPolicy(t, cfg)
	for _, q := range p.Params {
		for i := range q.Data {
			q.Data[i] += 0.25 // away from the initial weights the loader builds first
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "step-000005.ckpt")
	f := &trainer.CheckpointFile{Step: 5, Tensors: trainer.AppendParams(nil, "policy/", p.Params)}
	if err := trainer.WriteCheckpointFile(path, f); err != nil {
		t.Fatal(err)
	}
	got, err := policyOfRun(cfg, s, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range got.Params {
		if !slices.Equal(q.Data, p.Params[i].Data) {
			t.Fatalf("parameter %s differs from the checkpoint's", q.Name)
		}
	}
	other := filepath.Join(dir, "critic.ckpt")
	f = &trainer.CheckpointFile{Step: 5, Tensors: trainer.AppendParams(nil, "critic/", p.Params)}
	if err := trainer.WriteCheckpointFile(other, f); err != nil {
		t.Fatal(err)
	}
	if _, err := policyOfRun(cfg, s, other); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("a checkpoint without policy tensors: %v, want an error naming %s", err, other)
	}
}
