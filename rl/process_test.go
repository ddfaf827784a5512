package rl

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGRPOProcessAdvantageByHand checks a group of two responses against the formula worked by
// hand: one searches (process reward 0.2 on its first turn) and answers right (1), the other
// answers wrong in one turn (0). R = {0.2, 1, 0}: mean 0.4, unbiased std √0.28.
func TestGRPOProcessAdvantageByHand(t *testing.T) {
	//             prompt  turn 1    tool response  turn 2
	mask := MatrixOf(2, 7, []float64{
		0, 1, 1, 0, 0, 1, 1,
		0, 1, 1, 1, 0, 0, 0,
	})
	rewards := MatrixOf(2, 7, []float64{
		0, 0, 0.2, 0, 0, 0, 1,
		0, 0, 0, 0, 0, 0, 0,
	})
	std := math.Sqrt(0.28)
	first, answer, wrong := (0.2-0.4)/std, (1-0.4)/std, (0-0.4)/std
	want := []float64{
		0, first + answer, first + answer, 0, 0, answer, answer,
		0, wrong, wrong, wrong, 0, 0, 0,
	}
	got := GRPOProcessAdvantage(rewards, mask, []int{7, 7}, 0)
	for k, w := range want {
		if math.Abs(got.Data[k]-w) > 1e-12 {
			t.Fatalf("advantage at (%d, %d) = %v, want %v\ngot  %v\nwant %v", k/7, k%7, got.Data[k], w, got.Data, want)
		}
	}
}

// TestGRPOProcessAdvantageOneTurnIsGRPO: when every response is one turn, each has one step
// whose reward is its score, and the advantage is GRPOAdvantage's.
func TestGRPOProcessAdvantageOneTurnIsGRPO(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const b, l = 12, 9
	rewards, mask := NewMatrix(b, l), NewMatrix(b, l)
	index := make([]int, b)
	for i := range b {
		index[i] = i / 4
		start, end := 1+rng.IntN(3), 5+rng.IntN(4)
		for t := start; t < end; t++ {
			mask.Row(i)[t] = 1
		}
		rewards.Row(i)[end-1] = float64(rng.IntN(3)) / 2
		if rng.IntN(2) == 0 {
			rewards.Row(i)[start] += 0.2 // a process reward inside the one turn
		}
	}
	got := GRPOProcessAdvantage(rewards, mask, index, 1e-6)
	want := GRPOAdvantage(rewards, mask, index, 1e-6, true)
	for k := range want.Data {
		if math.Abs(got.Data[k]-want.Data[k]) > 1e-12 {
			t.Fatalf("position %d: %v, GRPO %v", k, got.Data[k], want.Data[k])
		}
	}
}

// TestTurnSteps splits a row into its turns and gives each the rewards up to the next one,
// those before the first turn and on a tool response included.
func TestTurnSteps(t *testing.T) {
	mask := []float64{0, 1, 1, 0, 0, 1, 0, 1}
	rewards := []float64{0.5, 0, 0.2, 0, 0.1, 0, 0, 1}
	got := turnSteps(rewards, mask)
	want := []turnStep{{1, 3, 0.8}, {5, 6, 0}, {7, 8, 1}}
	if len(got) != len(want) {
		t.Fatalf("turns %+v, want %+v", got, want)
	}
	for k := range want {
		if got[k].start != want[k].start || got[k].end != want[k].end || math.Abs(got[k].reward-want[k].reward) > 1e-12 {
			t.Errorf("turn %d: %+v, want %+v", k, got[k], want[k])
		}
	}
	if s := turnSteps([]float64{1, 0}, []float64{0, 0}); len(s) != 0 {
		t.Errorf("a row without agent tokens has turns %+v", s)
	}
}
