package rollout

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"agentr1/mdp"
)

// Token ids of the fake vocabulary: 0..9 are "words", then the two stop tags.
const (
	fakeVocab   = 12
	fakeToolEnd = 10 // `</tool_call>`
	fakeImEnd   = 11 // `<|im_end|>`
)

// scriptDecoder is a Decoder whose next-token logits come from a function of the row's whole
// history, so a test can check that the history (the KV cache) is exactly what the rollout fed.
type scriptDecoder struct {
	history [][]int
	next    func(row int, history []int) []float32 // (V) logits
	steps   int                                    // batched Step calls
}

func newScriptDecoder(rows int, next func(row int, history []int) []float32) *scriptDecoder {
	return &scriptDecoder{history: make([][]int, rows), next: next}
}

func (d *scriptDecoder) Reset(row int) { d.history[row] = d.history[row][:0] }

func (d *scriptDecoder) Append(row int, tokens []int) []float32 {
	d.history[row] = append(d.history[row], tokens...)
	return d.next(row, d.history[row])
}

func (d *scriptDecoder) Step(rows []int, tokens []int) [][]float32 {
	d.steps++
	out := make([][]float32, len(rows))
	for j, r := range rows {
		d.history[r] = append(d.history[r], tokens[j])
		out[j] = d.next(r, d.history[r])
	}
	return out
}

func (d *scriptDecoder) Len(row int) int { return len(d.history[row]) }

// oneHot returns logits with a large value at tok.
func oneHot(tok int) []float32 {
	l := make([]float32, fakeVocab)
	l[tok] = 30
	return l
}

// testSampler samples from softmax(logits) (or takes the argmax when greedy) and returns the
// log-probability of the token under softmax(logits).
type testSampler struct{ greedy bool }

func (s testSampler) Sample(logits []float32, rng *rand.Rand) (int, float32) {
	mx := math.Inf(-1)
	arg := 0
	for i, x := range logits {
		if float64(x) > mx {
			mx, arg = float64(x), i
		}
	}
	sum := 0.0
	for _, x := range logits {
		sum += math.Exp(float64(x) - mx)
	}
	tok := arg
	if !s.greedy {
		u := rng.Float64() * sum
		for i, x := range logits {
			u -= math.Exp(float64(x) - mx)
			if u <= 0 {
				tok = i
				break
			}
		}
	}
	return tok, float32(float64(logits[tok]) - mx - math.Log(sum))
}

// fakeWord is the token fakeEncoder gives any word that is not a token id (the words of
// ObsCutMarker).
const fakeWord = 9

// fakeEncoder writes token ids as space-separated decimal numbers; any other word encodes as
// fakeWord.
type fakeEncoder struct{}

func (fakeEncoder) Encode(text string) []int {
	var ids []int
	for _, f := range strings.Fields(text) {
		n, err := strconv.Atoi(f)
		if err != nil {
			n = fakeWord
		}
		if n < 0 || n >= fakeVocab {
			panic(fmt.Sprintf("fakeEncoder: %q is not a token of the fake vocabulary", f))
		}
		ids = append(ids, n)
	}
	return ids
}

func (fakeEncoder) Decode(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, " ")
}

// fakeEpisode answers a turn ending in `</tool_call>` with an observation (obs, "7 7 7" when
// empty, whose last tail bytes are its ObservationTail) and reward 0.1, and ends the episode
// on any other turn. It records every turn it saw.
type fakeEpisode struct {
	obs       func(turn int) (text string, tail int) // nil: "7 7 7", no tail
	turns     []string
	finished  int
	truncated bool
}

func (e *fakeEpisode) Step(_ context.Context, turn string) (Transition, error) {
	e.turns = append(e.turns, turn)
	if !strings.HasSuffix(turn, strconv.Itoa(fakeToolEnd)) {
		return Transition{Done: true}, nil
	}
	if e.obs == nil {
		return Transition{Observation: "7 7 7", Reward: 0.1}, nil
	}
	text, tail := e.obs(len(e.turns))
	return Transition{Observation: text, ObservationTail: tail, Reward: 0.1}, nil
}

func (e *fakeEpisode) Finish(truncated bool) Outcome {
	e.finished++
	e.truncated = truncated
	return Outcome{Reward: float64(len(e.turns)), Stats: map[string]float64{"turns_seen": float64(len(e.turns))}}
}

// copyDecoder is a scriptDecoder that can copy rows, like model.Decoder.
type copyDecoder struct {
	*scriptDecoder
	copies int
}

func (d *copyDecoder) CopyRow(dst, src int) {
	d.copies++
	d.history[dst] = append(d.history[dst][:0], d.history[src]...)
}

// segment is one contiguous run of a result's tokens after the prompt, as the tests read a
// trajectory: an agent turn's action (with its log-probs and the process reward of its tool
// call) or the observation that followed it.
type segment struct {
	tokens   []int
	logProbs []float32 // nil for observations
	agent    bool
	reward   float64 // the process reward of the action's tool call (agent segments)
}

// segmentsOf lists r's turns as alternating agent and observation segments; a turn without
// an observation (the last, or one whose observation was empty) gives its action alone.
func segmentsOf(r *Result) []segment {
	var out []segment
	for _, turn := range r.Turns {
		out = append(out, segment{tokens: turn.Action, logProbs: turn.ActionLogProbs, agent: true, reward: callReward(turn)})
		if len(turn.Observation) > 0 {
			out = append(out, segment{tokens: turn.Observation})
		}
	}
	return out
}

// callReward is the process reward of a turn's tool calls.
func callReward(turn mdp.Turn) float64 {
	r := 0.0
	for _, c := range turn.ToolCalls {
		r += c.Reward
	}
	return r
}
