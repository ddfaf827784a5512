package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"agentr1/tensor"
)

// Param is one named parameter tensor: its Hugging Face name, shape, values and gradient.
// Data and Grad are views into the model's single parameter and gradient allocations. Grad is
// nil until the model trains (EnableTraining, called by ZeroGrad, ParamGrads and every
// Backward): a model loaded for inference never holds a gradient, as large as its weights.
type Param struct {
	Name  string    // Hugging Face state-dict name ("model.layers.0.mlp.up_proj.weight")
	Shape []int     // dimensions; a weight matrix is (out, in)
	Data  []float32 // row-major, len = product of Shape; nil for a matrix held Packed
	Grad  []float32 // same shape as Data, or nil before training; Backward accumulates into it

	// Packed is a weight matrix W (out, in) of a model held for inference (LoadForInference,
	// NewForInference) packed once as op(B) = W^T for tensor.GemmPacked, in bfloat16 when the
	// checkpoint stores it so, in place of Data: the decoder's products read it (inference.go).
	// nil for every parameter of a model that can train.
	Packed *tensor.PackedB
}

// Numel returns the number of elements of the parameter.
func (p *Param) Numel() int { return shapeSize(p.Shape) }

// layerParams are the parameters of one decoder layer (HF Qwen2DecoderLayer or
// Qwen3DecoderLayer), with C = hidden size, D = head size, Q = Hq*D, K = Hkv*D,
// I = intermediate size. A parameter the architecture does not have is nil.
type layerParams struct {
	inputNorm *Param // input_layernorm.weight (C)
	q         *Param // self_attn.q_proj.weight (Q, C)
	qBias     *Param // self_attn.q_proj.bias (Q), Qwen2 only
	k         *Param // self_attn.k_proj.weight (K, C)
	kBias     *Param // self_attn.k_proj.bias (K), Qwen2 only
	v         *Param // self_attn.v_proj.weight (K, C)
	vBias     *Param // self_attn.v_proj.bias (K), Qwen2 only
	qNorm     *Param // self_attn.q_norm.weight (D), Qwen3 only
	kNorm     *Param // self_attn.k_norm.weight (D), Qwen3 only
	o         *Param // self_attn.o_proj.weight (C, Q), no bias
	postNorm  *Param // post_attention_layernorm.weight (C)
	gate      *Param // mlp.gate_proj.weight (I, C)
	up        *Param // mlp.up_proj.weight (I, C)
	down      *Param // mlp.down_proj.weight (C, I)
}

// Model is a Qwen2 decoder-only language model (HF Qwen2ForCausalLM): token embedding,
// NumHiddenLayers pre-norm decoder layers (RMSNorm, grouped-query attention with q/k/v biases
// and rotary embeddings, RMSNorm, SwiGLU MLP), a final RMSNorm and lm_head (tied to the
// embedding when TieWordEmbeddings). With Config.ModelType "qwen3" it is a Qwen3 model
// (HF Qwen3ForCausalLM): the same, with no q/k/v biases and an RMSNorm of each query and key
// head vector before the rotary embedding.
type Model struct {
	Config Config   // the architecture (Hugging Face config.json)
	Params []*Param // every parameter, in Hugging Face state-dict order (a tied lm_head omitted)

	embed  *Param // model.embed_tokens.weight (V, C)
	layers []layerParams
	norm   *Param // model.norm.weight (C)
	lmHead *Param // lm_head.weight (V, C); the embedding when tied

	rope *tensor.RoPE // cos/sin table for positions [0, MaxPositionEmbeddings)

	// compute is the arithmetic of the packed matrices' products, for a model held for
	// inference (compute.go); ComputeFloat32 for any other.
	compute Compute

	// weightsVersion counts the hand-outs of the parameter values for writing (WritableParams,
	// MarkWeightsChanged): a Decoder repacks its copy of the weights when it changes.
	weightsVersion atomic.Uint64
}

// newModel lays out the parameters of cfg in one data allocation, with Data zero and no
// gradients; it does not initialise them.
func newModel(cfg Config) (*Model, error) {
	m, err := newLayout(cfg)
	if err != nil {
		return nil, err
	}
	allocate(m.Params)
	return m, nil
}

