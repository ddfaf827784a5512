package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestSamplerGreedy checks the greedy choice (the first argmax, its log-prob at temperature 1)
// asked for by Greedy and by the zero value.
func TestSamplerGreedy(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 1}
	lse := math.Log(math.Exp(0.5) + 2*math.Exp(2) + math.Exp(-1) + math.Exp(1))
	for _, s := range []Sampler{{Greedy: true, Temperature: 0.7}, {}} {
		tok, lp := s.Sample(logits, nil)
		if tok != 1 || math.Abs(float64(lp)-(2-lse)) > 1e-6 {
			t.Errorf("%+v: got token %d logp %v, want 1 and %v", s, tok, lp, 2-lse)
		}
	}
}

// TestSamplerDistribution draws many samples and compares the frequencies with the filtered,
// tempered distribution, and the returned log-prob with the unfiltered tempered one.
func TestSamplerDistribution(t *testing.T) {
	logits := []float32{1, 0.5, 2.5, -1, 0, 2}
	for _, tc := range []struct {
		name string
		s    Sampler
		keep []int // tokens that may be drawn
	}{
		{"plain", Sampler{Temperature: 1}, []int{0, 1, 2, 3, 4, 5}},
		{"temperature", Sampler{Temperature: 0.5}, []int{0, 1, 2, 3, 4, 5}},
		{"top-k", Sampler{Temperature: 1, TopK: 3}, []int{2, 5, 0}},
		// p at T=1: 2.5->.46 2->.28 1->.10 ...: the smallest set reaching 0.7 is {2, 5}.
		{"top-p", Sampler{Temperature: 1, TopP: 0.7}, []int{2, 5}},
		// T=2, top-4 renormalised: 2->.38 5->.30 0->.18 1->.14: mass above 0 is .68 < .7, kept.
		{"top-k+top-p", Sampler{Temperature: 2, TopK: 4, TopP: 0.7}, []int{2, 5, 0}},
	} {
		T := tc.s.Temperature
		p := make([]float64, len(logits))
		var z float64
		for i, x := range logits {
			p[i] = math.Exp(float64(x) / T)
			z += p[i]
		}
		q := make([]float64, len(logits)) // filtered, renormalised
		var zq float64
		for _, i := range tc.keep {
			q[i] = p[i]
			zq += p[i]
		}
		rng := rand.New(rand.NewPCG(51, 51))
		const n = 40000
		count := make([]float64, len(logits))
		for range n {
			tok, lp := tc.s.Sample(logits, rng)
			count[tok]++
			if want := math.Log(p[tok] / z); math.Abs(float64(lp)-want) > 1e-5 {
				t.Fatalf("%s: logp of %d = %v, want %v", tc.name, tok, lp, want)
			}
		}
		for i := range logits {
			want := q[i] / zq
			if got := count[i] / n; math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/n)+1e-9 {
				t.Errorf("%s: token %d drawn with frequency %.4f, want %.4f", tc.name, i, got, want)
			}
		}
	}
}

func TestSamplerSeeded(t *testing.T) {
	logits := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}
	s := Sampler{Temperature: 1.3, TopP: 0.95}
	a, b := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		x, _ := s.Sample(logits, a)
		y, _ := s.Sample(logits, b)
		if x != y {
			t.Fatalf("draw %d: %d vs %d from equal seeds", i, x, y)
		}
	}
}

// keptTokens returns the tokens the sampler s keeps for logits, most likely first.
func keptTokens(s Sampler, logits []float32) []int {
	sc := new(scratch)
	p, ordered, ok := s.tempered(sc, logits, false)
	if !ok {
		return nil
	}
	return s.kept(sc, p, ordered)
}

// TestSamplerTopPWholeDistribution checks top-p without top-k on a long tail, where the
// candidate shortlist holds less than all the mass: p = (0.45, 0.40, 0.05, then 200 tokens of
// 0.0005), TopP 0.9. Hugging Face's TopPLogitsWarper keeps token 2, since the mass above it
// is 0.85 < 0.9 of the whole distribution; a cut against the shortlist's mass (0.9 x 0.90 =
// 0.81) would drop it.
func TestSamplerTopPWholeDistribution(t *testing.T) {
	p := []float64{0.45, 0.40, 0.05}
	for range 200 {
		p = append(p, 0.0005)
	}
	logits := make([]float32, len(p))
	for i, pi := range p {
		logits[i] = float32(math.Log(pi))
	}
	s := Sampler{Temperature: 1, TopP: 0.9}
	if got, want := keptTokens(s, logits), []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}

// TestSamplerLargeVocabulary checks the filters on a large vocabulary against a brute-force
// kept set: the sampler keeps exactly that set, every drawn token is in it, and the most
// likely token is drawn.
func TestSamplerLargeVocabulary(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 91))
	const V = 5000
	logits := make([]float32, V)
	for i := range logits {
		logits[i] = float32(3 * rng.NormFloat64())
	}
	logits[17] = logits[18] // a tie
	for _, s := range []Sampler{
		{Temperature: 1, TopP: 0.5},
		{Temperature: 0.7, TopP: 0.95},
		{Temperature: 1, TopK: 40},
		{Temperature: 1.5, TopK: 300, TopP: 0.3},
	} {
		// Brute force: sort everything, apply top-k then top-p on the renormalised mass.
		order := make([]int, V)
		for i := range order {
			order[i] = i
		}
		sortByLogit(order, logits)
		p := make([]float64, V)
		var z float64
		for i, x := range logits {
			p[i] = math.Exp(float64(x) / s.Temperature)
			z += p[i]
		}
		kept := V
		if s.TopK > 0 {
			kept = s.TopK
			for kept < V && logits[order[kept]] == logits[order[s.TopK-1]] {
				kept++
			}
		}
		var mass float64
		for _, id := range order[:kept] {
			mass += p[id]
		}
		if s.TopP > 0 {
			above := 0.0
			for i, id := range order[:kept] {
				if i > 0 && above >= s.TopP*mass {
					kept = i
					break
				}
				above += p[id]
			}
		}
		if got := keptTokens(s, logits); !slices.Equal(got, order[:kept]) {
			t.Errorf("%+v: kept %d tokens %v..., want %d %v...", s, len(got), got[:min(5, len(got))], kept, order[:min(5, kept)])
		}
		allowed := map[int]bool{}
		for _, id := range order[:kept] {
			allowed[id] = true
		}
		seen := map[int]bool{}
		for range 1000 {
			tok, lp := s.Sample(logits, rng)
			if !allowed[tok] {
				t.Fatalf("%+v: drew token %d outside the %d-token kept set", s, tok, kept)
			}
			if want := math.Log(p[tok] / z); math.Abs(float64(lp)-want) > 1e-4 {
				t.Fatalf("%+v: logp of %d = %v, want %v", s, tok, lp, want)
			}
			seen[tok] = true
		}
		if !seen[order[0]] {
			t.Errorf("%+v: the most likely token was never drawn", s)
		}
	}
}

// sortByLogit sorts token ids by decreasing logit, ties by id.
func sortByLogit(order []int, logits []float32) {
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
}
