package torchops

import (
	"fmt"
	"slices"

	"agentr1/golden"
	"agentr1/tensor"
)

// swapAxes12 returns a copy of x (d0, d1, d2, d3) transposed to (d0, d2, d1, d3): the golden
// files hold heads-first (B, H, T, D) tensors, the kernels take the model's (B, T, H, D).
func swapAxes12(x []float32, d0, d1, d2, d3 int) []float32 {
	out := make([]float32, len(x))
	for a := 0; a < d0; a++ {
		for b := 0; b < d1; b++ {
			for c := 0; c < d2; c++ {
				src := ((a*d1+b)*d2 + c) * d3
				dst := ((a*d2+c)*d1 + b) * d3
				copy(out[dst:dst+d3], x[src:src+d3])
			}
		}
	}
	return out
}

// goldenRoPE runs "rope": x (B, H, T, D) rotated at positions (B, T) with base theta.
func goldenRoPE(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("x", "positions")
	if err != nil {
		return nil, err
	}
	x, pos := in[0], in[1]
	theta, err := c.Float("theta", 10000)
	if err != nil {
		return nil, err
	}
	if err := rank(c, "x", x, 4); err != nil {
		return nil, err
	}
	B, H, T, D := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if !slices.Equal(pos.Shape, []int{B, T}) {
		return nil, fmt.Errorf("case %s: positions has shape %v, want [%d %d]", c.Name, pos.Shape, B, T)
	}
	positions := pos.IntData()
	maxPos := 0
	for _, p := range positions {
		if p < 0 {
			return nil, fmt.Errorf("case %s: negative position %d", c.Name, p)
		}
		maxPos = max(maxPos, p+1)
	}
	rope := tensor.NewRoPE(D, maxPos, theta)
	y := swapAxes12(x.F32(), B, H, T, D) // (B, T, H, D)
	rope.Forward(y, positions, B*T, H)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(x.Shape, swapAxes12(y, B, T, H, D)))}
	dy, err := upstream(c, "y", len(y))
	if err != nil || dy == nil {
		return res, err
	}
	dx := swapAxes12(dy, B, H, T, D) // (B, T, H, D)
	rope.Backward(dx, positions, B*T, H)
	res.Grads = outputs("x", golden.Float32s(x.Shape, swapAxes12(dx, B, T, H, D)))
	return res, nil
}

// goldenAttention runs "attention": q (B, Hq, T, D), k and v (B, Hkv, T, D), key_mask (B, T),
// causal. The tensors are moved to the model layout (B, T, H, D) and back.
func goldenAttention(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("q", "k", "v", "key_mask")
	if err != nil {
		return nil, err
	}
	q, k, v, km := in[0], in[1], in[2], in[3]
	causal, err := c.Bool("causal", true)
	if err != nil {
		return nil, err
	}
	if !causal {
		return nil, fmt.Errorf("case %s: only causal attention is implemented", c.Name)
	}
	for i, name := range []string{"q", "k", "v"} {
		if err := rank(c, name, in[i], 4); err != nil {
			return nil, err
		}
	}
	B, Hq, T, D := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	Hkv := k.Shape[1]
	if !slices.Equal(k.Shape, []int{B, Hkv, T, D}) || !slices.Equal(v.Shape, k.Shape) || !slices.Equal(km.Shape, []int{B, T}) {
		return nil, fmt.Errorf("case %s: shapes q %v k %v v %v key_mask %v do not fit together", c.Name, q.Shape, k.Shape, v.Shape, km.Shape)
	}
	if Hkv == 0 || Hq%Hkv != 0 {
		return nil, fmt.Errorf("case %s: %d kv heads do not divide %d query heads", c.Name, Hkv, Hq)
	}
	qm := swapAxes12(q.F32(), B, Hq, T, D)    // (B, T, Hq, D)
	kmod := swapAxes12(k.F32(), B, Hkv, T, D) // (B, T, Hkv, D)
	vm := swapAxes12(v.F32(), B, Hkv, T, D)   // (B, T, Hkv, D)
	mask := km.F32()
	out, probs := make([]float32, len(qm)), make([]float32, B*Hq*T*T)
	tensor.AttentionForward(out, probs, qm, kmod, vm, mask, B, T, Hq, Hkv, D)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(q.Shape, swapAxes12(out, B, T, Hq, D)))}
	dy, err := upstream(c, "y", len(out))
	if err != nil || dy == nil {
		return res, err
	}
	dout := swapAxes12(dy, B, Hq, T, D)
	dq, dk, dv := make([]float32, len(qm)), make([]float32, len(kmod)), make([]float32, len(vm))
	tensor.AttentionBackward(dq, dk, dv, dout, probs, qm, kmod, vm, B, T, Hq, Hkv, D)
	res.Grads = outputs(
		"q", golden.Float32s(q.Shape, swapAxes12(dq, B, T, Hq, D)),
		"k", golden.Float32s(k.Shape, swapAxes12(dk, B, T, Hkv, D)),
		"v", golden.Float32s(v.Shape, swapAxes12(dv, B, T, Hkv, D)))
	return res, nil
}

// goldenEmbedding runs "embedding": table (V, d) gathered at ids of any shape.
func goldenEmbedding(c *golden.Case) (*golden.Result, error) {
	in, err := c.InputList("table", "ids")
	if err != nil {
		return nil, err
	}
	table, idv := in[0], in[1]
	if err := rank(c, "table", table, 2); err != nil {
		return nil, err
	}
	V, d := table.Shape[0], table.Shape[1]
	ids := idv.IntData()
	for i, id := range ids {
		if id < 0 || id >= V {
			return nil, fmt.Errorf("case %s: ids[%d] = %d outside [0, %d)", c.Name, i, id, V)
		}
	}
	tf := table.F32()
	y := make([]float32, len(ids)*d)
	tensor.EmbeddingForward(y, tf, ids, d)
	res := &golden.Result{Outputs: outputs("y", golden.Float32s(append(slices.Clone(idv.Shape), d), y))}
	dy, err := upstream(c, "y", len(y))
	if err != nil || dy == nil {
		return res, err
	}
	dtable := make([]float32, len(tf))
	tensor.EmbeddingBackward(dtable, dy, ids, d)
	res.Grads = outputs("table", golden.Float32s(table.Shape, dtable))
	return res, nil
}
