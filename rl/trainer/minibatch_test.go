package trainer

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"agentr1/mdp"
)

// TestMiniBatchOrder checks the two ways a step's rows are cut into mini-batches, on 8 rows of
// lengths 9, 17, 9, 13, 21, 9, 9, 11 cut in 2: by length, rows 0, 2, 5, 6 (length 9) in one
// mini-batch and 1, 3, 4, 7 in the other, in either order (the mini-batches' order is
// shuffled); in row order, rows 0-3 and then 4-7.
func TestMiniBatchOrder(t *testing.T) {
	lengths := []int{9, 17, 9, 13, 21, 9, 9, 11}
	b := &mdp.Batch{B: len(lengths), PromptLens: make([]int, len(lengths)), ResponseLens: make([]int, len(lengths))}
	for r, n := range lengths {
		b.PromptLens[r], b.ResponseLens[r] = 3, n-3
	}
	for _, tc := range []struct {
		order MiniBatchOrder
		want  [][]int // the mini-batches' rows, each sorted; in this order unless any
		any   bool
	}{
		{MiniBatchesByLength, [][]int{{0, 2, 5, 6}, {1, 3, 4, 7}}, true},
		{MiniBatchesByRow, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}, false},
	} {
		tr := &Trainer{Config: RLConfig{MiniBatchOrder: tc.order}}
		for seed := range uint64(4) {
			got := tr.miniBatches(b, 4, rand.New(rand.NewPCG(seed, 1)))
			var sorted [][]int
			for _, rows := range got {
				sorted = append(sorted, slices.Sorted(slices.Values(rows)))
			}
			if tc.any && len(sorted) == 2 && sorted[0][0] != 0 {
				sorted[0], sorted[1] = sorted[1], sorted[0]
			}
			if !slices.EqualFunc(sorted, tc.want, slices.Equal) {
				t.Errorf("%s, seed %d: mini-batches %v, want %v", tc.order, seed, got, tc.want)
			}
		}
	}
}

// TestMiniBatchOrderInStep checks that a traced GRPO step (12 rows, 2 mini-batches) trains on
// the mini-batches MiniBatchOrder gives: in row order rows 0-5, then 6-11.
func TestMiniBatchOrderInStep(t *testing.T) {
	cfg := tinyRLConfig(GRPO)
	cfg.MiniBatches, cfg.MiniBatchOrder = 2, MiniBatchesByRow
	tr, err := New(cfg, 9, tinyModel(t, 5), fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	trace, err := tr.TraceStep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for _, p := range trace.Policy {
		got = append(got, p.MiniBatchRows)
	}
	if want := [][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("mini-batches %v, want %v", got, want)
	}
}

// TestMiniBatchOrderValidate checks that an unknown order is refused by name.
func TestMiniBatchOrderValidate(t *testing.T) {
	cfg := tinyRLConfig(GRPO)
	cfg.MiniBatchOrder = "shuffled"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "MiniBatchOrder") {
		t.Errorf("Validate with order %q: %v, want an error naming MiniBatchOrder", cfg.MiniBatchOrder, err)
	}
}
