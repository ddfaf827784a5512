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
	"agentr1/env/world"
	"agentr1/model"
	"agentr1/report"
	"agentr1/rl/pipeline"
	"agentr1/rl/rollout"
	"agentr1/tokenizer"
)

func init() {
	register(&command{
		name:    "chat",
		summary: "ask a checkpoint questions and watch it think, search, read and answer, turn by turn",
		usage: "agentr1 chat --model DIR [--corpus mhqa|FILE | --retriever URL | --world-run RUN] [--max-turns N] [--temperature T]\n" +
			"  e.g. agentr1 chat --model ~/models/Qwen2.5-3B-Instruct --corpus mhqa\n" +
			"       agentr1 chat --model runs/X/final --world-run runs/X",
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
}

func declareChatFlags(fs *flag.FlagSet, a *chatArgs) {
	declareAgentFlags(fs, &a.agentFlags, 0, "passages per search (0: 5, or the run's SearchTopK with --world-run)")
	fs.StringVar(&a.worldRun, "world-run", "", "run DIR of agentr1 train on the generated world: search that world's passages with the run's prompt and settings (its config.json)")
	fs.StringVar(&a.world, "world", "eval", "with --world-run: which world's passages to search, eval (unseen names) or train")
	fs.Float64Var(&a.temperature, "temperature", 0, "sampling temperature (0: greedy)")
	fs.Uint64Var(&a.seed, "seed", 1, "seed of the sampler when --temperature > 0")
}

func runChat(args []string, stdout, stderr io.Writer) error {
	a := &chatArgs{}
	fs := newFlagSet(commands["chat"], stderr)
	declareChatFlags(fs, a)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := a.check(0); err != nil {
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
	qcfg, tools, err := chatTools(a)
	if err != nil {
		return err
	}
	qcfg.Env.MaxTurns = a.maxTurns
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	s := &chatSession{
		dec:     policy.NewDecoder(1, a.maxLen),
		sampler: model.Sampler{Temperature: a.temperature, Greedy: a.temperature == 0},
		rng:     rand.New(rand.NewPCG(a.seed, 0)),
		tok:     tok,
		stops:   []int{sp.ToolEnd, sp.ImEnd},
		cfg:     a,
		out:     stdout,
	}
	fmt.Fprintf(stdout, "%s (%d parameters), %s; empty line, EOF or \"quit\" ends\n", a.model, policy.NumParams(), chatSearchName(a))
	in := bufio.NewScanner(chatInput)
	in.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for {
		fmt.Fprint(stdout, "question> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "" || line == "quit" {
			return nil
		}
		e, err := qa.New(qcfg, tools...)
		if err != nil {
			return err
		}
		if err := s.episode(ctx, e, qa.Question{ID: "chat", Question: line}); err != nil {
			return err
		}
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

// chatTools returns the QA configuration and the search tool: the generated world of a run
// (--world-run, with the run's prompt and settings), a remote retriever, or BM25 over --corpus
// (both through eval's evalTools).
func chatTools(a *chatArgs) (qa.Config, []env.Tool, error) {
	if a.worldRun == "" {
		if a.topK == 0 {
			a.topK = 5
		}
		qcfg := qa.DefaultConfig()
		qcfg.RequireThink = a.think
		tools, err := evalTools(&a.agentFlags)
		return qcfg, tools, err
	}
	cfg := pipeline.DefaultConfig()
	if err := loadConfigFile(filepath.Join(a.worldRun, report.ConfigFile), &cfg); err != nil {
		return qa.Config{}, nil, fmt.Errorf("--world-run: %w", err)
	}
	wc := cfg.EvalWorld
	if a.world == "train" {
		wc = cfg.TrainWorld
	}
	w, err := world.New(wc)
	if err != nil {
		return qa.Config{}, nil, fmt.Errorf("--world-run %s: %s world: %w", a.worldRun, a.world, err)
	}
	if a.topK == 0 {
		a.topK = cfg.SearchTopK
	}
	tools, err := pipeline.SearchTools(w.Passages, a.topK, cfg.Workers)
	if err != nil {
		return qa.Config{}, nil, fmt.Errorf("--world-run %s: %w", a.worldRun, err)
	}
	return cfg.QAConfig(), tools, nil
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
// as it is generated and each observation prefixed by "tool> ", then the extracted answer.
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
