package main

import (
	"context"
	"fmt"

	"agentr1/env/search"
	"agentr1/model"
	"agentr1/rl/pipeline"
)

// runRealData is `agentr1 train --data D --model DIR`: RL of a pretrained policy on real
// multi-hop questions, searching a passage corpus with BM25. There is no generated world and no
// SFT (there are no demonstrations of real questions, and a pretrained model needs no warm
// start); the last --held-out questions are evaluated before and after RL.
func runRealData(ctx context.Context, a *trainArgs, run *trainRun) (*pipeline.Result, error) {
	cfg := a.cfg
	qs, err := loadQuestions(cfg.Data)
	if err != nil {
		return nil, err
	}
	policy, err := model.Load(cfg.InitModel)
	if err != nil {
		return nil, err
	}
	if limit := policy.Config.MaxPositionEmbeddings; cfg.RL.MaxLen > limit {
		return nil, fmt.Errorf("--rl.max-len %d exceeds the model's max_position_embeddings %d (%s)", cfg.RL.MaxLen, limit, cfg.InitModel)
	}
	// The checkpoints' storage type is settled before the run, so a folder whose weights
	// cannot be read for it fails now rather than after training.
	dtype, err := pipeline.SaveDtypeOf(cfg)
	if err != nil {
		return nil, err
	}
	tok, _, err := loadTokenizer(cfg.InitModel, policy.Config.VocabSize)
	if err != nil {
		return nil, err
	}
	passages, err := search.LoadCorpus(cfg.Corpus)
	if err != nil {
		return nil, err
	}
	tools, err := pipeline.BuildTools(cfg.Tools, passages, cfg.SearchTopK, cfg.Workers)
	if err != nil {
		return nil, err
	}
	setup, err := pipeline.PrepareData(cfg, qs, tools, tok)
	if err != nil {
		return nil, err
	}
	run.log("info", fmt.Sprintf("%s; corpus %s: %d passages, top-%d BM25; final/ saved as %s", setup.DescribeData(), cfg.Corpus, len(passages), cfg.SearchTopK, dtype))
	run.log("setup", setup)
	start := pipeline.Start{Setup: setup, Policy: policy, EvalStart: true, StartPhase: "pretrained", Resume: a.resume != "", Folder: cfg.InitModel}
	return pipeline.RunFrom(ctx, cfg, start, run.log)
}
