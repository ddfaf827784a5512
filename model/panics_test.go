package model

import (
	"strings"
	"testing"
)

// TestPanics checks that programming errors panic with a message naming the function.
func TestPanics(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 81)
	other := m.Clone()
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"forward lengths", func() { m.Forward(NewWorkspace(), []int{1, 2}, []float32{1}, 1, 2) }, "model.Forward"},
		{"forward token", func() { m.Forward(NewWorkspace(), []int{1, 99}, []float32{1, 1}, 1, 2) }, "vocabulary"},
		{"forward too long", func() { m.Forward(NewWorkspace(), make([]int, 65), make([]float32, 65), 1, 65) }, "max_position_embeddings"},
		{"forward temperature", func() { m.Forward(&Workspace{Temperature: -1}, []int{1, 2}, []float32{1, 1}, 1, 2) }, "Temperature"},
		{"backward without forward", func() { m.Backward(NewWorkspace(), nil, nil) }, "model.Backward"},
		{"backward other model", func() {
			ws := NewWorkspace()
			other.Forward(ws, []int{1, 2}, []float32{1, 1}, 1, 2)
			m.Backward(ws, nil, nil)
		}, "model.Backward"},
		{"backward lengths", func() {
			ws := NewWorkspace()
			m.Forward(ws, []int{1, 2}, []float32{1, 1}, 1, 2)
			m.Backward(ws, make([]float32, 3), nil)
		}, "model.Backward"},
		{"backward logits after forward", func() {
			ws := NewWorkspace()
			m.Forward(ws, []int{1, 2}, []float32{1, 1}, 1, 2)
			m.BackwardLogits(ws, make([]float32, 2*cfg.VocabSize))
		}, "model.BackwardLogits"},
		{"decoder size", func() { m.NewDecoder(1, 65) }, "model.NewDecoder"},
		{"decoder overflow", func() { m.NewDecoder(1, 3).Append(0, []int{1, 2, 3, 4}) }, "MaxLen"},
		{"decoder row", func() { m.NewDecoder(2, 3).Append(2, []int{1}) }, "row 2"},
		{"decoder token", func() { m.NewDecoder(2, 3).Append(0, []int{-1}) }, "vocabulary"},
		{"step twice", func() { m.NewDecoder(2, 3).Step([]int{1, 1}, []int{1, 2}) }, "twice"},
		{"step lengths", func() { m.NewDecoder(2, 3).Step([]int{1}, []int{1, 2}) }, "model.Decoder.Step"},
		{"generate empty row", func() { m.NewDecoder(2, 3).Generate([]int{0}, 2, Sampler{Greedy: true}, nil, nil) }, "empty"},
		{"sample empty", func() { Sampler{}.Sample(nil, nil) }, "empty logits"},
	} {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.Contains(msg, tc.want) {
					t.Errorf("%s: recovered %v, want a panic mentioning %q", tc.name, r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}

// TestCriticClone checks that a cloned critic computes the same values from its own storage.
func TestCriticClone(t *testing.T) {
	cfg := tinyConfig(false)
	c := NewCritic(newTestModel(t, cfg, 82), 83)
	d := c.Clone()
	if len(d.Params) != len(c.Params) || len(d.WritableParams()) != len(c.Params) || len(d.ParamGrads()) != len(c.Params) {
		t.Fatalf("clone has %d params, want %d", len(d.Params), len(c.Params))
	}
	tokens, mask := []int{3, 4, 5}, []float32{1, 1, 1}
	want := append([]float32(nil), c.Forward(NewWorkspace(), tokens, mask, 1, 3)...)
	got := d.Forward(NewWorkspace(), tokens, mask, 1, 3)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	d.ScoreW.Data[0] += 1
	d.Params[0].Data[0] += 1
	if c.ScoreW.Data[0] == d.ScoreW.Data[0] || c.Params[0].Data[0] == d.Params[0].Data[0] {
		t.Error("clone shares storage with the original")
	}
	if m := c.Model; len(m.WritableParams()) != len(m.Params) || &m.ParamGrads()[0][0] != &m.Params[0].Grad[0] {
		t.Error("WritableParams/ParamGrads do not list the parameters")
	}
}