// newLayout returns a model of cfg whose parameters have their names and shapes but no Data.
func newLayout(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg}
	C, V, I := cfg.HiddenSize, cfg.VocabSize, cfg.IntermediateSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	add := func(name string, shape ...int) *Param {
		p := &Param{Name: name, Shape: shape}
		m.Params = append(m.Params, p)
		return p
	}
	m.embed = add("model.embed_tokens.weight", V, C)
	m.layers = make([]layerParams, cfg.NumHiddenLayers)
	for l := range m.layers {
		pre := fmt.Sprintf("model.layers.%d.", l)
		L := &m.layers[l]
		// The order of each architecture's state dict.
		if cfg.QKVBias() {
			L.q = add(pre+"self_attn.q_proj.weight", Q, C)
			L.qBias = add(pre+"self_attn.q_proj.bias", Q)
			L.k = add(pre+"self_attn.k_proj.weight", K, C)
			L.kBias = add(pre+"self_attn.k_proj.bias", K)
			L.v = add(pre+"self_attn.v_proj.weight", K, C)
			L.vBias = add(pre+"self_attn.v_proj.bias", K)
			L.o = add(pre+"self_attn.o_proj.weight", C, Q)
		} else {
			L.q = add(pre+"self_attn.q_proj.weight", Q, C)
			L.k = add(pre+"self_attn.k_proj.weight", K, C)
			L.v = add(pre+"self_attn.v_proj.weight", K, C)
			L.o = add(pre+"self_attn.o_proj.weight", C, Q)
			L.qNorm = add(pre+"self_attn.q_norm.weight", cfg.HeadSize())
			L.kNorm = add(pre+"self_attn.k_norm.weight", cfg.HeadSize())
		}
		L.gate = add(pre+"mlp.gate_proj.weight", I, C)
		L.up = add(pre+"mlp.up_proj.weight", I, C)
		L.down = add(pre+"mlp.down_proj.weight", C, I)
		L.inputNorm = add(pre+"input_layernorm.weight", C)
		L.postNorm = add(pre+"post_attention_layernorm.weight", C)
	}
	m.norm = add("model.norm.weight", C)
	if cfg.TieWordEmbeddings {
		m.lmHead = m.embed
	} else {
		m.lmHead = add("lm_head.weight", V, C)
	}
	m.rope = tensor.NewRoPE(cfg.HeadSize(), cfg.MaxPositionEmbeddings, cfg.RopeTheta)
	return m, nil
}

// data returns p's values, or nil for a parameter the architecture does not have (p nil).
func data(p *Param) []float32 {
	if p == nil {
		return nil
	}
	return p.Data
}

// grad returns p's gradient, or nil for a parameter the architecture does not have (p nil).
func grad(p *Param) []float32 {
	if p == nil {
		return nil
	}
	return p.Grad
}

// allocate gives each parameter its Data as a view into one single allocation (Grad stays
// nil: see enableGrads).
func allocate(params []*Param) {
	total := 0
	for _, p := range params {
		total += shapeSize(p.Shape)
	}
	data := make([]float32, total)
	off := 0
	for _, p := range params {
		n := shapeSize(p.Shape)
		p.Data = data[off : off+n : off+n]
		off += n
	}
}

// shapeSize returns the number of elements of a tensor of the given shape.
func shapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// enableGrads gives every parameter of params that has no gradient yet a zero one, as views
// into one single allocation; parameters that have one keep it. It is the one place a
// gradient is allocated, so that only a model that trains pays for it.
func enableGrads(params []*Param) {
	total := 0
	for _, p := range params {
		if p.Grad == nil {
			total += len(p.Data)
		}
	}
	if total == 0 {
		return
	}
	grad := make([]float32, total)
	off := 0
	for _, p := range params {
		if p.Grad == nil {
			n := len(p.Data)
			p.Grad = grad[off : off+n : off+n]
			off += n
		}
	}
}

// EnableTraining allocates the parameter gradients (zero) if the model has none yet: a model
// is built and loaded without them, for inference. ZeroGrad, ParamGrads, Backward and
// BackwardLogits call it, so a training loop needs nothing more; it is exported for callers
// that write Param.Grad themselves.
// It panics if the model is held for inference (LoadForInference, NewForInference).
func (m *Model) EnableTraining() {
	m.checkTrainable("EnableTraining")
	enableGrads(m.Params)
}

// Training reports whether the model holds gradients (EnableTraining has run).
func (m *Model) Training() bool { return len(m.Params) > 0 && m.Params[0].Grad != nil }

