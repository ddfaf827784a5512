package model

import (
	"fmt"
	"strings"
)

// Compute is the arithmetic of the weight-matrix products of a model held for inference: the
// query, key, value and output projections, the MLP's gate, up and down projections, and the
// lm_head. Attention's score and value products, the norms, RoPE and softmax are float32
// whatever it is, and training is always float32.
type Compute int

const (
	// ComputeFloat32 multiplies in float32: BF16 weights are widened (exactly) as the product
	// reads them. The default.
	ComputeFloat32 Compute = iota
	// ComputeBF16 multiplies in bfloat16, as PyTorch does a BF16 checkpoint on a CPU with
	// AVX512_BF16: the activations are rounded to bfloat16 (to nearest even) and each pair of
	// products accumulates in float32 (tensor.PackedB.PackBF16Pairs). Twice the multiply-adds
	// per instruction of float32 where the CPU has AVX512_BF16 (elsewhere the same arithmetic
	// runs in plain Go, slowly). Each product's inputs move by at most 2^-9 relative, and the
	// logits with them (TestComputeBF16Golden bounds how far). It needs a checkpoint stored in
	// BF16, whose weights are already bfloat16: rounding float32 weights too would change the
	// model, not only its arithmetic.
	ComputeBF16
)

// computeNames are the names ParseCompute accepts, in Compute order.
var computeNames = []string{"f32", "bf16"}

// String returns the name of c: "f32" or "bf16".
func (c Compute) String() string {
	if int(c) < len(computeNames) && c >= 0 {
		return computeNames[c]
	}
	return fmt.Sprintf("Compute(%d)", int(c))
}

// ParseCompute returns the Compute named s ("f32" or "bf16").
func ParseCompute(s string) (Compute, error) {
	for i, name := range computeNames {
		if s == name {
			return Compute(i), nil
		}
	}
	return 0, fmt.Errorf("compute %q: want one of %s", s, strings.Join(computeNames, ", "))
}

// Set sets c to the Compute named s, as ParseCompute reads it: *Compute is a flag.Value.
func (c *Compute) Set(s string) error {
	v, err := ParseCompute(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}
