package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"agentr1/tensor"
)

// Critic is PPO's value model: the Qwen2 trunk with a scalar head per position instead of
// lm_head, as verl builds its critic (transformers AutoModelForTokenClassification with
// num_labels = 1, i.e. Qwen2ForTokenClassification: score = Linear(hidden, 1) on the final
// hidden states). Its weights are separate from the policy's.
type Critic struct {
	Model     *Model   // the trunk; its lm_head (when untied) is unused
	ScoreW    *Param   // score.weight (1, C)
	ScoreBias *Param   // score.bias (1)
	Params    []*Param // the trunk's parameters (without lm_head) and the score head
}

// NewCritic returns a critic whose trunk is a copy of the policy's weights and whose score head
// is initialised as Hugging Face does for a new head: weight from normal(0, initializer_range)
// drawn from a PCG stream seeded with seed, bias zero.
func NewCritic(policy *Model, seed uint64) *Critic {
	c := &Critic{Model: policy.Clone()}
	C := policy.Config.HiddenSize
	head := []*Param{{Name: "score.weight", Shape: []int{1, C}}, {Name: "score.bias", Shape: []int{1}}}
	allocate(head)
	c.ScoreW, c.ScoreBias = head[0], head[1]
	rng := rand.New(rand.NewPCG(seed, 0x5c0e5c0e5c0e5c0e))
	for i := range c.ScoreW.Data {
		c.ScoreW.Data[i] = float32(rng.NormFloat64() * policy.Config.InitializerRange)
	}
	c.collectParams()
	c.ZeroGrad() // a critic exists to train: its gradients, zero (the policy's are not copied)
	return c
}

// collectParams lists the trunk's parameters (without an untied lm_head) and the score head.
func (c *Critic) collectParams() {
	c.Params = c.Params[:0]
	for _, p := range c.Model.Params {
		if p.Name != "lm_head.weight" {
			c.Params = append(c.Params, p)
		}
	}
	c.Params = append(c.Params, c.ScoreW, c.ScoreBias)
}

// ZeroGrad sets every parameter gradient of the critic to zero, allocating the gradients the
// critic does not have yet (enableGrads).
func (c *Critic) ZeroGrad() {
	enableGrads(c.Params)
	for _, p := range c.Params {
		clear(p.Grad)
	}
}

// WritableParams returns the critic's parameter value slices in Params order, for a caller
// that writes them (tensor.AdamW.Update), as Model.WritableParams does for the policy. No
// decoder runs a critic, so there is nothing to mark changed.
func (c *Critic) WritableParams() [][]float32 { return paramData(c.Params) }

// ParamGrads returns the critic's gradient slices in Params order.
func (c *Critic) ParamGrads() [][]float32 {
	enableGrads(c.Params)
	return paramGrads(c.Params)
}

// Forward returns the value estimate of every position of a left-padded batch (B, T):
// values[b,t] = score(final hidden state of token t), a view into ws valid until its next
// Forward. Padded positions get the head's output of their (deterministic) hidden state; mask
// them in the loss. It panics as Model.Forward does.
func (c *Critic) Forward(ws *Workspace, tokens []int, attentionMask []float32, B, T int) (values []float32) {
	checkBatch("model.Critic.Forward", c.Model.Config, tokens, attentionMask, B, T)
	return c.forwardInShards(ws, tokens, attentionMask, B, T) // forward below, on each group of rows (shard.go)
}

// forward is Critic.Forward on one group of rows: the trunk, then the score head.
func (c *Critic) forward(ws *Workspace, tokens []int, attentionMask []float32, B, T int) []float32 {
	N, C := B*T, c.Model.Config.HiddenSize
	final := c.Model.trunkForward(ws, tokens, attentionMask, B, T) // (N, C)
	ws.owner, ws.pass = c, passValues
	ws.values = grow(ws.values, N)
	// values (N, 1) = final (N, C) @ score.weight (1, C)^T + score.bias
	tensor.LinearForward(ws.values, final, c.ScoreW.Data, c.ScoreBias.Data, N, C, 1)
	return ws.values
}

