package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDecoderFollowsWeightChanges checks that a live decoder's packed weights follow every way
// the weights can change: an optimiser writing through ParamData, a direct write announced by
// MarkWeightsChanged, and a direct write while every row is empty. After each change the
// decoder's logits must be bit for bit those of a fresh decoder on the changed model, and
// differ from the logits before the change.
func TestDecoderFollowsWeightChanges(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 41)
	rng := rand.New(rand.NewPCG(42, 42))
	prompt := make([]int, 9)
	for i := range prompt {
		prompt[i] = rng.IntN(cfg.VocabSize)
	}
	const rows = 3
	d := m.NewDecoder(rows, 32)
	for r := range rows {
		d.Append(r, prompt)
	}
	// perturb changes every weight matrix a little, through data (the model's own slices).
	perturb := func(data [][]float32) {
		for _, x := range data {
			for i := range x {
				x[i] *= 1 + 0.01*float32(i%7-3)
			}
		}
	}
	fresh := func() []float32 {
		f := m.NewDecoder(1, 32)
		return append([]float32(nil), f.Append(0, prompt)...)
	}
	check := func(name string, row int, before []float32) {
		d.Reset(row)
		got := d.Append(row, prompt)
		want := fresh()
		same := true
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s: logit %d = %v, a fresh decoder gives %v", name, i, got[i], want[i])
				same = false
				break
			}
		}
		if same && fmt.Sprint(got) == fmt.Sprint(before) {
			t.Errorf("%s: logits unchanged by the weight change; the test proves nothing", name)
		}
	}

	before := append([]float32(nil), d.Append(0, nil)...)
	perturb(m.ParamData()) // an optimiser step; rows 1 and 2 still hold their caches
	check("ParamData", 0, before)

	before = append([]float32(nil), d.Append(0, nil)...)
	var data [][]float32
	for _, p := range m.Params {
		data = append(data, p.Data)
	}
	perturb(data) // a direct write...
	m.MarkWeightsChanged()
	check("MarkWeightsChanged", 0, before)

	before = append([]float32(nil), d.Append(0, nil)...)
	perturb(data) // a direct write with every row reset
	for r := range rows {
		d.Reset(r)
	}
	check("all rows empty", 1, before)
}
