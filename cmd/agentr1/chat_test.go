package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/env/qa"
	"agentr1/model"
	"agentr1/report"
	"agentr1/rl/pipeline"
	"agentr1/tokenizer"
)

// chatCorpus is a three-passage corpus in FlashRAG JSONL form.
const chatCorpus = `{"id": "p1", "contents": "\"Paris\"\nParis is the capital of France."}
{"id": "p2", "contents": "\"Berlin\"\nBerlin is the capital of Germany."}
{"id": "p3", "contents": "\"Rome\"\nRome is the capital of Italy."}
`

// chatFixture writes a corpus file and a checkpoint folder holding a tiny random policy and a
// tokenizer trained on a few strings; it returns the folder, the corpus and the tokenizer.
func chatFixture(t *testing.T) (modelDir, corpus string, tok *tokenizer.Tokenizer) {
	t.Helper()
	dir := t.TempDir()
	corpus = filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(corpus, []byte(chatCorpus), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := pipeline.TrainTokenizer([]string{
		"What is the capital of France? Paris is the capital of France.",
		`<tool_call>{"name": "search", "arguments": {"query": "capital"}}</tool_call>`,
		"<think>I should search.</think><answer>Paris</answer>",
	}, 300, 0)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := pipeline.NewPolicy(pipeline.ModelConfig{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 32, InitRange: 0.02}, tok, 2048, 1)
	if err != nil {
		t.Fatal(err)
	}
	modelDir = filepath.Join(dir, "model")
	if err := policy.Save(modelDir); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(modelDir); err != nil {
		t.Fatal(err)
	}
	return modelDir, corpus, tok
}

func TestChatCommand(t *testing.T) {
	modelDir, corpus, _ := chatFixture(t)
	runDir := t.TempDir()
	if err := writeJSONFile(filepath.Join(runDir, report.ConfigFile), pipeline.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	old := chatInput
	t.Cleanup(func() { chatInput = old })
	for _, tc := range []struct {
		name  string
		input string
		args  []string
		code  int
		want  []string // substrings of stdout (or stderr for usage errors), in order
	}{
		{"two questions then EOF", "What is the capital of France?\nWho founded Rome?\n",
			[]string{"--model", modelDir, "--corpus", corpus, "--turn-tokens", "4", "--max-turns", "2"}, 0,
			[]string{"question> ", "[turn 1]", "answer> ", "question> ", "[turn 1]", "answer> ", "question> \n"}},
		{"quit ends", "quit\nnever asked\n",
			[]string{"--model", modelDir, "--corpus", corpus}, 0, []string{"question> "}},
		{":quit ends", ":quit\nnever asked\n",
			[]string{"--model", modelDir, "--corpus", corpus}, 0, []string{"question> "}},
		{"unknown command", ":exmples\n:quit\n",
			[]string{"--model", modelDir, "--corpus", corpus}, 0, []string{"question> ", "unknown command :exmples", "question> "}},
		{"sampling", "capital?\n",
			[]string{"--model", modelDir, "--corpus", corpus, "--turn-tokens", "3", "--temperature", "0.7", "--seed", "3"}, 0,
			[]string{"[turn 1]", "answer> "}},
		{"world run", "Who is it?\n",
			[]string{"--model", modelDir, "--world-run", runDir, "--turn-tokens", "2"}, 0,
			[]string{"search over the eval world of " + runDir, "[turn 1]", "answer> "}},
		{"world run without config", "", []string{"--model", modelDir, "--world-run", t.TempDir()}, 1, nil},
		{"missing model", "", []string{"--corpus", corpus}, 2, []string{"--model is required", "usage: agentr1 chat"}},
		{"bad world", "", []string{"--model", modelDir, "--world", "moon"}, 2, []string{"--world"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chatInput = strings.NewReader(tc.input)
			var out, errOut bytes.Buffer
			code := run(append([]string{"chat"}, tc.args...), &out, &errOut)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d; stdout:\n%s\nstderr:\n%s", tc.name, code, tc.code, out.String(), errOut.String())
			}
			got := out.String()
			if tc.code == 2 {
				got = errOut.String()
			}
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%s: output lacks %q (in order); got:\n%s", tc.name, w, got)
				}
				rest = rest[i+len(w):]
			}
			if (strings.Contains(tc.name, "quit ends") || tc.name == "unknown command") && strings.Contains(got, "[turn") {
				t.Errorf("%s: a turn ran after quit:\n%s", tc.name, got)
			}
		})
	}
}

// scriptDecoder is a rollout.Decoder whose logits pick the next token of a script: each call
// returning logits (Append or Step) advances one token.
type scriptDecoder struct {
	script []int // token ids the "model" generates, in order
	next   int
	vocab  int
	n      int // tokens fed
}

func (d *scriptDecoder) Reset(int) { d.n = 0 }
func (d *scriptDecoder) Len(int) int {
	return d.n
}
func (d *scriptDecoder) Append(_ int, tokens []int) []float32 {
	d.n += len(tokens)
	return d.logits()
}
func (d *scriptDecoder) Step(_ []int, tokens []int) [][]float32 {
	d.n += len(tokens)
	return [][]float32{d.logits()}
}
func (d *scriptDecoder) logits() []float32 {
	l := make([]float32, d.vocab) // (V) one-hot on the next scripted token
	if d.next < len(d.script) {
		l[d.script[d.next]] = 1
		d.next++
	}
	return l
}

func TestChatEpisodeToolTurn(t *testing.T) {
	_, corpus, tok := chatFixture(t)
	a := &chatArgs{agentFlags: agentFlags{corpus: corpus, maxTurns: 3, turnTokens: 200, maxLen: 4096}}
	qcfg, tools, _, err := chatTools(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	qcfg.Env.MaxTurns = a.maxTurns
	turn1 := "<think>search</think>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"capital of France\"}}\n</tool_call>"
	turn2 := "<think>found</think>\n<answer>Paris</answer><|im_end|>"
	script := append(tok.Encode(turn1), tok.Encode(turn2)...)
	for _, tc := range []struct {
		name      string
		maxTurns  int
		want      []string
		wantNotIn string
	}{
		{"search then answer", 3, []string{"[turn 1]", turn1, "tool> ", "Paris is the capital of France.", "[turn 2]", turn2, "answer> Paris", "2 turns, 1 searches"}, "tool> <|im_"},
		{"cut at one turn", 1, []string{"[turn 1]", turn1, "answer> (none)", "--max-turns reached"}, "[turn 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.maxTurns = tc.maxTurns
			qcfg.Env.MaxTurns = tc.maxTurns
			sp, err := pipeline.SpecialsOf(tok)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			s := &chatSession{
				dec: &scriptDecoder{script: script, vocab: tok.VocabSize()}, sampler: model.Sampler{Greedy: true},
				rng: rand.New(rand.NewPCG(1, 0)), tok: tok, stops: sp.TurnStops(), cfg: a, out: &out,
			}
			e, err := qa.New(qcfg, tools...)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.episode(context.Background(), e, qa.Question{ID: "q", Question: "What is the capital of France?", Answers: []string{"Paris"}}); err != nil {
				t.Fatal(err)
			}
			got, rest := out.String(), out.String()
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%s: output lacks %q (in order); got:\n%s", tc.name, w, got)
				}
				rest = rest[i+len(w):]
			}
			if tc.wantNotIn != "" && strings.Contains(got, tc.wantNotIn) {
				t.Errorf("%s: output has %q:\n%s", tc.name, tc.wantNotIn, got)
			}
		})
	}
}