// New returns a model with parameters initialised deterministically from seed as Hugging Face
// Qwen2PreTrainedModel._init_weights (and Qwen3's) does: linear and embedding weights from
// normal(0, initializer_range), biases zero, RMSNorm weights one. Values are drawn in
// parameter order from one PCG stream seeded with seed.
func New(cfg Config, seed uint64) (*Model, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	rng := initStream(seed)
	std := cfg.InitializerRange
	for _, p := range m.Params {
		switch initRuleOf(p.Name) {
		case initOnes:
			for i := range p.Data {
				p.Data[i] = 1
			}
		case initZeros: // as allocated
		case initNormal:
			for i := range p.Data {
				p.Data[i] = float32(rng.NormFloat64() * std)
			}
		}
	}
	return m, nil
}

// initRule is how New initialises a parameter.
type initRule int

const (
	initNormal initRule = iota // drawn from normal(0, initializer_range): linear and embedding weights
	initOnes                   // RMSNorm weights
	initZeros                  // biases
)

// initRuleOf returns the rule New initialises the parameter named name by.
func initRuleOf(name string) initRule {
	switch {
	case strings.HasSuffix(name, "norm.weight"):
		return initOnes
	case strings.HasSuffix(name, ".bias"):
		return initZeros
	}
	return initNormal
}

// initStream returns the random stream New draws the initNormal parameters from, in
// parameter order.
func initStream(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// NumParams returns the number of parameters (a tied lm_head counted once).
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.Params {
		n += p.Numel()
	}
	return n
}

// Param returns the parameter with the given Hugging Face name, or nil.
func (m *Model) Param(name string) *Param {
	for _, p := range m.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// ZeroGrad sets every parameter gradient to zero, allocating the gradients on the first call
// (EnableTraining).
func (m *Model) ZeroGrad() {
	m.EnableTraining()
	for _, p := range m.Params {
		clear(p.Grad)
	}
}

// Clone returns a deep copy of the model: same configuration, parameters and gradients, in new
// allocations. A model without gradients (not training) clones without them, so that a frozen
// copy of a policy (a reference model) costs only its weights.
//
// A model held for inference clones into one that shares its packed matrices (read-only).
func (m *Model) Clone() *Model {
	if m.Inference() {
		return m.cloneInference()
	}
	c, err := newModel(m.Config)
	if err != nil {
		panic("model.Clone: " + err.Error()) // m was built from a valid config
	}
	if m.Training() {
		c.EnableTraining()
	}
	for i, p := range m.Params {
		copy(c.Params[i].Data, p.Data)
		copy(c.Params[i].Grad, p.Grad)
	}
	return c
}

// WritableParams returns the parameter value slices in Params order, for a caller that writes
// them (tensor.AdamW.Update). Each call counts as a change of the weights for the model's
// decoders (it calls MarkWeightsChanged), so that a rollout after the update samples from the
// new weights; reading Param.Data needs no call. It panics if the model is held for inference.
func (m *Model) WritableParams() [][]float32 {
	m.checkTrainable("WritableParams")
	m.MarkWeightsChanged()
	return paramData(m.Params)
}

// MarkWeightsChanged tells the model's decoders that parameter values have been written, so
// that each repacks its copy of the weights before its next step. Call it after writing
// Param.Data directly; WritableParams calls it, so an optimiser updating through its slices
// needs nothing more. It is safe for concurrent use.
func (m *Model) MarkWeightsChanged() { m.weightsVersion.Add(1) }

// ParamGrads returns the gradient slices in Params order (for tensor.AdamW.Update and
// tensor.ClipGradNorm), allocating them on the first call (EnableTraining).
func (m *Model) ParamGrads() [][]float32 {
	m.EnableTraining()
	return paramGrads(m.Params)
}

func paramData(params []*Param) [][]float32 {
	out := make([][]float32, len(params))
	for i, p := range params {
		out[i] = p.Data
	}
	return out
}

func paramGrads(params []*Param) [][]float32 {
	out := make([][]float32, len(params))
	for i, p := range params {
		out[i] = p.Grad
	}
	return out
}

// Load reads a Hugging Face checkpoint folder: config.json and model.safetensors, or the shards
// listed in model.safetensors.index.json.
// It loads float32 weights that can train; LoadForInference loads a model for inference only.
func Load(dir string) (*Model, error) {
	cfg, weights, err := checkpointFiles(dir)
	if err != nil {
		return nil, err
	}
	return LoadWeights(cfg, weights)
}

// checkpointFiles reads the configuration of the checkpoint folder dir and returns it with the
// path of its weights: model.safetensors, or the index of a sharded checkpoint.
func checkpointFiles(dir string) (Config, string, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return Config{}, "", fmt.Errorf("load model: %w", err)
	}
	weights, err := weightsPath(dir)
	if err != nil {
		return Config{}, "", fmt.Errorf("load model: %w", err)
	}
	return cfg, weights, nil
}

