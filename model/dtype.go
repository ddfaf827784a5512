package model

import (
	"fmt"
	"strings"

	"agentr1/tensor"
)

// DType is the storage type of a saved checkpoint's weights, named as safetensors names it.
// The model computes in float32 whatever the checkpoint stores; SaveAs rounds to the type
// asked for.
type DType string

// The storage types SaveAs writes.
const (
	F32  DType = "F32"  // float32: exact, what training computes in
	BF16 DType = "BF16" // bfloat16: half the bytes, what Qwen's released checkpoints store
)

// DTypes lists the storage types SaveAs writes, in the order help text gives them.
var DTypes = []DType{F32, BF16}

// ParseDType reads a storage type by its safetensors name or by PyTorch's (case is ignored):
// f32 or float32, bf16 or bfloat16.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "f32", "float32":
		return F32, nil
	case "bf16", "bfloat16":
		return BF16, nil
	}
	return "", fmt.Errorf("unknown dtype %q (want f32 or bf16)", s)
}

// String returns the flag spelling: "f32" or "bf16".
func (d DType) String() string { return strings.ToLower(string(d)) }

// MarshalText writes the flag spelling (config.json of a run, flags).
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a storage type as ParseDType does; empty text is the zero DType (a
// setting left to its default).
func (d *DType) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = ""
		return nil
	}
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// torchName is the dtype's name in config.json's torch_dtype ("float32", "bfloat16"), which
// transformers reads as the checkpoint's storage type.
func (d DType) torchName() string {
	if d == BF16 {
		return "bfloat16"
	}
	return "float32"
}

// width is the bytes of one element.
func (d DType) width() int {
	if d == BF16 {
		return 2
	}
	return 4
}

// check reports a DType SaveAs does not write.
func (d DType) check() error {
	if d != F32 && d != BF16 {
		return fmt.Errorf("save model: dtype %q: want F32 or BF16", string(d))
	}
	return nil
}

// WeightsDType returns the storage type of the checkpoint folder dir's floating-point weights
// (model.safetensors or the shards of model.safetensors.index.json): F32 or BF16 when every
// tensor is stored so, and F32 for anything else (F16, F64 or a mix), since float32 holds each
// of those exactly. A run saves its checkpoints in this type by default, so that a BF16
// checkpoint trained here stays the size it came in.
func WeightsDType(dir string) (DType, error) {
	path, err := weightsPath(dir)
	if err != nil {
		return "", fmt.Errorf("weights dtype: %w", err)
	}
	ck, err := openCheckpoint(path)
	if err != nil {
		return "", fmt.Errorf("weights dtype of %s: %w", dir, err)
	}
	defer ck.Close()
	seen := map[string]bool{}
	for name, st := range ck.where {
		seen[st.tensors[name].Dtype] = true
	}
	if len(seen) == 1 && seen[string(BF16)] {
		return BF16, nil
	}
	return F32, nil
}

// RoundWeights rounds every parameter to the nearest value dtype stores, as saving in dtype
// and loading back would (F32 changes nothing), and marks the weights changed. A run that
// saves a BF16 checkpoint of its policy and trains on calls it, so that it goes on from the
// weights it saved, as a run resumed from that checkpoint does.
func (m *Model) RoundWeights(dtype DType) {
	if dtype != BF16 {
		return
	}
	for _, p := range m.Params {
		for i, x := range p.Data {
			p.Data[i] = tensor.BF16ToFloat32(tensor.Float32ToBF16(x))
		}
	}
	m.MarkWeightsChanged()
}
