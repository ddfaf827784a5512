package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"agentr1/model"
	"agentr1/rl/pipeline"
)

func init() {
	register(&command{
		name:    "sft",
		summary: "supervised warm start of a checkpoint on your own chat transcripts (JSONL: OpenAI messages or ChatML text)",
		usage: "agentr1 sft --data FILE --model DIR --out DIR [--steps N] [--batch N] [--lr X] [--seed N]\n" +
			"  e.g. agentr1 sft --data testdata/transcripts/sample.jsonl --model runs/X/final --out runs/mine --steps 20\n" +
			"  Each line of FILE is {\"messages\": [{\"role\": ..., \"content\": ..., \"tool_calls\": [...]}, ...], \"tools\": [...]}\n" +
			"  or {\"text\": \"<|im_start|>system\\n...<|im_end|>\\n...\"}. Transcripts are rendered with the model's\n" +
			"  tokenizer and Qwen2.5's chat template and cut as a rollout cuts an episode: assistant text is\n" +
			"  trained on, tool responses and later user turns weighted by --context-weight, the prompt not at\n" +
			"  all. The whole file is checked before training; OUT is a model folder that train --model and\n" +
			"  eval --model accept. The defaults are the generated world's warm start of a ~1M-parameter policy;\n" +
			"  a pretrained Qwen checkpoint wants a far smaller rate and fewer steps, e.g. --lr 1e-5 (verl's SFT\n" +
			"  default) --steps 200.",
		flags: func(fs *flag.FlagSet) { declareSFTFlags(fs, &sftArgs{}) },
		run:   runSFT,
	})
}

// sftArgs are the sft command's settings.
type sftArgs struct {
	data, model, out string
	seed             uint64
	cfg              pipeline.SFTConfig
}

// declareSFTFlags declares the flags, with the texts of train's --sft.* flags and
// pipeline.DefaultSFTConfig's values as defaults.
func declareSFTFlags(fs *flag.FlagSet, a *sftArgs) {
	a.cfg = pipeline.DefaultSFTConfig()
	fs.StringVar(&a.data, "data", "", "JSONL file of chat transcripts, one per line: {\"messages\": [...]} (OpenAI chat format, with tool_calls and tool messages) or {\"text\": \"...\"} (ChatML)")
	fs.StringVar(&a.model, "model", "", "checkpoint folder to start from: config.json, model.safetensors (or shards) and tokenizer.json (ours or a Hugging Face Qwen2/Qwen2.5/Qwen3)")
	fs.StringVar(&a.out, "out", "", "folder the trained model is written to (config.json, model.safetensors, tokenizer.json); must not hold a model already")
	fs.Uint64Var(&a.seed, "seed", 1, "seed of the data order")
	fs.IntVar(&a.cfg.Steps, "steps", a.cfg.Steps, "SFT optimiser steps (0: write the model unchanged)")
	fs.IntVar(&a.cfg.Batch, "batch", a.cfg.Batch, "transcripts per SFT step")
	fs.Float64Var(&a.cfg.LR, "lr", a.cfg.LR, trainUsage("sft.lr"))
	fs.IntVar(&a.cfg.WarmupSteps, "warmup-steps", a.cfg.WarmupSteps, trainUsage("sft.warmup-steps"))
	fs.TextVar(&a.cfg.Decay, "decay", a.cfg.Decay, trainUsage("sft.decay"))
	fs.Float64Var(&a.cfg.MinLRRatio, "min-lr-ratio", a.cfg.MinLRRatio, trainUsage("sft.min-lr-ratio"))
	fs.Float64Var(&a.cfg.WeightDecay, "weight-decay", a.cfg.WeightDecay, trainUsage("sft.weight-decay"))
	fs.Float64Var(&a.cfg.GradClip, "grad-clip", a.cfg.GradClip, trainUsage("sft.grad-clip"))
	fs.Float64Var(&a.cfg.ContextWeight, "context-weight", a.cfg.ContextWeight, trainUsage("sft.context-weight"))
}

func runSFT(args []string, stdout, stderr io.Writer) error {
	a := &sftArgs{}
	fs := newFlagSet(commands["sft"], stderr)
	declareSFTFlags(fs, a)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, f := range []struct{ name, val string }{{"data", a.data}, {"model", a.model}, {"out", a.out}} {
		if f.val == "" {
			return fmt.Errorf("%w: --%s is required", errUsage, f.name)
		}
	}
	if err := a.cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if _, err := os.Stat(filepath.Join(a.out, model.WeightsFile)); err == nil {
		return fmt.Errorf("%w: --out %s already holds a model; choose another folder or remove it", errUsage, a.out)
	}
	policy, err := model.Load(a.model)
	if err != nil {
		return err
	}
	tok, sp, err := loadTokenizer(a.model, policy.Config.VocabSize)
	if err != nil {
		return err
	}
	f, err := os.Open(a.data)
	if err != nil {
		return err
	}
	demos, err := pipeline.ReadTranscripts(f, a.data, tok, policy.Config.MaxPositionEmbeddings)
	f.Close()
	if err != nil {
		return err
	}
	agent, total := 0, 0
	for _, d := range demos {
		agent += d.AgentTokens()
		total += len(d.Prompt) + d.ResponseLen()
	}
	fmt.Fprintf(stdout, "sft of %s (%d parameters) on %d transcripts of %s (%d tokens, %d of them the agent's), %d steps of %d ...\n",
		a.model, policy.NumParams(), len(demos), a.data, total, agent, a.cfg.Steps, a.cfg.Batch)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	every := max(1, a.cfg.Steps/20)
	err = pipeline.SFT(ctx, policy, demos, a.cfg, sp.Pad, a.seed, func(m pipeline.SFTMetrics) {
		if m.Step == 1 || m.Step%every == 0 || m.Step == a.cfg.Steps {
			fmt.Fprintf(stdout, "step %d/%d  loss %.4f  lr %.2e  grad-norm %.3f\n", m.Step, a.cfg.Steps, float64(m.Loss), float64(m.LR), float64(m.GradNorm))
		}
	})
	if err != nil {
		return fmt.Errorf("%w (nothing written to %s)", err, a.out)
	}
	// The tokenizer first: the weights file marks the folder as a finished model.
	if err := tok.Save(a.out); err != nil {
		return err
	}
	if err := policy.Save(a.out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", a.out)
	return nil
}