// weightsPath returns the path of the checkpoint folder dir's weights: model.safetensors, or
// else the index of a sharded checkpoint.
func weightsPath(dir string) (string, error) {
	weights := filepath.Join(dir, WeightsFile)
	if _, err := os.Stat(weights); err == nil {
		return weights, nil
	}
	index := filepath.Join(dir, IndexFile)
	if _, err := os.Stat(index); err != nil {
		return "", fmt.Errorf("%s: neither %s nor %s found", dir, WeightsFile, IndexFile)
	}
	return index, nil
}

// LoadWeights builds a model of configuration cfg from a .safetensors file or a sharded
// checkpoint's model.safetensors.index.json. Tensors stored as F32, F64, BF16 or F16 are
// converted to float32. Every parameter must be present with its exact shape; a tensor the
// model has no use for is an error, except lm_head.weight of a tied model (a copy of the
// embedding) and the rotary inv_freq buffers older checkpoints carry.
func LoadWeights(cfg Config, path string) (*Model, error) {
	m, err := newLayout(cfg) // readWeights allocates the parameters once the file holds them
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if err := m.readWeights(path); err != nil {
		return nil, err
	}
	return m, nil
}

// readWeights fills every parameter of m from the checkpoint at path (a .safetensors file or
// an index): into its Data, or into its Packed matrix for a model held for inference; the
// parameters with neither are allocated first. It fails on a missing tensor, a wrong shape,
// or a tensor m has no use for (checkNoExtra).
func (m *Model) readWeights(path string) error {
	ck, err := openCheckpoint(path)
	if err != nil {
		return fmt.Errorf("load model: %w", err)
	}
	defer ck.Close()
	// The headers are checked against every parameter before anything is allocated: a
	// config.json describing a larger model than its weights (another model's) is refused
	// naming the tensor, not after allocating gigabytes or running out of memory.
	if err := ck.checkShapes(m.Params); err != nil {
		return fmt.Errorf("load model: %w", err)
	}
	if err := checkNoExtra(m, ck, path); err != nil {
		return err
	}
	var unallocated []*Param
	for _, p := range m.Params {
		if p.Data == nil && p.Packed == nil {
			unallocated = append(unallocated, p)
		}
	}
	allocate(unallocated)
	for _, p := range m.Params {
		if p.Data != nil {
			err = ck.read(p.Name, p.Shape, p.Data)
		} else {
			err = ck.readPacked(p.Name, p.Shape, p.Packed, m)
		}
		if err != nil {
			return fmt.Errorf("load model: %w", err)
		}
	}
	return nil
}

// checkNoExtra returns an error naming the first tensor of ck that is not a parameter of m,
// except lm_head.weight of a tied model (a copy of the embedding) and the rotary inv_freq
// buffers older checkpoints carry.
func checkNoExtra(m *Model, ck *checkpoint, path string) error {
	want := map[string]bool{}
	for _, p := range m.Params {
		want[p.Name] = true
	}
	for name := range ck.where {
		switch {
		case want[name]:
		case name == "lm_head.weight" && m.Config.TieWordEmbeddings:
		case strings.HasSuffix(name, "rotary_emb.inv_freq"):
		default:
			return fmt.Errorf("load model: %s: unexpected tensor %q (not a parameter of this configuration)", path, name)
		}
	}
	return nil
}

// Save writes the model to dir (created if needed) as a Hugging Face checkpoint in float32:
// SaveAs(dir, F32).
func (m *Model) Save(dir string) error { return m.SaveAs(dir, F32) }

// SaveAs writes the model to dir (created if needed) as a Hugging Face checkpoint whose
// weights are stored as dtype: config.json (its torch_dtype naming dtype) and
// model.safetensors, which transformers' Qwen2ForCausalLM (or Qwen3ForCausalLM)
// from_pretrained loads unchanged. BF16 rounds each weight to nearest even; F32 is exact. A
// tied lm_head is not written, as save_pretrained does.
func (m *Model) SaveAs(dir string, dtype DType) error {
	if err := dtype.check(); err != nil {
		return err
	}
	if m.Inference() {
		return fmt.Errorf("save model: %s: the model is held for inference, its matrices packed; load it with Load to save it", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := m.Config.save(filepath.Join(dir, "config.json"), dtype); err != nil {
		return err
	}
	entries := make([]stEntry, len(m.Params))
	for i, p := range m.Params {
		entries[i] = stEntry{name: p.Name, shape: p.Shape, data: p.Data}
	}
	return writeSafetensors(filepath.Join(dir, WeightsFile), entries, dtype)
}
