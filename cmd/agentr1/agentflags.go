package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"agentr1/model"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
	"agentr1/tokenizer"
)

// agentFlags are the settings eval and chat share: which checkpoint acts, what it searches and
// the limits of an episode.
type agentFlags struct {
	model, corpus, retriever string
	// checkpoint is a run's checkpoint file that --model named (runCheckpoint): the policy at
	// that step, in the architecture and with the tokenizer of the model folder.
	checkpoint                 string
	topK, maxTurns, turnTokens int
	maxLen                     int
	think                      bool
	compute                    model.Compute
}

// computeHelp is the help of --compute, which bench, eval and chat share.
const computeHelp = "arithmetic of the weight-matrix products (projections, MLP, lm_head): f32, or bf16 for bfloat16 products as PyTorch runs a BF16 checkpoint on a CPU with AVX512_BF16 (activations rounded to bfloat16, float32 sums; up to twice f32's speed there, plain Go and slow elsewhere); bf16 needs a checkpoint stored in BF16"

// declareAgentFlags declares the shared flags; topK is the default of --topk.
func declareAgentFlags(fs *flag.FlagSet, a *agentFlags, topK int, topKHelp string) {
	fs.StringVar(&a.model, "model", "", "checkpoint folder: config.json, model.safetensors (or shards) and tokenizer.json (ours or a Hugging Face Qwen2/Qwen2.5/Qwen3); with --world-run also one of the run's checkpoint files, RUN/checkpoints/step-N.ckpt (the policy at that step)")
	fs.StringVar(&a.corpus, "corpus", "mhqa", "passages for BM25 search: mhqa (the embedded 19,719-passage corpus) or a FILE (mhqa or FlashRAG JSONL)")
	fs.StringVar(&a.retriever, "retriever", "", "URL of a Search-R1 retrieval service (POST /retrieve) to use instead of BM25, e.g. an e5/FAISS server")
	fs.IntVar(&a.topK, "topk", topK, topKHelp)
	fs.IntVar(&a.maxTurns, "max-turns", 5, "agent turns per question (with --world-run: the run's)")
	fs.IntVar(&a.turnTokens, "turn-tokens", 256, "generated tokens per turn (with --world-run: the run's)")
	fs.IntVar(&a.maxLen, "max-len", 0, fmt.Sprintf("prompt + response tokens per question (0: the model's max_position_embeddings, at most %d; with --world-run: the run's)", defaultMaxLen))
	fs.Var(&a.compute, "compute", computeHelp)
	fs.BoolVar(&a.think, "think", false, "require <think>...</think> in every turn for the format to count as valid (with --world-run: as the run did)")
}

// flagMin is an integer flag and the least value it accepts.
type flagMin struct {
	flag     string
	val, min int
}

// check refuses a missing --model and any shared flag below its least value (--topk below
// minTopK), then any of the command's own flags in more, naming the first one out of range.
func (a *agentFlags) check(minTopK int, more ...flagMin) error {
	if a.model == "" {
		return fmt.Errorf("%w: --model is required", errUsage)
	}
	if a.maxLen != 0 && a.maxLen < 16 {
		return fmt.Errorf("%w: --max-len %d, want >= 16 (or 0: the model's)", errUsage, a.maxLen)
	}
	for _, c := range append([]flagMin{{"topk", a.topK, minTopK}, {"max-turns", a.maxTurns, 1}, {"turn-tokens", a.turnTokens, 1}}, more...) {
		if c.val < c.min {
			return fmt.Errorf("%w: --%s %d, want >= %d", errUsage, c.flag, c.val, c.min)
		}
	}
	return nil
}

// defaultMaxLen bounds the length limit --max-len 0 takes from the model: enough for five
// turns of search results over the real corpora, and a decoder cache a laptop holds.
const defaultMaxLen = 4096

// runCheckpoint lets --model name one of a world run's checkpoint files (RUN/checkpoints/
// step-N.ckpt, of SFT or RL), so that the policy can be evaluated or asked as it was at that
// step. The file holds parameters alone: the run's SFT base folder gives the architecture and
// the tokenizer (the one its config.json names, else RUN/sft-base).
func (a *agentFlags) runCheckpoint(cfg pipeline.Config, runDir string) {
	if strings.HasSuffix(a.model, ".ckpt") {
		a.checkpoint, a.model = a.model, cmp.Or(cfg.BasePolicy, filepath.Join(runDir, "sft-base"))
	}
}

// policyName is the checkpoint the agent runs, as the user named it.
func (a *agentFlags) policyName() string { return cmp.Or(a.checkpoint, a.model) }

// loadAgent loads the checkpoint folder a.model for inference (model.LoadForInferenceWith: BF16
// weights stay BF16, packed once, multiplied in the arithmetic --compute names), or the policy of
// a.checkpoint in its architecture (pipeline.PolicyAtCheckpoint, float32), with the folder's
// tokenizer and special token ids. A
// zero a.maxLen becomes the model's max_position_embeddings (at most defaultMaxLen); a larger
// one given is lowered to it, saying so on stderr.
func loadAgent(a *agentFlags, stderr io.Writer) (*model.Model, *tokenizer.Tokenizer, trainer.Specials, error) {
	var sp trainer.Specials
	var policy *model.Model
	var err error
	switch {
	case a.checkpoint == "":
		policy, err = model.LoadForInferenceWith(a.model, a.compute)
	case a.compute != model.ComputeFloat32:
		err = fmt.Errorf("%w: --compute %s: a checkpoint file holds float32 parameters; --compute bf16 needs a checkpoint folder stored in BF16", errUsage, a.compute)
	default:
		policy, err = pipeline.PolicyAtCheckpoint(a.model, a.checkpoint)
	}
	if err != nil {
		return nil, nil, sp, err
	}
	limit := policy.Config.MaxPositionEmbeddings
	if a.maxLen == 0 {
		a.maxLen = min(limit, defaultMaxLen)
	}
	if a.maxLen > limit {
		fmt.Fprintf(stderr, "--max-len %d exceeds the model's max_position_embeddings; using %d\n", a.maxLen, limit)
		a.maxLen = limit
	}
	tok, sp, err := loadTokenizer(a.model, policy.Config.VocabSize)
	if err != nil {
		return nil, nil, sp, err
	}
	return policy, tok, sp, nil
}

// loadTokenizer reads the tokenizer.json of the checkpoint folder dir, checks that each of its
// ids has a row in the model's embedding of vocab rows (a tokenizer copied beside another model
// would otherwise stop the first forward pass with a panic on an id past the table) and returns
// it with the special tokens' ids, an error about either naming the file.
func loadTokenizer(dir string, vocab int) (*tokenizer.Tokenizer, trainer.Specials, error) {
	path := filepath.Join(dir, tokenizer.FileName)
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, trainer.Specials{}, err
	}
	if tok.VocabSize() > vocab {
		return nil, trainer.Specials{}, fmt.Errorf("%s: %d tokens, more than the %d of vocab_size in %s", path, tok.VocabSize(), vocab, filepath.Join(dir, "config.json"))
	}
	sp, err := pipeline.SpecialsOf(tok)
	if err != nil {
		return nil, sp, fmt.Errorf("%s: %w", path, err)
	}
	return tok, sp, nil
}
