package model

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"agentr1/tensor"
)

// Sampler chooses the next token from a row of logits. The zero value samples from
// softmax(logits) (temperature 1, no filtering) — set Temperature explicitly.
//
// The filters follow Hugging Face generate's logits warpers, applied in the same order:
// TemperatureLogitsWarper (divide by Temperature), TopKLogitsWarper (keep the TopK largest,
// ties with the k-th included) and TopPLogitsWarper (keep the smallest set of most likely
// tokens whose probability reaches TopP, at least one).
type Sampler struct {
	Temperature float64 // > 0; values <= 0 mean greedy
	TopP        float64 // nucleus mass in (0, 1); 0 or >= 1 disables the filter
	TopK        int     // keep the TopK most likely tokens; 0 or >= vocab disables the filter
	Greedy      bool    // take the argmax (first on ties) instead of sampling
}

// scratch holds a sampler's per-call buffers (probabilities and their order), reused across
// calls and goroutines.
type scratch struct {
	probs []float32 // (V)
	order []int     // (V)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Sample draws a token from logits (V) using one rng.Float64 (none when greedy) and returns
// it with its log-probability under softmax(logits/Temperature), computed before top-k and
// top-p filtering, as the rollout policy's log-prob must be for PPO's ratio. When greedy, the
// log-probability is under softmax(logits). It is safe for concurrent use with distinct rngs.
// It panics if logits is empty.
func (s Sampler) Sample(logits []float32, rng *rand.Rand) (token int, logp float32) {
	V := len(logits)
	if V == 0 {
		panic("model.Sampler.Sample: empty logits")
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.probs = grow(sc.probs, V)
	p := sc.probs // (V) softmax(logits / Temperature)
	if s.Greedy || s.Temperature <= 0 {
		best := tensor.Argmax(logits)
		tensor.SoftmaxForward(p, logits, 1, V)
		return best, float32(math.Log(float64(p[best])))
	}
	copy(p, logits)
	tensor.Scal(float32(1/s.Temperature), p)
	tensor.SoftmaxForward(p, p, 1, V)
	filterK := s.TopK > 0 && s.TopK < V
	filterP := s.TopP > 0 && s.TopP < 1
	if !filterK && !filterP {
		u := rng.Float64()
		acc := 0.0
		token = -1
		for i, pi := range p {
			acc += float64(pi)
			if u < acc {
				token = i
				break
			}
		}
		if token < 0 { // rounding left u above the total: take the last possible token
			for token = V - 1; p[token] == 0; token-- {
			}
		}
		return token, float32(math.Log(float64(p[token])))
	}
	order := s.candidates(sc, p, logits)
	V = len(order)
	kept := V
	if filterK {
		kept = s.TopK
		kth := logits[order[kept-1]]
		for kept < V && logits[order[kept]] == kth {
			kept++
		}
	}
	mass := 0.0 // of the top-k survivors
	for _, id := range order[:kept] {
		mass += float64(p[id])
	}
	if filterP {
		// Keep token i while the renormalised mass strictly above it is below TopP (HF removes
		// tokens whose ascending cumulative probability is <= 1-TopP), always keeping the first.
		above := 0.0
		for i, id := range order[:kept] {
			if i > 0 && above >= s.TopP*mass {
				kept = i
				break
			}
			above += float64(p[id])
		}
	}
	total := 0.0
	for _, id := range order[:kept] {
		total += float64(p[id])
	}
	u := rng.Float64() * total
	acc := 0.0
	token = order[0]
	for _, id := range order[:kept] {
		acc += float64(p[id])
		if u < acc && p[id] > 0 {
			token = id
			break
		}
	}
	return token, float32(math.Log(float64(p[token])))
}

// candidates returns, most likely first (ties by token id), the tokens the filters can keep: a
// set of the most likely tokens that holds every top-k survivor (with top-k on), or else enough
// mass for top-p.
// Rather than sorting the whole vocabulary (151,936 tokens for Qwen2.5), it takes the tokens
// with p_j >= tau for tau = p_max/16, p_max/16^2, ..., 0, stopping at the first set that
// is large enough: any token outside it has at least TopP of mass above it, or more than TopK
// tokens, so the filters drop it whatever the order of the rest.
func (s Sampler) candidates(sc *scratch, p, logits []float32) []int {
	V := len(p)
	pmax, total := float32(0), 0.0
	for _, pj := range p {
		pmax = max(pmax, pj)
		total += float64(pj)
	}
	sc.order = grow(sc.order, V)
	for tau := pmax / 16; ; tau /= 16 {
		if tau < 1e-30 {
			tau = 0
		}
		order, mass := sc.order[:0], 0.0
		for j, pj := range p {
			if pj >= tau {
				order = append(order, j)
				mass += float64(pj)
			}
		}
		var enough bool
		if s.TopK > 0 && s.TopK < V {
			enough = len(order) >= s.TopK // top-p then works within the top-k survivors
		} else {
			enough = mass >= s.TopP*total
		}
		if enough || tau == 0 {
			sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
			return order
		}
	}
}
