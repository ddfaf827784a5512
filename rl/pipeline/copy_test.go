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

// TestNumberCopyBatch checks the copy rows of numbers: the context is pairs of a distinct key
// and 1 to numberDigitsMax digits; each recall is a key at weight 0 and then, at weight 1,
// exactly the digits that follow that key in the context.
func TestNumberCopyBatch(t *testing.T) {
	keys, digits := []int{100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111}, []int{1, 2, 3}
	rows, weights := numberCopyBatch(keys, digits, 0, rand.New(rand.NewPCG(1, 2)))
	if len(rows) != copyRows {
		t.Fatalf("%d rows, want %d", len(rows), copyRows)
	}
	// number reads the digits after position k of tokens.
	number := func(tokens []int, k int) []int {
		end := k + 1
		for end < len(tokens) && slices.Contains(digits, tokens[end]) {
			end++
		}
		return tokens[k+1 : end]
	}
	for i, r := range rows {
		w, n, ctx := weights[i], r.PromptLen, r.Tokens[:r.PromptLen]
		seen := map[int]bool{}
		pairs := 0
		for k, id := range ctx {
			if slices.Contains(digits, id) {
				continue
			}
			if !slices.Contains(keys, id) || seen[id] {
				t.Fatalf("row %d: key %d at %d is not a key, or not the row's only one", i, id, k)
			}
			seen[id] = true
			if d := len(number(ctx, k)); d < 1 || d > numberDigitsMax {
				t.Fatalf("row %d: key at %d has %d digits", i, k, d)
			}
			pairs++
		}
		if pairs < numberPairsMin || pairs > numberPairsMax || !slices.Contains(keys, ctx[0]) {
			t.Fatalf("row %d: %d pairs, first token %d", i, pairs, ctx[0])
		}
		recalls := 0
		for k := n; k < len(r.Tokens); k++ {
			if !slices.Contains(keys, r.Tokens[k]) {
				continue
			}
			recalls++
			want := number(ctx, slices.Index(ctx, r.Tokens[k]))
			got := number(r.Tokens, k)
			if w[k] != 0 || !slices.Equal(got, want) {
				t.Errorf("row %d: recall of key %d at %d (weight %v) gives %v, want %v", i, r.Tokens[k], k, w[k], got, want)
			}
			for j := k + 1; j <= k+len(got); j++ {
				if w[j] != 1 {
					t.Errorf("row %d: digit at %d has weight %v, want 1", i, j, w[j])
				}
			}
		}
		if recalls != copyRecalls || !slices.Equal(w, r.ActionMask) {
			t.Errorf("row %d: %d recalls, want %d", i, recalls, copyRecalls)
		}
	}
	if k, d := splitNumbers([]int{1, 5, 9}, []bool{5: true}); !slices.Equal(k, []int{1, 9}) || !slices.Equal(d, []int{5}) {
		t.Errorf("splitNumbers: keys %v, digits %v", k, d)
	}
}

// TestStepKind checks the order of the warm start's steps: the copy steps, then with
// CopyEvery k one copy step after every k demonstration steps, each step counted in order
// among the steps of its kind (demonstration steps for their learning rate, copy steps for
// CopyBoth's turns).
func TestStepKind(t *testing.T) {
	c := SFTConfig{CopySteps: 2, Steps: 6, CopyEvery: 3}
	if got := c.TotalSteps(); got != 10 {
		t.Fatalf("TotalSteps %d, want 2 + 6 + 2", got)
	}
	want := []int{-1, -2, 0, 1, 2, -3, 3, 4, 5, -4} // -i: copy step i-1
	for step, w := range want {
		if copyStep, index := c.stepKind(step); copyStep != (w < 0) || (copyStep && index != -w-1) || (!copyStep && index != w) {
			t.Errorf("step %d: copy %v, index %d; want %d", step, copyStep, index, w)
		}
	}
	plain := SFTConfig{CopySteps: 1, Steps: 3}
	for step, w := range []int{-1, 0, 1, 2} {
		if copyStep, index := plain.stepKind(step); copyStep != (w < 0) || (copyStep && index != -w-1) || (!copyStep && index != w) {
			t.Errorf("no CopyEvery: step %d: copy %v, index %d; want %d", step, copyStep, index, w)
		}
	}
}

