package model

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"agentr1/tensor"
)

// Sampler chooses the next token from a row of logits. The zero value is greedy (Temperature
// 0 takes the argmax); set Temperature to sample, 1 for softmax(logits) itself.
//
// The filters follow Hugging Face generate's logits warpers, applied in the same order:
// TemperatureLogitsWarper (divide by Temperature), TopKLogitsWarper (keep the TopK largest,
// ties with the k-th included) and TopPLogitsWarper (keep the smallest set of most likely
// tokens whose probability reaches TopP, at least one).
type Sampler struct {
	Temperature float64 // > 0; values <= 0 (and NaN) mean greedy
	TopP        float64 // nucleus mass in (0, 1); 0 or >= 1 disables the filter
	TopK        int     // keep the TopK most likely tokens; 0 or >= vocab disables the filter
	Greedy      bool    // take the argmax (first on ties) instead of sampling
}

// scratch holds a sampler's per-call buffers (probabilities and their order), reused across
// calls and goroutines.
type scratch struct {
	probs []float32 // (V)
	order []int     // (V)
	clean []float32 // (V) the logits with NaN as -Inf, when they need repair
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Sample draws a token from logits (V) using one rng.Float64 (none when greedy) and returns
// it with its log-probability under softmax(logits/Temperature), computed before top-k and
// top-p filtering, as the rollout policy's log-prob must be for PPO's ratio. When greedy, the
// log-probability is under softmax(logits). It is safe for concurrent use with distinct rngs.
//
// Logits a diverging model produces are sampled too, by a defined rule (see repair): NaN counts
// as -Inf, tokens at +Inf share the whole mass, and finite logits too large to divide by the
// temperature in float32 are shifted by their maximum first. When no logit is a number above
// -Inf there is no distribution: it returns token 0 with a log-probability of NaN, which the
// trainer's non-finite checks stop on. It panics if logits is empty.
func (s Sampler) Sample(logits []float32, rng *rand.Rand) (token int, logp float32) {
	V := len(logits)
	if V == 0 {
		panic("model.Sampler.Sample: empty logits")
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	greedy := s.Greedy || !(s.Temperature > 0)
	p, logits, ok := s.tempered(sc, logits, greedy) // (V) each; logits repaired if they had to be
	switch {
	case !ok:
		return 0, float32(math.NaN())
	case greedy:
		token = tensor.Argmax(logits)
	case s.filters(V):
		token = drawKept(s.kept(sc, p, logits), p, rng.Float64())
	default:
		token = draw(p, rng.Float64())
	}
	return token, float32(math.Log(float64(p[token])))
}

// tempered writes p = softmax(logits / Temperature) (V) into sc.probs, or softmax(logits) when
// greedy, and returns it with the logits the filters order tokens by: logits itself, or its
// repaired copy sc.clean when the float32 softmax gave no distribution. ok is false when no
// distribution exists (see repair).
func (s Sampler) tempered(sc *scratch, logits []float32, greedy bool) (p, ordered []float32, ok bool) {
	V := len(logits)
	sc.probs = grow(sc.probs, V)
	p = sc.probs
	if greedy {
		tensor.SoftmaxForward(p, logits, 1, V)
	} else {
		copy(p, logits)
		tensor.Scal(float32(1/s.Temperature), p)
		tensor.SoftmaxForward(p, p, 1, V)
	}
	if isDistribution(p) {
		return p, logits, true
	}
	temperature := 1.0
	if !greedy {
		temperature = s.Temperature
	}
	if !repair(sc, p, logits, temperature) {
		return p, logits, false
	}
	return p, sc.clean, true
}

// filters reports whether top-k or top-p is on for a vocabulary of V tokens.
func (s Sampler) filters(V int) bool {
	return (s.TopK > 0 && s.TopK < V) || (s.TopP > 0 && s.TopP < 1)
}

// kept returns the tokens the filters keep, most likely first (ties by token id), given the
// tempered probabilities p (V) and the logits that order them: the top-k survivors (ties with
// the k-th included), then of those the smallest most-likely prefix whose renormalised mass
// reaches TopP (at least one token).
func (s Sampler) kept(sc *scratch, p, logits []float32) []int {
	order, total := s.candidates(sc, p, logits)
	kept := len(order)
	mass := total // top-p's share is of the whole distribution, or of the top-k survivors
	if s.TopK > 0 && s.TopK < len(p) {
		kept = s.TopK
		kth := logits[order[kept-1]]
		for kept < len(order) && logits[order[kept]] == kth {
			kept++
		}
		mass = 0
		for _, id := range order[:kept] {
			mass += float64(p[id])
		}
	}
	if s.TopP > 0 && s.TopP < 1 {
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
	return order[:kept]
}

// draw returns the token whose interval of the cumulative distribution p (V), walked in token
// order, holds u in [0, 1): no sort is needed when nothing is filtered.
func draw(p []float32, u float64) int {
	acc := 0.0
	for i, pi := range p {
		acc += float64(pi)
		if u < acc {
			return i
		}
	}
	// Rounding left u above the total: take the last possible token.
	token := len(p) - 1
	for p[token] == 0 {
		token--
	}
	return token
}

// drawKept returns the token of kept (most likely first) whose interval of the cumulative
// distribution p renormalised over kept holds u in [0, 1), skipping tokens of probability 0.
func drawKept(kept []int, p []float32, u float64) int {
	total := 0.0
	for _, id := range kept {
		total += float64(p[id])
	}
	u *= total
	acc := 0.0
	for _, id := range kept {
		acc += float64(p[id])
		if u < acc && p[id] > 0 {
			return id
		}
	}
	return kept[0] // rounding left u above the total: take the most likely token
}

// isDistribution reports whether p, a softmax's output, holds no NaN and some positive mass:
// what softmax gives for any logits without NaN or +Inf that the temperature does not push
// past float32's range.
func isDistribution(p []float32) bool {
	positive := false
	for _, pi := range p {
		if pi != pi {
			return false
		}
		positive = positive || pi > 0
	}
	return positive
}

// repair recomputes p = softmax(logits / temperature) for logits that defeat the float32 softmax,
// writing the logits with NaN read as -Inf to sc.clean: if some logit is +Inf, the tokens at
// +Inf share the mass equally (the limit of the softmax as they grow); otherwise the logits
// are shifted by their maximum before the division, in float64, so no quotient overflows. It
// returns false when every logit is -Inf or NaN: no distribution exists.
func repair(sc *scratch, p, logits []float32, temperature float64) bool {
	sc.clean = grow(sc.clean, len(logits))
	clean := sc.clean
	top := math.Inf(-1)
	for i, l := range logits {
		if l != l {
			l = float32(math.Inf(-1))
		}
		clean[i] = l
		top = max(top, float64(l))
	}
	switch {
	case math.IsInf(top, -1):
		return false
	case math.IsInf(top, 1):
		n := 0
		for _, l := range clean {
			if math.IsInf(float64(l), 1) {
				n++
			}
		}
		for i, l := range clean {
			p[i] = 0
			if math.IsInf(float64(l), 1) {
				p[i] = float32(1 / float64(n))
			}
		}
		return true
	}
	sum := 0.0
	for i, l := range clean {
		e := 0.0 // for -Inf, whatever the temperature (an infinite one would make it NaN)
		if !math.IsInf(float64(l), -1) {
			e = math.Exp((float64(l) - top) / temperature)
		}
		p[i] = float32(e)
		sum += e
	}
	for i := range p {
		p[i] = float32(float64(p[i]) / sum)
	}
	return true
}

// candidates returns, most likely first (ties by token id), the tokens the filters can keep: a
// set of the most likely tokens that holds every top-k survivor (with top-k on), or else enough
// mass for top-p. It also returns total, the mass of the whole distribution p: the shortlist
// holds less, and top-p without top-k must measure TopP against all of it, as HF does.
// Rather than sorting the whole vocabulary (151,936 tokens for Qwen2.5), it takes the tokens
// with p_j >= tau for tau = p_max/16, p_max/16^2, ..., 0, stopping at the first set that
// is large enough: any token outside it has at least TopP of mass above it, or more than TopK
// tokens, so the filters drop it whatever the order of the rest.
func (s Sampler) candidates(sc *scratch, p, logits []float32) (order []int, total float64) {
	V := len(p)
	pmax := float32(0)
	for _, pj := range p {
		pmax = max(pmax, pj)
		total += float64(pj)
	}
	sc.order = grow(sc.order, V)
	for tau := pmax / 16; ; tau /= 16 {
		if tau < 1e-30 {
			tau = 0
		}
		order = sc.order[:0]
		mass := 0.0
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
			return order, total
		}
	}
}
