package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"agentr1/mdp"
)

// TestCopyBatch checks the copy rows: the context's tokens come from the vocabulary, and the
// response is copyRecalls recalls, each a cue at weight 0 and the tokens that follow the cue
// in the context at weight 1, found at a place in the context where the whole recall occurs.
func TestCopyBatch(t *testing.T) {
	vocab := []int{3, 17, 40, 41, 42, 99, 250, 300, 512}
	rows, weights := copyBatch(vocab, rand.New(rand.NewPCG(1, 2)))
	if len(rows) != copyRows || len(weights) != copyRows {
		t.Fatalf("%d rows, %d weight lists, want %d", len(rows), len(weights), copyRows)
	}
	for i, r := range rows {
		w, n := weights[i], r.PromptLen
		if n < copyContextMin || n > copyContextMax || len(w) != len(r.Tokens) || !slices.Equal(w, r.ActionMask) {
			t.Fatalf("row %d: context %d tokens, %d weights for %d tokens", i, n, len(w), len(r.Tokens))
		}
		for k, id := range r.Tokens {
			if !slices.Contains(vocab, id) {
				t.Fatalf("row %d: token %d at %d is not in the vocabulary", i, id, k)
			}
		}
		recalls := 0
		for k := n; k < len(r.Tokens); {
			if w[k] != 0 {
				t.Fatalf("row %d: recall at %d starts with weight %v, want a cue at 0", i, k, w[k])
			}
			end := k + 1
			for end < len(w) && w[end] == 1 {
				end++
			}
			m := end - k - 1
			if m < min(copySpanMin, n-1) || m > copySpanMax {
				t.Errorf("row %d: recall at %d copies %d tokens", i, k, m)
			}
			if !containsRun(r.Tokens[:n], r.Tokens[k:end]) {
				t.Errorf("row %d: recall %v does not occur in the context", i, r.Tokens[k:end])
			}
			recalls++
			k = end
		}
		if recalls != copyRecalls {
			t.Errorf("row %d: %d recalls, want %d", i, recalls, copyRecalls)
		}
	}
	again, _ := copyBatch(vocab, rand.New(rand.NewPCG(1, 2)))
	other, _ := copyBatch(vocab, rand.New(rand.NewPCG(1, 3)))
	if !slices.EqualFunc(rows, again, sameTokens) || slices.EqualFunc(rows, other, sameTokens) {
		t.Error("copy rows are not a function of the random stream")
	}
}

// TestObservationTokens checks that the copy vocabulary is the tool responses' distinct
// tokens, without the prompts' and actions'.
func TestObservationTokens(t *testing.T) {
	demos := []*mdp.Trajectory{
		{Prompt: []int{1, 2}, Turns: []mdp.Turn{{Action: []int{5}, Observation: []int{9, 7, 9}}, {Action: []int{6}}}},
		{Prompt: []int{1}, Turns: []mdp.Turn{{Action: []int{8}, Observation: []int{7, 11}}}},
	}
	if got, want := observationTokens(demos), []int{7, 9, 11}; !slices.Equal(got, want) {
		t.Errorf("observationTokens = %v, want %v", got, want)
	}
}

func containsRun(xs, run []int) bool {
	for s := 0; s+len(run) <= len(xs); s++ {
		if slices.Equal(xs[s:s+len(run)], run) {
			return true
		}
	}
	return false
}

func sameTokens(a, b mdp.Row) bool { return slices.Equal(a.Tokens, b.Tokens) }
