package pipeline

import (
	"context"
	"slices"
	"strings"
	"testing"

	"agentr1/mdp"
)

// TestSFTWeights checks the SFT loss weights on a two-row batch: 1 on agent tokens (or the
// turn's action weight), the context weight on observation tokens, 0 on the prompt and on the
// padding after a shorter response.
func TestSFTWeights(t *testing.T) {
	long := mdp.Trajectory{Prompt: []int{1, 2}, Turns: []mdp.Turn{
		{Action: []int{3, 4}, ActionLogProbs: make([]float32, 2), Observation: []int{5, 6, 7}},
		{Action: []int{8}, ActionLogProbs: make([]float32, 1)},
	}}
	short := mdp.Trajectory{Prompt: []int{1}, Turns: []mdp.Turn{{Action: []int{9}, ActionLogProbs: make([]float32, 1)}}}
	demos := []*mdp.Trajectory{&long, &short}
	var rows []mdp.Row
	for _, tr := range demos {
		r, err := mdp.Flatten(tr, 0)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	b := mdp.Collate(rows, 0)
	for _, c := range []struct {
		name    string
		cw      float64
		actions [][]float64 // per demonstration and turn (nil: 1)
		nw, cnw float64     // number weights, agent and context, on tokens 4, 6 and 8 (nw 0: not applied)
		want    []float64   // (2, 6)
	}{
		{"masked", 0, nil, 0, 0, []float64{1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}},
		{"context 0.5", 0.5, nil, 0, 0, []float64{1, 1, 0.5, 0.5, 0.5, 1, 1, 0, 0, 0, 0, 0}},
		{"first action a mistake", 0.5, [][]float64{{0, 1}, nil}, 0, 0, []float64{0, 0, 0.5, 0.5, 0.5, 1, 1, 0, 0, 0, 0, 0}},
		{"short weight lists", 0, [][]float64{{0.25}, {}}, 0, 0, []float64{0.25, 0.25, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}},
		// Only the agent's number tokens scale: token 6 is in an observation.
		{"numbers x4", 0.5, [][]float64{{0.5, 1}, nil}, 4, 1, []float64{0.5, 2, 0.5, 0.5, 0.5, 4, 1, 0, 0, 0, 0, 0}},
		{"response numbers x0", 0.5, nil, 1, 0, []float64{1, 1, 0.5, 0, 0.5, 1, 1, 0, 0, 0, 0, 0}},
	} {
		weights := make([][]float64, len(rows))
		for i, d := range demos {
			var aw []float64
			if c.actions != nil {
				aw = c.actions[i]
			}
			weights[i] = tokenWeights(d, aw, c.cw, len(rows[i].Tokens))
			if c.nw != 0 {
				number := []bool{4: true, 6: true, 8: true}
				scaleNumberTokens(weights[i], d, number, c.nw, c.cnw)
			}
			if len(weights[i]) != len(rows[i].Tokens) {
				t.Fatalf("%s: row %d: %d weights for %d tokens", c.name, i, len(weights[i]), len(rows[i].Tokens))
			}
		}
		if got := responseWeights(b, rows, weights); !slices.Equal(got, c.want) {
			t.Errorf("%s: weights %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMistakeWeights checks that a mistake gets the given weight and every other turn 1.
func TestMistakeWeights(t *testing.T) {
	got := mistakeWeights([][]bool{{false, true, false}, {}, {true}}, 0.25)
	want := [][]float64{{1, 0.25, 1}, {}, {0.25}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("demonstration %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestScaleMarked: only the marked tokens' weights scale, and marks shorter than the weights
// leave the rest alone.
func TestScaleMarked(t *testing.T) {
	w := []float64{0, 1, 1, 0.5, 1}
	scaleMarked(w, []bool{true, false, true, true}, 4)
	if want := []float64{0, 1, 4, 2, 1}; !slices.Equal(w, want) {
		t.Errorf("weights %v, want %v", w, want)
	}
}

// TestSFTNameWeightNeedsMarks: a name weight other than 1 without the copied names is refused
// before any step, not trained as the plain loss.
func TestSFTNameWeightNeedsMarks(t *testing.T) {
	cfg := DefaultSFTConfig()
	cfg.NameWeight = 4
	d := &mdp.Trajectory{Prompt: []int{1, 2}, Turns: []mdp.Turn{{Action: []int{3, 4}, ActionLogProbs: make([]float32, 2)}}}
	err := SFTWithOptions(context.Background(), nil, []*mdp.Trajectory{d}, cfg, 0, 1, SFTOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "CopiedNames") {
		t.Errorf("err = %v, want one naming SFTOptions.CopiedNames", err)
	}
}