// Backward accumulates into every critic Param.Grad the gradient of a loss given
// dvalues = dL/dvalues (B, T) for the batch of the last Forward on ws. It panics if ws does
// not hold a Forward of c or dvalues has the wrong length.
func (c *Critic) Backward(ws *Workspace, dvalues []float32) {
	if ws.owner != c || ws.pass != passValues {
		panic("model.Critic.Backward: the workspace does not hold a Forward of this critic")
	}
	if N := ws.B * ws.T; len(dvalues) != N {
		panic(fmt.Sprintf("model.Critic.Backward: dvalues has %d elements, want %d (B*T)", len(dvalues), N))
	}
	enableGrads(c.Params)
	c.backwardInShards(ws, dvalues) // backward below, on each group of rows (shard.go)
}

// backward is Critic.Backward on one group of rows: the score head in reverse, then the trunk.
func (c *Critic) backward(ws *Workspace, dvalues []float32) {
	m := c.Model
	N, C := ws.B*ws.T, m.Config.HiddenSize
	m.recomputeActivations(ws) // a lean Forward kept one layer's activations (recompute.go)
	ws.prepareBackward()
	dfinal := ws.dfinal[:N*C] // (N, C)
	clear(dfinal)
	tensor.LinearBackward(dfinal, c.ScoreW.Grad, c.ScoreBias.Grad, dvalues, ws.final[:N*C], c.ScoreW.Data, N, C, 1)
	m.trunkBackward(ws, dfinal)
}

// Clone returns a deep copy of the critic.
func (c *Critic) Clone() *Critic {
	d := &Critic{Model: c.Model.Clone()}
	head := []*Param{{Name: "score.weight", Shape: []int{1, c.Model.Config.HiddenSize}}, {Name: "score.bias", Shape: []int{1}}}
	allocate(head)
	if c.ScoreW.Grad != nil {
		enableGrads(head)
	}
	d.ScoreW, d.ScoreBias = head[0], head[1]
	copy(d.ScoreW.Data, c.ScoreW.Data)
	copy(d.ScoreW.Grad, c.ScoreW.Grad)
	copy(d.ScoreBias.Data, c.ScoreBias.Data)
	copy(d.ScoreBias.Grad, c.ScoreBias.Grad)
	d.collectParams()
	return d
}

// Save writes the critic to dir as a Hugging Face Qwen2ForTokenClassification (or Qwen3's)
// checkpoint
// (config.json with num_labels 1, model.safetensors with the trunk and score.weight/bias).
func (c *Critic) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save critic: %w", err)
	}
	cfg := c.Model.Config
	raw, err := cfg.marshal("ForTokenClassification", F32, map[string]any{
		"id2label": map[string]string{"0": "LABEL_0"}, "label2id": map[string]int{"LABEL_0": 0},
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		return fmt.Errorf("save critic: %w", err)
	}
	var entries []stEntry
	for _, p := range c.Params {
		entries = append(entries, stEntry{name: p.Name, shape: p.Shape, data: p.Data})
	}
	return writeSafetensors(filepath.Join(dir, WeightsFile), entries, F32)
}

// LoadCritic reads a critic saved by Critic.Save.
func LoadCritic(dir string) (*Critic, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("load critic: %w", err)
	}
	m, err := newModel(cfg) // an untied lm_head stays zero: the critic does not use it
	if err != nil {
		return nil, fmt.Errorf("load critic: %w", err)
	}
	path := filepath.Join(dir, WeightsFile)
	ck, err := openCheckpoint(path)
	if err != nil {
		return nil, fmt.Errorf("load critic: %w", err)
	}
	defer ck.Close()
	c := &Critic{Model: m}
	head := []*Param{{Name: "score.weight", Shape: []int{1, cfg.HiddenSize}}, {Name: "score.bias", Shape: []int{1}}}
	allocate(head)
	c.ScoreW, c.ScoreBias = head[0], head[1]
	c.collectParams()
	want := map[string]bool{}
	for _, p := range c.Params {
		want[p.Name] = true
		if err := ck.read(p.Name, p.Shape, p.Data); err != nil {
			return nil, fmt.Errorf("load critic: %w", err)
		}
	}
	for name := range ck.where {
		if !want[name] {
			return nil, fmt.Errorf("load critic: %s: unexpected tensor %q", path, name)
		}
	}
	return c, nil
}
