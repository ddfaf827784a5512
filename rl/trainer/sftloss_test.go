package trainer

import (
	"slices"
	"testing"

	"agentr1/mdp"
)

// TestSFTWeights checks the SFT loss weights on a two-row batch: 1 on agent tokens, the
// context weight on observation tokens, 0 on the padding after a shorter response.
func TestSFTWeights(t *testing.T) {
	long := mdp.Trajectory{Prompt: []int{1, 2}, Turns: []mdp.Turn{
		{Action: []int{3, 4}, ActionLogProbs: make([]float32, 2), Observation: []int{5, 6, 7}},
		{Action: []int{8}, ActionLogProbs: make([]float32, 1)},
	}}
	short := mdp.Trajectory{Prompt: []int{1}, Turns: []mdp.Turn{{Action: []int{9}, ActionLogProbs: make([]float32, 1)}}}
	var rows []mdp.Row
	for _, tr := range []mdp.Trajectory{long, short} {
		r, err := mdp.Flatten(&tr, 0)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	b := mdp.Collate(rows, 0)
	for _, c := range []struct {
		name string
		cw   float64
		want []float64 // (2, 6)
	}{
		{"masked", 0, []float64{1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}},
		{"context 0.5", 0.5, []float64{1, 1, 0.5, 0.5, 0.5, 1, 1, 0, 0, 0, 0, 0}},
	} {
		if got := sftWeights(b, c.cw); !slices.Equal(got, c.want) {
			t.Errorf("%s: weights %v, want %v", c.name, got, c.want)
		}
	}
}
