package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestCriticGradients checks the value head and trunk gradients of L = sum(values * w) by
// finite differences, and that the critic starts from the policy's trunk but owns its weights.
func TestCriticGradients(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		policy := newTestModel(t, cfg, 61)
		c := NewCritic(policy, 62)
		for i, p := range c.Params {
			if p.Name == "score.weight" || p.Name == "score.bias" {
				continue
			}
			if q := policy.Param(p.Name); q == nil || q.Data[0] != p.Data[0] || &q.Data[0] == &p.Data[0] {
				t.Fatalf("param %d %s: not a separate copy of the policy's", i, p.Name)
			}
		}
		for i := range c.ScoreW.Data {
			c.ScoreW.Data[i] *= 20 // a head large enough for the trunk gradients to be measurable
		}
		c.ScoreBias.Data[0] = 0.3
		rng := rand.New(rand.NewPCG(63, 63))
		B, T := 2, 5
		tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{5, 3})
		w := make([]float32, B*T)
		for i := range w {
			w[i] = mask[i] * float32(rng.NormFloat64())
		}
		ws := NewWorkspace()
		loss := func() float64 {
			values := c.Forward(ws, tokens, mask, B, T)
			var s float64
			for i, v := range values {
				s += float64(v) * float64(w[i])
			}
			return s
		}
		loss()
		c.ZeroGrad()
		c.Backward(ws, w)
		checkGrads(t, "critic", c.Params, loss, rng)

		dir := filepath.Join(t.TempDir(), "critic")
		if err := c.Save(dir); err != nil {
			t.Fatal(err)
		}
		l, err := LoadCritic(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := l.Forward(NewWorkspace(), tokens, mask, B, T)
		want := c.Forward(ws, tokens, mask, B, T)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("tied=%v: loaded critic value[%d] = %v, want %v", tied, i, got[i], want[i])
			}
		}
	}
}

func TestNewDeterministic(t *testing.T) {
	cfg := tinyConfig(false)
	a, _ := New(cfg, 7)
	b, _ := New(cfg, 7)
	c, _ := New(cfg, 8)
	var sum, sq float64
	n := 0
	for i, p := range a.Params {
		for j := range p.Data {
			if p.Data[j] != b.Params[i].Data[j] {
				t.Fatalf("%s[%d] differs between equal seeds", p.Name, j)
			}
		}
		switch {
		case len(p.Shape) == 1 && filepath.Ext(p.Name) == ".bias":
			for _, x := range p.Data {
				if x != 0 {
					t.Fatalf("%s not zero", p.Name)
				}
			}
		case len(p.Shape) == 1:
			for _, x := range p.Data {
				if x != 1 {
					t.Fatalf("%s not one", p.Name)
				}
			}
		default:
			for _, x := range p.Data {
				sum += float64(x)
				sq += float64(x) * float64(x)
				n++
			}
		}
	}
	if a.Params[0].Data[0] == c.Params[0].Data[0] {
		t.Error("different seeds gave the same first weight")
	}
	if std := math.Sqrt(sq/float64(n) - (sum/float64(n))*(sum/float64(n))); math.Abs(std-0.02) > 0.002 {
		t.Errorf("weight std %v, want 0.02", std)
	}
	if _, err := New(Config{}, 1); err == nil {
		t.Error("New with an empty config: no error")
	}
	d := a.Clone()
	d.Params[3].Data[0]++
	if a.Params[3].Data[0] == d.Params[3].Data[0] {
		t.Error("Clone shares parameter storage")
	}
}
