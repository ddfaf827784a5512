package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDecoderFollowsWeightChanges checks that a live decoder's packed weights follow every way
// the weights can change: an optimiser writing through WritableParams, a direct write announced by
// MarkWeightsChanged, and a direct write while every row is empty. After each change the
// decoder's logits must be bit for bit those of a fresh decoder on the changed model, and
// differ from the logits before the change.
func TestDecoderFollowsWeightChanges(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 41)
	rng := rand.New(rand.NewPCG(42, 42))
	prompt := randomTokens(rng, cfg.VocabSize, 9)
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
	perturb(m.WritableParams()) // an optimiser step; rows 1 and 2 still hold their caches
	check("WritableParams", 0, before)

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

// TestDecoderUnpacked checks the path of models too large to pack (decoderPackLimit): the same
// logits as the packed path up to float32 rounding, after a prefill and several batched steps.
func TestDecoderUnpacked(t *testing.T) {
	cfg := tinyConfig(false)
	m := newTestModel(t, cfg, 43)
	rng := rand.New(rand.NewPCG(44, 44))
	prompt := randomTokens(rng, cfg.VocabSize, 11)
	decode := func() [][]float32 {
		const rows = 7 // above one register tile: the packed products run
		d := m.NewDecoder(rows, 40)
		var out [][]float32
		ids, next := make([]int, rows), make([]int, rows)
		for r := range rows {
			d.Append(r, prompt[:4+r])
			ids[r], next[r] = r, (r*5)%cfg.VocabSize
		}
		for range 5 {
			for r, logits := range d.Step(ids, next) {
				out = append(out, append([]float32(nil), logits...))
				next[r] = (next[r] + 3) % cfg.VocabSize
			}
		}
		if d.packed.valid == (decoderPackLimit == 0) {
			t.Fatalf("decoderPackLimit %d: packed = %v", decoderPackLimit, d.packed.valid)
		}
		return out
	}
	packed := decode()
	defer func(old int) { decoderPackLimit = old }(decoderPackLimit)
	decoderPackLimit = 0
	unpacked := decode()
	for s := range packed {
		for i, want := range packed[s] {
			if got := unpacked[s][i]; math.Abs(float64(got-want)) > 1e-5*(1+math.Abs(float64(want))) {
				t.Errorf("step row %d: logit %d unpacked %v, packed %v", s, i, got, want)
				break
			}
		}
	}
}
