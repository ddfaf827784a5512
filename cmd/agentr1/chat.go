package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/model"
	"agentr1/rl/pipeline"
	"agentr1/rl/rollout"
	"agentr1/tokenizer"
)

func init() {
	register(&command{
		name:    "chat",
		summary: "ask a checkpoint questions and watch it think, search, read and answer, turn by turn",
		usage: "agentr1 chat (--world-run RUN [--model DIR] [--world eval|train] | --model DIR [--corpus mhqa|FILE | --retriever URL]) [--sample N] [--temperature T]\n" +
			"  e.g. agentr1 chat --world-run runs/X                  (RUN/final over the run's unseen world; type :examples for questions)\n" +
			"       agentr1 chat --world-run runs/X --sample 3       (three of the world's evaluation questions, each with its gold answer)\n" +
			"       agentr1 chat --model ~/models/Qwen2.5-3B-Instruct --corpus mhqa\n" +
			"  Type a question, \":examples\" for questions it can answer (with their gold answers), or an empty line\n" +
			"  or \":quit\" to end.",
		flags: func(fs *flag.FlagSet) { declareChatFlags(fs, &chatArgs{}) },
		run:   runChat,
	})
}

// chatInput is where chat reads its questions; tests replace it.
var chatInput io.Reader = os.Stdin

// chatArgs are the chat command's settings.
type chatArgs struct {
	agentFlags
	worldRun, world string
	temperature     float64
	seed            uint64
	sample          int
}

func declareChatFlags(fs *flag.FlagSet, a *chatArgs) {
	declareAgentFlags(fs, &a.agentFlags, 0, "passages per search (0: 5, or the run's --search-top-k with --world-run)")
	fs.StringVar(&a.worldRun, "world-run", "", "run DIR of agentr1 train on the generated world: search that world's passages with the run's prompt and settings (its config.json); --model defaults to RUN/final")
	fs.StringVar(&a.world, "world", "eval", "with --world-run: which world's passages to search, eval (unseen names) or train")
	fs.Float64Var(&a.temperature, "temperature", 0, "sampling temperature (0: greedy)")
	fs.Uint64Var(&a.seed, "seed", 1, "seed of the sampler when --temperature > 0, and of the questions --sample and :examples pick")
	fs.IntVar(&a.sample, "sample", 0, "ask N questions it can answer and end: picked from the chosen world's evaluation questions (train: held-out, eval: unseen) with --world-run, else from the embedded HotpotQA sample over --corpus mhqa")
}

// chatExampleCount is how many questions :examples lists.
const chatExampleCount = 5

func runChat(args []string, stdout, stderr io.Writer) error {
	a := &chatArgs{}
	fs := newFlagSet(commands["chat"], stderr)
	declareChatFlags(fs, a)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var runCfg *pipeline.Config // the --world-run's settings
	if a.worldRun != "" {
		cfg, err := loadRunConfig(a.worldRun)
		if err != nil {
			return err
		}
		runCfg = &cfg
		if a.model == "" {
			a.model = filepath.Join(a.worldRun, "final")
		}
		a.runCheckpoint(cfg, a.worldRun)
		runLimits(fs, &a.agentFlags, cfg)
	}
	if err := a.check(0, flagMin{"sample", a.sample, 0}); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case a.temperature < 0:
		return fmt.Errorf("%w: --temperature %g, want >= 0", errUsage, a.temperature)
	case a.world != "eval" && a.world != "train":
		return fmt.Errorf("%w: --world %q: want eval or train", errUsage, a.world)
	}
	policy, tok, sp, err := loadAgent(&a.agentFlags, stderr)
	if err != nil {
		return err
	}
	qcfg, tools, examples, err := chatTools(a, runCfg)
	if err != nil {
		return err
	}
	if a.sample > 0 && len(examples) == 0 {
		return fmt.Errorf("%w: --sample needs questions the search can answer: --world-run RUN, or --corpus mhqa without --retriever", errUsage)
	}
	qcfg.Env.MaxTurns = a.maxTurns
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	s := &chatSession{
		dec:     policy.NewDecoder(1, a.maxLen),
		sampler: model.Sampler{Temperature: a.temperature, Greedy: a.temperature == 0},
		rng:     rand.New(rand.NewPCG(a.seed, 0)),
		tok:     tok,
		stops:   sp.TurnStops(),
		cfg:     a,
		out:     stdout,
	}
	pick := rand.New(rand.NewPCG(a.seed, 1)) // the example questions' own stream
	ask := func(q qa.Question) error {
		e, err := qa.New(qcfg, tools...)
		if err != nil {
			return err
		}
		return s.episode(ctx, e, q)
	}
	fmt.Fprintf(stdout, "%s (%d parameters), %s\n", a.policyName(), policy.NumParams(), chatSearchName(a))
	if a.sample > 0 {
		for _, q := range pickQuestions(examples, a.sample, pick) {
			fmt.Fprintf(stdout, "\nquestion> %s\n", q.Question)
			if err := ask(q); err != nil {
				return err
			}
		}
		return nil
	}
	return chatLoop(chatInput, stdout, examples, pick, ask)
}

