package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/search"
	"agentr1/env/world"
	"agentr1/internal/atomicfile"
	"agentr1/internal/verlexport"
	"agentr1/rl/pipeline"
)

func init() {
	c := &command{
		name:    "export",
		summary: "write questions as a verl RL dataset (train.parquet, validation.parquet) to train a large model on GPUs",
		usage: "agentr1 export verl --data hotpotqa|2wiki|musique|world|FILE --out DIR [--held-out N] [--topk K] [--tool-schema=false]\n" +
			"  e.g. agentr1 export verl --data hotpotqa --out data/verl/hotpotqa\n" +
			"       agentr1 export verl --data world --out data/verl/world   (also writes the world's corpus.jsonl)\n" +
			"       agentr1 export verl --data 2wiki --tool-schema=false --out data/verl/2wiki   (for verl's tool agent loop, which adds the schema)\n" +
			"  The last --held-out questions form validation.parquet, the others train.parquet, as\n" +
			"  `agentr1 train --data` splits them. docs/SCALING.md says how verl takes them.",
	}
	c.flags = exportFlags(new(exportOptions))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 || args[0] != "verl" {
			return fmt.Errorf("%w: the only format is \"verl\"", errUsage)
		}
		var opt exportOptions
		fs := newFlagSet(c, stderr)
		exportFlags(&opt)(fs)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		return runExportVerl(opt, stdout)
	}
	register(c)
}

// exportOptions are the settings of `agentr1 export verl`.
type exportOptions struct {
	data, out string
	heldOut   int
	topK      int  // 0: the default of the data (see exportFlags)
	schema    bool // the system message holds the tool schema
}

func exportFlags(opt *exportOptions) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.StringVar(&opt.data, "data", "", "questions: hotpotqa, 2wiki, musique (embedded samples), world (the default run's training world) or a FILE (mhqa JSONL, FlashRAG JSONL with golden_answers, or HotpotQA JSON)")
		fs.StringVar(&opt.out, "out", "", "folder to write train.parquet and validation.parquet to (created if missing)")
		fs.IntVar(&opt.heldOut, "held-out", pipeline.DefaultConfig().HeldOut, "the last N questions form the validation file (at least one question stays in train)")
		fs.IntVar(&opt.topK, "topk", 0, fmt.Sprintf("passages per search, as the tool's description in the system prompt states it (0: %d for real data as Agent-R1, the default run's %d for world)",
			search.DefaultTopK, pipeline.DefaultConfig().SearchTopK))
		fs.BoolVar(&opt.schema, "tool-schema", true, "end the system message with the search tool's schema in Qwen2.5's <tools> block, as agentr1 does (false: the instructions alone, for a rollout that renders its tools' schemas through the chat template, as verl's tool agent loop does)")
	}
}

// runExportVerl writes the questions of opt.data as verl's train and validation Parquet files,
// and for the generated world also the passages its search tool must serve.
func runExportVerl(opt exportOptions, stdout io.Writer) error {
	switch {
	case opt.data == "":
		return fmt.Errorf("%w: --data is required", errUsage)
	case opt.out == "":
		return fmt.Errorf("%w: --out is required", errUsage)
	case opt.heldOut < 1:
		return fmt.Errorf("%w: --held-out %d: want at least 1 (the validation file must hold a question)", errUsage, opt.heldOut)
	case opt.topK < 0:
		return fmt.Errorf("%w: --topk %d: want 1 or more (0: the data's default)", errUsage, opt.topK)
	}
	qs, passages, topK, err := exportQuestions(opt.data)
	if err != nil {
		return err
	}
	if opt.topK > 0 {
		topK = opt.topK
	}
	if len(qs) < 2 {
		return fmt.Errorf("--data %s: %d question; want at least 2 (one to train on, one to validate)", opt.data, len(qs))
	}
	held := min(opt.heldOut, len(qs)-1)
	trainQs, validQs := qs[:len(qs)-held], qs[len(qs)-held:]

	// The system message agentr1 gives a pretrained model (qa.Env's default): the instructions
	// and the search tool's schema in Qwen2.5's <tools> block. The schema needs only top-k.
	tools := []env.Tool{&search.Tool{TopK: topK}}
	system := qa.InstructionsFor(tools)
	if opt.schema {
		system = qa.SystemPrompt(system, tools)
	}
	source := strings.TrimSuffix(filepath.Base(opt.data), filepath.Ext(opt.data))

	if err := os.MkdirAll(opt.out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	files := []struct {
		name, split string
		qs          []qa.Question
	}{
		{"train.parquet", "train", trainQs},
		{"validation.parquet", "validation", validQs},
	}
	for _, f := range files {
		path := filepath.Join(opt.out, f.name)
		if err := verlexport.WriteFile(path, verlexport.Rows(f.qs, system, f.split, source)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d questions\n", path, len(f.qs))
	}
	if passages != nil {
		path := filepath.Join(opt.out, "corpus.jsonl")
		if err := writeCorpus(path, passages); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d passages; serve them with: agentr1 serve search --corpus %s\n", path, len(passages), path)
	} else {
		fmt.Fprintln(stdout, "serve the passages with: agentr1 serve search --corpus mhqa (or the FILE of your corpus)")
	}
	return nil
}

// exportQuestions returns the questions named by --data, the passages to write beside them
// (the generated world's; nil for real data, whose corpus is the embedded mhqa or the user's
// own) and the search top-k agentr1 uses on them.
func exportQuestions(data string) ([]qa.Question, []env.Passage, int, error) {
	if !pipeline.IsWorldData(data) {
		if !slices.Contains(trainDataSets, data) {
			if st, err := os.Stat(data); err != nil || st.IsDir() {
				if err == nil {
					err = fmt.Errorf("%s is a folder", data)
				}
				return nil, nil, 0, fmt.Errorf("%w: --data %q: want %s or a question FILE (not a readable file: %v)", errUsage, data, strings.Join(trainDataSets, ", "), err)
			}
		}
		qs, err := loadQuestions(data)
		if err != nil {
			return nil, nil, 0, err
		}
		return qs, nil, search.DefaultTopK, nil
	}
	cfg := pipeline.DefaultConfig()
	w, err := world.New(cfg.TrainWorld)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("--data world: %w", err)
	}
	return w.Questions(), w.Passages, cfg.SearchTopK, nil
}

// writeCorpus writes passages as the JSONL corpus `agentr1 serve search --corpus` and
// search.LoadCorpus read: one {"id", "title", "text"} a line.
func writeCorpus(path string, passages []env.Passage) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, p := range passages {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
		return nil
	})
}
