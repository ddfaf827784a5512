package model

import (
	"fmt"

	"agentr1/tensor"
)

// A model held for inference (eval, chat, bench) never trains, so it keeps each weight matrix
// in one form only: packed once for tensor.GemmPacked, the form the decoder's products read,
// in bfloat16 when the checkpoint stores it so (tensor.PackedB.PackBF16; the products widen a
// micro-panel at a time). No float32 copy of a matrix is ever made: Qwen2.5-0.5B's weights take
// 0.92 GiB instead of 1.84, and every decoding step reads packed panels instead of packing each
// matrix again. A tied embedding is the lm_head's panels; a token's embedding is read back
// from them (tensor.PackedB.Column). Norm weights and biases, a few thousand floats a layer,
// stay float32 in Data.
//
// Such a model decodes (NewDecoder), runs Forward and ForwardLogits and can be cloned;
// Backward, the optimiser's hand-outs (WritableParams, ParamGrads, EnableTraining) and Save
// are for a model loaded with Load. Its Forward is a frozen reference policy's (rl/trainer
// NewWithReference): the products read the same panels (linearForward, linear.go), so that
// its log-probabilities are bit for bit Load's wherever each product has at least three
// register tiles of rows, when Gemm packs the float32 weights the same way, and within float32
// rounding below that (Gemm's dot-product path).

// LoadForInference reads a Hugging Face checkpoint folder as Load does, into a model held for
// inference: each weight matrix packed, BF16 tensors kept in bfloat16 (F32, F16 and F64 ones
// as float32), read through a memory map of the file where the system has one. The values are
// those Load reads, so a decoder on either model computes the same logits up to float32
// rounding. It is LoadForInferenceWith(dir, ComputeFloat32).
func LoadForInference(dir string) (*Model, error) { return LoadForInferenceWith(dir, ComputeFloat32) }

// LoadForInferenceWith is LoadForInference with the weight-matrix products in the arithmetic
// compute. ComputeBF16 needs every weight matrix stored in BF16: it fails naming the first that
// is not.
func LoadForInferenceWith(dir string, compute Compute) (*Model, error) {
	cfg, weights, err := checkpointFiles(dir)
	if err != nil {
		return nil, err
	}
	return loadForInference(cfg, weights, compute)
}

// loadForInference reads the checkpoint weights (a .safetensors file or an index) of the
// configuration cfg into a model held for inference computing in compute.
func loadForInference(cfg Config, weights string, compute Compute) (*Model, error) {
	m, err := newInferenceLayout(cfg)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", weights, err)
	}
	m.compute = compute
	if err := m.readWeights(weights); err != nil {
		return nil, err
	}
	return m, nil
}

// NewForInference returns a model held for inference with the weights New(cfg, seed) draws,
// each rounded to bfloat16 (to nearest, as a checkpoint saved in BF16 holds them) and packed:
// a random model of a real checkpoint's shapes in the memory that checkpoint's takes. It is
// NewForInferenceWith(cfg, seed, ComputeFloat32).
func NewForInference(cfg Config, seed uint64) (*Model, error) {
	return NewForInferenceWith(cfg, seed, ComputeFloat32)
}

// NewForInferenceWith is NewForInference with the weight-matrix products in the arithmetic
// compute (its weights are bfloat16, which ComputeBF16 needs).
func NewForInferenceWith(cfg Config, seed uint64, compute Compute) (*Model, error) {
	m, err := newInferenceLayout(cfg)
	if err != nil {
		return nil, err
	}
	m.compute = compute
	rng := initStream(seed) // New's stream, drawn in its order: only the matrices draw from it
	std := cfg.InitializerRange
	largest := 0
	for _, p := range m.Params {
		if p.Packed != nil {
			largest = max(largest, p.Numel())
		}
	}
	buf := make([]uint16, largest) // one matrix's values at a time
	for _, p := range m.Params {
		switch initRuleOf(p.Name) {
		case initNormal: // a matrix, held packed
			values := buf[:p.Numel()] // W (out, in)
			for i := range values {
				values[i] = tensor.Float32ToBF16(float32(rng.NormFloat64() * std))
			}
			m.packBF16(p.Packed, p.Shape, values)
		case initOnes:
			for i := range p.Data {
				p.Data[i] = 1
			}
		}
	}
	return m, nil
}

// newInferenceLayout lays out the parameters of cfg for inference: every matrix with an empty
// Packed, every vector (norm weights, biases) with Data, zero, in one allocation.
func newInferenceLayout(cfg Config) (*Model, error) {
	m, err := newLayout(cfg)
	if err != nil {
		return nil, err
	}
	var vectors []*Param
	for _, p := range m.Params {
		if len(p.Shape) == 2 {
			p.Packed = new(tensor.PackedB)
		} else {
			vectors = append(vectors, p)
		}
	}
	allocate(vectors)
	return m, nil
}

// packBF16 packs a weight matrix W (out, in) of bfloat16 values into dst as op(B) = W^T, for
// the model's arithmetic: multiplied in bfloat16 (PackBF16Pairs) or widened to float32 as the
// product reads it (PackBF16).
func (m *Model) packBF16(dst *tensor.PackedB, shape []int, values []uint16) {
	out, in := shape[0], shape[1]
	if m.compute == ComputeBF16 {
		dst.PackBF16Pairs(true, in, out, values, in)
		return
	}
	dst.PackBF16(true, in, out, values, in)
}

// InferenceCompute returns the arithmetic of the weight-matrix products of a model held for
// inference (ComputeFloat32 for any other model).
func (m *Model) InferenceCompute() Compute { return m.compute }

// Inference reports whether the model is held for inference (LoadForInference,
// NewForInference): its matrices packed, no float32 copy of them to train.
func (m *Model) Inference() bool { return m.embed.Packed != nil }

// checkTrainable panics, naming the method fn, if the model is held for inference.
func (m *Model) checkTrainable(fn string) {
	if m.Inference() {
		panic(fmt.Sprintf("model.%s: the model is held for inference (LoadForInference), its matrices packed; load it with Load to train it", fn))
	}
}

// cloneInference is Clone of a model held for inference: new vectors, the same packed
// matrices, which nothing writes.
func (m *Model) cloneInference() *Model {
	c, err := newInferenceLayout(m.Config)
	if err != nil {
		panic("model.Clone: " + err.Error()) // m was built from a valid config
	}
	c.compute = m.compute
	for i, p := range m.Params {
		if p.Packed != nil {
			c.Params[i].Packed = p.Packed
		}
		copy(c.Params[i].Data, p.Data)
	}
	return c
}