// chatLoop reads questions from in until an empty line, "quit", ":quit" or EOF and has ask
// answer each; ":examples" lists a few of examples picked by pick, and an example asked back is
// scored against its gold answer. Any other line that starts with ":" is taken for a mistyped
// command and asked again, not sent to the policy as a question.
func chatLoop(in io.Reader, out io.Writer, examples []qa.Question, pick *rand.Rand, ask func(qa.Question) error) error {
	byText := map[string]qa.Question{}
	for _, q := range examples {
		byText[q.Question] = q
	}
	help := `empty line, EOF, "quit" or ":quit" ends`
	if len(examples) > 0 {
		help = `":examples" lists questions it can answer; ` + help
	}
	fmt.Fprintln(out, help)
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for {
		fmt.Fprint(out, "question> ")
		if !lines.Scan() {
			fmt.Fprintln(out)
			return lines.Err()
		}
		line := strings.TrimSpace(lines.Text())
		switch {
		case line == "" || line == "quit" || line == ":quit":
			return nil
		case line == ":examples":
			printExamples(out, pickQuestions(examples, chatExampleCount, pick))
			continue
		case strings.HasPrefix(line, ":"):
			fmt.Fprintf(out, "unknown command %s: %s\n", line, help)
			continue
		}
		q, known := byText[line]
		if !known {
			q = qa.Question{ID: "chat", Question: line}
		}
		if err := ask(q); err != nil {
			return err
		}
	}
}

// pickQuestions returns n of qs (all when there are fewer) in a random order drawn from rng.
func pickQuestions(qs []qa.Question, n int, rng *rand.Rand) []qa.Question {
	out := make([]qa.Question, 0, min(n, len(qs)))
	for _, i := range rng.Perm(len(qs))[:min(n, len(qs))] {
		out = append(out, qs[i])
	}
	return out
}

// printExamples lists example questions with their gold answers, or says there are none.
func printExamples(w io.Writer, qs []qa.Question) {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no example questions for this search: they come from --world-run's world or, over --corpus mhqa, the embedded HotpotQA sample")
		return
	}
	for _, q := range qs {
		fmt.Fprintf(w, "  %s   (gold: %s)\n", q.Question, strings.Join(q.Answers, " / "))
	}
}

// chatSearchName describes the search tool for the banner.
func chatSearchName(a *chatArgs) string {
	switch {
	case a.worldRun != "":
		return "search over the " + a.world + " world of " + a.worldRun
	case a.retriever != "":
		return "search via " + a.retriever
	}
	return "BM25 search over " + a.corpus
}

// chatTools returns the QA configuration, the search tool and the questions that search can
// answer (for --sample and :examples): the generated world of a run (runCfg, from
// --world-run, with the run's prompt and settings) and its evaluation questions, or a remote retriever or
// BM25 over --corpus (both through eval's evalTools), with the embedded HotpotQA sample when
// the corpus is mhqa, which holds its passages.
func chatTools(a *chatArgs, runCfg *pipeline.Config) (qa.Config, []env.Tool, []qa.Question, error) {
	if runCfg == nil {
		if a.topK == 0 {
			a.topK = 5
		}
		qcfg := qa.DefaultConfig()
		qcfg.RequireThink = a.think
		tools, err := evalTools(&a.agentFlags)
		if err != nil {
			return qcfg, nil, nil, err
		}
		var examples []qa.Question
		if a.retriever == "" && a.corpus == "mhqa" {
			if examples, err = qa.LoadEmbedded("hotpotqa"); err != nil {
				return qcfg, nil, nil, err
			}
		}
		return qcfg, tools, examples, nil
	}
	sets, err := worldSets(*runCfg)
	if err != nil {
		return qa.Config{}, nil, nil, fmt.Errorf("--world-run %s: %w", a.worldRun, err)
	}
	set := worldSetOf(sets, a.world)
	tools, err := pipeline.BuildTools(runCfg.Tools, set.world.Passages, a.topK, runCfg.Workers)
	if err != nil {
		return qa.Config{}, nil, nil, fmt.Errorf("--world-run %s: %w", a.worldRun, err)
	}
	qcfg := runCfg.QAConfig()
	qcfg.RequireThink = a.think
	return qcfg, tools, set.questions, nil
}

