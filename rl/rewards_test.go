package rl

import (
	"math"
	"testing"
)

func TestTokenLevelRewards(t *testing.T) {
	mask := []float64{0, 1, 1, 1, 0, 0, 1, 1, 0} // prompt-like lead, turn 1, tool response, turn 2, pad
	for _, tc := range []struct {
		name    string
		process []ProcessReward
		outcome float64
		want    []float64
		wantErr bool
	}{
		{"outcome only", nil, 1, []float64{0, 0, 0, 0, 0, 0, 0, 1, 0}, false},
		{"process at tool-call close", []ProcessReward{{3, 0.2}}, -0.5, []float64{0, 0, 0, 0.2, 0, 0, 0, -0.5, 0}, false},
		{"process and outcome share the last token", []ProcessReward{{7, 0.1}, {7, 0.1}}, 1, []float64{0, 0, 0, 0, 0, 0, 0, 1.2, 0}, false},
		{"process on a tool-response token", []ProcessReward{{4, 0.2}}, 1, nil, true},
		{"process out of range", []ProcessReward{{9, 0.2}}, 1, nil, true},
	} {
		got, err := TokenLevelRewards(mask, tc.process, tc.outcome)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, want error = %v", tc.name, err, tc.wantErr)
			continue
		}
		for k := range tc.want {
			if math.Abs(got[k]-tc.want[k]) > 1e-15 {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
	if _, err := TokenLevelRewards([]float64{0, 0}, nil, 1); err == nil {
		t.Error("outcome placed on a response without agent tokens")
	}
	if row, err := TokenLevelRewards([]float64{0, 0}, nil, 0); err != nil || row[0] != 0 || row[1] != 0 {
		t.Errorf("empty response with no reward: %v, %v", row, err)
	}
}

// TestProcessRewardReachesEarlierTurn: a process reward at the first turn's closing token and the
// outcome at the end both reach the first turn's tokens through GAE (γ = λ = 1, zero values).
func TestProcessRewardReachesEarlierTurn(t *testing.T) {
	m := MatrixOf(2, 6, []float64{1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0})
	r, err := TokenLevelRewardBatch(m, [][]ProcessReward{{{Pos: 1, Value: 0.25}}, nil}, []float64{1, -1})
	if err != nil {
		t.Fatal(err)
	}
	raw := GAERawAdvantages(r, NewMatrix(2, 6), m, 1, 1)
	if got := raw.At(0, 0); math.Abs(got-1.25) > 1e-15 {
		t.Errorf("first token's advantage %v, want 1.25 (process 0.25 + outcome 1)", got)
	}
	if got := raw.At(1, 0); math.Abs(got+1) > 1e-15 {
		t.Errorf("row 1 first token's advantage %v, want -1", got)
	}
	if _, err := TokenLevelRewardBatch(m, [][]ProcessReward{{{Pos: 2, Value: 1}}, nil}, []float64{0, 0}); err == nil {
		t.Error("process reward on a masked token accepted")
	}
}