// TestNumberCopyBatchNames checks the rows with names among the numbers: each recall's cue
// occurs once in the context, the recall copies at weight 1 exactly the tokens that follow
// the cue there, a value is either 1 to numberDigitsMax digits or nameTokensMin to
// nameTokensMax other tokens none of which is a cue of the row, and about nameShare of the
// values are names.
func TestNumberCopyBatchNames(t *testing.T) {
	var keys []int
	for id := 100; id < 140; id++ {
		keys = append(keys, id)
	}
	digits := []int{1, 2, 3}
	rows, weights := numberCopyBatch(keys, digits, 0.5, rand.New(rand.NewPCG(3, 4)))
	names, recalls := 0, 0
	for i, r := range rows {
		w, n, ctx := weights[i], r.PromptLen, r.Tokens[:r.PromptLen]
		var cues []int
		for k := n; k < len(r.Tokens); {
			cue := r.Tokens[k]
			if w[k] != 0 {
				t.Fatalf("row %d: recall at %d starts at weight %v", i, k, w[k])
			}
			end := k + 1
			for end < len(w) && w[end] == 1 {
				end++
			}
			value := r.Tokens[k+1 : end]
			at := slices.Index(ctx, cue)
			if at < 0 || slices.Index(ctx[at+1:], cue) >= 0 {
				t.Fatalf("row %d: cue %d is not in the context exactly once", i, cue)
			}
			if at+1+len(value) > n || !slices.Equal(ctx[at+1:at+1+len(value)], value) {
				t.Fatalf("row %d: recall of %d copies %v, not what follows it in the context", i, cue, value)
			}
			switch digit := slices.Contains(digits, value[0]); {
			case digit && len(value) <= numberDigitsMax && !slices.ContainsFunc(value, func(id int) bool { return !slices.Contains(digits, id) }):
			case !digit && len(value) >= nameTokensMin && len(value) <= nameTokensMax && !slices.ContainsFunc(value, func(id int) bool { return slices.Contains(digits, id) }):
				names++
			default:
				t.Fatalf("row %d: recalled value %v is neither a number nor a name", i, value)
			}
			cues = append(cues, cue)
			recalls++
			k = end
		}
		for _, c := range cues {
			for k := n; k < len(r.Tokens); k++ {
				if w[k] == 1 && r.Tokens[k] == c {
					t.Fatalf("row %d: cue %d also occurs inside a recalled value", i, c)
				}
			}
		}
	}
	if recalls != copyRows*copyRecalls || names < recalls/3 || names > 2*recalls/3 {
		t.Errorf("%d recalls, %d of them names; want %d, about half names", recalls, names, copyRows*copyRecalls)
	}
}

// TestCopyRows checks which rows each copy step draws: spans, numbers, or with CopyBoth
// numbers at even copy steps and spans at odd ones.
func TestCopyRows(t *testing.T) {
	vocab, keys, digits := []int{1, 2, 3, 100, 101, 102, 103, 104, 105}, []int{100, 101, 102, 103, 104, 105}, []int{1, 2, 3}
	spans := func() []mdp.Row { r, _ := copyBatch(vocab, rand.New(rand.NewPCG(5, 6))); return r }()
	numbers := func() []mdp.Row { r, _ := numberCopyBatch(keys, digits, 0, rand.New(rand.NewPCG(5, 6))); return r }()
	for _, c := range []struct {
		cfg   SFTConfig
		index int
		want  []mdp.Row
	}{
		{SFTConfig{}, 0, spans},
		{SFTConfig{}, 1, spans},
		{SFTConfig{CopyNumbers: true}, 1, numbers},
		{SFTConfig{CopyNumbers: true, CopyBoth: true}, 0, numbers},
		{SFTConfig{CopyNumbers: true, CopyBoth: true}, 1, spans},
		{SFTConfig{CopyNumbers: true, CopyBoth: true}, 4, numbers},
	} {
		got, _ := c.cfg.copyRows(c.index, vocab, keys, digits, rand.New(rand.NewPCG(5, 6)))
		if !slices.EqualFunc(got, c.want, sameTokens) {
			t.Errorf("numbers %v, both %v, copy step %d: not the rows wanted", c.cfg.CopyNumbers, c.cfg.CopyBoth, c.index)
		}
	}
}

// TestCopySettingsValidate checks that the copy rows' settings are refused without the rows of
// numbers they shape, and a name share outside [0, 1].
func TestCopySettingsValidate(t *testing.T) {
	for _, c := range []struct {
		numbers, both bool
		share         float64
		ok            bool
	}{
		{true, true, 0.5, true},
		{false, true, 0, false},
		{false, false, 0.5, false},
		{true, false, 1.5, false},
		{true, false, -0.1, false},
	} {
		cfg := DefaultSFTConfig()
		cfg.CopyNumbers, cfg.CopyBoth, cfg.CopyNameShare = c.numbers, c.both, c.share
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("CopyNumbers %v, CopyBoth %v, CopyNameShare %g: error %v, want ok %v", c.numbers, c.both, c.share, err, c.ok)
		}
	}
}