// chatSession decodes one question at a time on a one-row decoder, printing as it goes.
type chatSession struct {
	dec     rollout.Decoder
	sampler rollout.Sampler
	rng     *rand.Rand
	tok     *tokenizer.Tokenizer
	stops   []int // token ids ending a turn: `</tool_call>` and `<|im_end|>`
	cfg     *chatArgs
	out     io.Writer
}

// flusher is implemented by buffered terminals (bufio.Writer); chat flushes after each token.
type flusher interface{ Flush() error }

// episode answers q: it mirrors rollout.Run for one row (the same stop tokens, turn and
// length limits, and the turn's text handed to the environment including its stop token; the
// stop token and the observation are then fed to the decoder together), printing each token
// as it is generated and each observation prefixed by "tool> ", then the extracted answer and,
// when q has gold answers, them with the answer's EM and F1.
func (s *chatSession) episode(ctx context.Context, e *qa.Env, q qa.Question) error {
	prompt := s.tok.Encode(e.Reset(q))
	s.dec.Reset(0)
	if len(prompt)+1 >= s.cfg.maxLen {
		fmt.Fprintf(s.out, "the prompt is %d tokens, over --max-len %d\n", len(prompt), s.cfg.maxLen)
		return nil
	}
	logits := slices.Clone(s.dec.Append(0, prompt)) // (V)
	cut := ""
	for turn := 1; ; turn++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "\n[turn %d]\n", turn)
		cut = ""
		var ids []int // this turn's generated tokens
		printed := 0  // bytes of the turn's text already printed
		pending, stopped, lengthCut := -1, false, false
		for {
			t, _ := s.sampler.Sample(logits, s.rng)
			ids = append(ids, t)
			// Print the bytes the new token completes (a token may end inside a UTF-8 rune).
			text := s.tok.DecodeBytes(ids)
			s.out.Write(text[printed:])
			printed = len(text)
			if f, ok := s.out.(flusher); ok {
				f.Flush()
			}
			pending = t
			if slices.Contains(s.stops, t) {
				stopped = true
				break
			}
			if s.dec.Len(0)+1 >= s.cfg.maxLen {
				lengthCut = true
				break
			}
			if len(ids) >= s.cfg.turnTokens {
				break
			}
			logits = append(logits[:0], s.dec.Step([]int{0}, []int{t})[0]...)
		}
		fmt.Fprintln(s.out)
		if lengthCut {
			cut = "--max-len reached"
			break
		}
		if !stopped {
			cut = "--turn-tokens reached in the last turn"
		}
		st := e.Step(ctx, s.tok.Decode(ids))
		if st.Done {
			break
		}
		if turn >= s.cfg.maxTurns {
			cut = "--max-turns reached"
			break
		}
		printObservation(s.out, st.Observation)
		obs := s.tok.Encode(st.Observation)
		if s.dec.Len(0)+1+len(obs)+1 > s.cfg.maxLen {
			cut = "--max-len reached"
			break
		}
		logits = append(logits[:0], s.dec.Append(0, append([]int{pending}, obs...))...)
	}
	sc := e.Score()
	answer := sc.Answer
	if answer == "" {
		answer = "(none)"
	}
	fmt.Fprintf(s.out, "answer> %s\n", answer)
	note := fmt.Sprintf("(%d turns, %d searches, %d tool errors", sc.Turns, sc.Searches, sc.ToolErrors+sc.FormatErrors)
	if cut == "" && sc.CutMaxTurns {
		cut = "--max-turns reached"
	}
	if cut != "" {
		note += "; " + cut
	}
	fmt.Fprintln(s.out, note+")")
	if len(q.Answers) > 0 {
		fmt.Fprintf(s.out, "gold> %s  (EM %.0f, F1 %.2f)\n", strings.Join(q.Answers, " / "), sc.EM, sc.F1)
	}
	return nil
}

// printObservation prints the environment's observation (the tool results wrapped in the
// chat template) with every line prefixed by "tool> ", leaving out the template's markers
// (<|im_end|>, <|im_start|>user, <|im_start|>assistant), which the model still receives.
func printObservation(w io.Writer, obs string) {
	for line := range strings.SplitSeq(strings.TrimRight(obs, "\n"), "\n") {
		line = strings.TrimSuffix(line, "<|im_end|>")
		if line == "" || strings.HasPrefix(line, "<|im_start|>") {
			continue
		}
		fmt.Fprintf(w, "tool> %s\n", line)
	}
}
