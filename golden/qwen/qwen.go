// Package qwen checks package model against PyTorch and Hugging Face: it registers the forward
// and backward pass of a checkpoint under the names qwen2_forward and qwen3_forward, for the tiny
// random checkpoints of testdata/golden/qwen2_tiny/cases.json and
// testdata/golden/qwen3_tiny/cases.json (formats in testdata/golden/README.md). It is
// golden-case glue, not part of the model: it loads a case's checkpoint, runs it, and hands the
// logits, log-probs, positions and gradients back to package golden to compare. The trainer
// never imports it; `agentr1 golden` and this package's tests do.
package qwen

import (
	"fmt"
	"path/filepath"
	"slices"

	"agentr1/golden"
	"agentr1/model"
	"agentr1/tensor"
)

// Register adds the model's reference functions to r:
//
//	qwen2_forward: load params.weights with params.config (paths relative to the cases file),
//	run a left-padded batch input_ids/attention_mask (B, T) and return logits (B, T, V),
//	logprob (B, T) = log softmax(logits[b,t])[labels[b,t]] (labels are the next tokens, already
//	shifted), position_ids (B, T), and the gradients of L = sum(logprob * upstream) for every
//	parameter.
//	qwen3_forward: the same for a Qwen3 checkpoint (config.json with model_type "qwen3").
//
// The logits come from Model.ForwardLogits and the positions from model.PositionIDs; logprob
// and the gradients from the fused Forward and Backward that training uses, wherever
// labels[b,t] is the next input token (the fused pass computes exactly those positions), and
// from the logits elsewhere.
func Register(r *golden.Registry) {
	r.Add("qwen2_forward", goldenForward("qwen2"))
	r.Add("qwen3_forward", goldenForward("qwen3"))
}

// goldenForward returns the reference function of an architecture, which refuses a checkpoint
// of another (so that a qwen3_forward case can never pass on the Qwen2 path).
func goldenForward(modelType string) func(c *golden.Case) (*golden.Result, error) {
	return func(c *golden.Case) (*golden.Result, error) { return goldenModelForward(c, modelType) }
}

func goldenModelForward(c *golden.Case, modelType string) (*golden.Result, error) {
	weights, err := c.String("weights", "")
	if err != nil {
		return nil, err
	}
	config, err := c.String("config", "")
	if err != nil {
		return nil, err
	}
	if weights == "" || config == "" {
		return nil, fmt.Errorf("case %s: params \"weights\" and \"config\" are required", c.Name)
	}
	cfg, err := model.LoadConfig(filepath.Join(c.Dir, config))
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	got := cfg.ModelType
	if got == "" {
		got = "qwen2" // what Config.ModelType "" means
	}
	if got != modelType {
		return nil, fmt.Errorf("case %s: %s is a %s checkpoint, want %s", c.Name, config, got, modelType)
	}
	m, err := model.LoadWeights(cfg, filepath.Join(c.Dir, weights))
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	in, err := c.InputList("input_ids", "attention_mask", "labels")
	if err != nil {
		return nil, err
	}
	ids, maskV, labelsV := in[0], in[1], in[2]
	if len(ids.Shape) != 2 || !slices.Equal(ids.Shape, maskV.Shape) || !slices.Equal(ids.Shape, labelsV.Shape) {
		return nil, fmt.Errorf("case %s: input_ids %v, attention_mask %v, labels %v: want equal (B, T) shapes", c.Name, ids.Shape, maskV.Shape, labelsV.Shape)
	}
	B, T, V := ids.Shape[0], ids.Shape[1], cfg.VocabSize
	N := B * T
	tokens, mask, labels := ids.IntData(), maskV.F32(), labelsV.IntData()
	for i, y := range labels {
		if y < 0 || y >= V {
			return nil, fmt.Errorf("case %s: label %d at %d outside the vocabulary [0, %d)", c.Name, y, i, V)
		}
	}

	ws := model.NewWorkspace()
	logits := m.ForwardLogits(ws, tokens, mask, B, T) // (B, T, V)
	positions := make([]int, N)                       // (B, T)
	model.PositionIDs(positions, mask, B, T)
	res := &golden.Result{Outputs: map[string]*golden.Value{
		"logits":       golden.Float32s([]int{B, T, V}, logits),
		"position_ids": golden.Ints([]int{B, T}, positions),
	}}
	logprob := make([]float32, N) // (B, T)
	tensor.LogProbsForward(logprob, logits, labels, N, V)

	var upstream []float32 // (B, T)
	if u, ok := c.Upstream["logprob"]; ok {
		if len(u.Data) != N {
			return nil, fmt.Errorf("case %s: upstream logprob has %d values, want %d", c.Name, len(u.Data), N)
		}
		upstream = u.F32()
	}
	// fused[b,t]: labels[b,t] is the next input token and Forward computes its log-prob.
	fused := make([]bool, N)
	for b := range B {
		for t := 0; t+1 < T; t++ {
			i := b*T + t
			fused[i] = mask[i] != 0 && mask[i+1] != 0 && labels[i] == tokens[i+1]
		}
	}
	var dlogits []float32 // (B, T, V) the part of the upstream the fused pass cannot take
	if upstream != nil {
		rest := make([]float32, N)
		for i, u := range upstream {
			if !fused[i] {
				rest[i] = u
			}
		}
		dlogits = make([]float32, N*V)
		tensor.LogProbsBackward(dlogits, rest, logits, logprob, labels, N, V)
		m.ZeroGrad()
		m.BackwardLogits(ws, dlogits)
	}
	// The fused pass: logp[b,t+1] of Forward is logprob[b,t] of the reference.
	logp, _ := m.Forward(ws, tokens, mask, B, T)
	for i := range logprob {
		if fused[i] {
			logprob[i] = logp[i+1]
		}
	}
	res.Outputs["logprob"] = golden.Float32s([]int{B, T}, logprob)
	if upstream != nil {
		dlogp := make([]float32, N) // (B, T) indexed by the predicted token's position
		for i, u := range upstream {
			if fused[i] {
				dlogp[i+1] = u
			}
		}
		m.Backward(ws, dlogp, nil)
		res.Grads = map[string]*golden.Value{}
		for _, p := range m.Params {
			res.Grads[p.Name] = golden.Float32s(p.Shape, p.Grad)
		}
	}
	return res, nil
}
