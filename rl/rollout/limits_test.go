package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"agentr1/mdp"
)

func TestEncodeObservation(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		tail      int // bytes
		maxTokens int
		want      []int
		cut       bool
		err       string
	}{
		{name: "no cap", text: "1 2 3 4 5", maxTokens: 0, want: []int{1, 2, 3, 4, 5}},
		{name: "exactly the cap", text: "1 2 3 4 5", maxTokens: 5, want: []int{1, 2, 3, 4, 5}},
		{name: "one over, no tail: head and marker", text: "1 2 3 4 5 6", maxTokens: 5,
			want: []int{1, 2, fakeWord, 4, fakeWord}, cut: true},
		{name: "tail kept", text: "1 2 3 4 5 6 7 8", tail: len(" 7 8"), maxTokens: 6,
			want: []int{1, fakeWord, 5, fakeWord, 7, 8}, cut: true},
		{name: "tail and marker fill the cap", text: "1 2 3 4 5 6 7 8", tail: len(" 7 8"), maxTokens: 5,
			want: []int{fakeWord, 6, fakeWord, 7, 8}, cut: true},
		{name: "tail and marker exceed the cap: both kept", text: "1 2 3 4 5 6 7 8", tail: len(" 7 8"), maxTokens: 2,
			want: []int{fakeWord, 6, fakeWord, 7, 8}, cut: true},
		{name: "tail is the whole text", text: "1 2 3 4", tail: len("1 2 3 4"), maxTokens: 3,
			want: []int{fakeWord, 0, fakeWord, 1, 2, 3, 4}, cut: true},
		{name: "tail past the start", text: "1 2", tail: 4, maxTokens: 1, err: "ObservationTail 4 outside the observation's 3 bytes"},
		{name: "negative tail", text: "1 2", tail: -1, maxTokens: 1, err: "ObservationTail -1"},
	}
	for _, c := range cases {
		got, whole, err := EncodeObservation(fakeEncoder{}, c.text, c.tail, c.maxTokens)
		cut := c.maxTokens > 0 && whole > c.maxTokens
		if err == nil && whole != len(fakeEncoder{}.Encode(c.text)) {
			t.Errorf("%s: whole = %d, want the observation's %d tokens", c.name, whole, len(fakeEncoder{}.Encode(c.text)))
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) || cut != c.cut {
			t.Errorf("%s: got %v cut %v err %v, want %v cut %v", c.name, got, cut, err, c.want, c.cut)
		}
	}
}

// TestEncodeObservationMarkerDigits cuts a long observation with a real-text encoder (one
// token per byte) so that the marker's own length decides how much head fits: the result must
// fill the cap exactly and the marker must name the tokens removed.
func TestEncodeObservationMarkerDigits(t *testing.T) {
	for _, n := range []int{30, 99, 100, 101, 1000, 12345} {
		for _, maxTokens := range []int{25, 26, 40, 100} {
			text := strings.Repeat("x", n) + "END"
			got, whole, err := EncodeObservation(byteEncoder{}, text, len("END"), maxTokens)
			cut := whole > maxTokens
			name := fmt.Sprintf("n=%d max=%d", n, maxTokens)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			s := byteEncoder{}.Decode(got)
			if n+3 <= maxTokens {
				if cut || s != text {
					t.Errorf("%s: %q cut %v, want the text whole", name, s, cut)
				}
				continue
			}
			kept := strings.Count(s, "x")
			if want := fmt.Sprintf("%s"+ObsCutMarker+"END", strings.Repeat("x", kept), n-kept); !cut || s != want {
				t.Errorf("%s: %q cut %v, want %q", name, s, cut, want)
			}
			// The cap is filled exactly, unless the marker and the tail alone exceed it.
			if alone := len(fmt.Sprintf(ObsCutMarker, n)) + len("END"); len(got) != max(maxTokens, alone) {
				t.Errorf("%s: %d tokens, want %d (cap %d)", name, len(got), max(maxTokens, alone), maxTokens)
			}
		}
	}
}

// byteEncoder encodes text as its bytes, one token each.
type byteEncoder struct{}

func (byteEncoder) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids
}

func (byteEncoder) Decode(ids []int) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

// checkFlattens lays result s's trajectory out as the trainer does (mdp.Flatten) and checks
// that the row is consistent with its segments: the action mask and advantage mask are 1
// exactly on agent tokens, the sampled log-probs sit there, every reward is placed on an agent
// token (none unplaced) and the length flag is carried.
func checkFlattens(t *testing.T, name string, s *Result) {
	t.Helper()
	var agent []bool    // (T) per token of the row
	var logps []float32 // (T) sampled log-prob, 0 off agent tokens
	wantReward := s.OutcomeReward
	for range s.Prompt {
		agent, logps = append(agent, false), append(logps, 0)
	}
	for k, seg := range segmentsOf(s) {
		if !seg.agent {
			if k == 0 {
				t.Fatalf("%s: observation before any agent turn (segment %d)", name, k)
			}
			for range seg.tokens {
				agent, logps = append(agent, false), append(logps, 0)
			}
			continue
		}
		wantReward += seg.reward
		for _, lp := range seg.logProbs {
			agent, logps = append(agent, true), append(logps, lp)
		}
	}
	row, err := mdp.Flatten(&s.Trajectory, 0)
	if err != nil {
		t.Fatalf("%s: trajectory does not flatten: %v", name, err)
	}
	if len(row.Tokens) != len(agent) || row.CutMaxLength != s.CutMaxLength || row.CutMaxTurns != s.CutMaxTurns || row.UnplacedReward != 0 {
		t.Fatalf("%s: row of %d tokens (want %d), cut length %v turns %v (want %v %v), unplaced reward %v",
			name, len(row.Tokens), len(agent), row.CutMaxLength, row.CutMaxTurns, s.CutMaxLength, s.CutMaxTurns, row.UnplacedReward)
	}
	sum := 0.0
	for i := range agent {
		on := 0.0
		if agent[i] {
			on = 1
		}
		if row.ActionMask[i] != on || row.AdvantageMask[i] != on || row.LogProbs[i] != float64(logps[i]) {
			t.Fatalf("%s: token %d: action mask %v advantage mask %v log-prob %v, want mask %v log-prob %v",
				name, i, row.ActionMask[i], row.AdvantageMask[i], row.LogProbs[i], on, logps[i])
		}
		if row.Rewards[i] != 0 && !agent[i] {
			t.Fatalf("%s: reward %v on non-agent token %d", name, row.Rewards[i], i)
		}
		sum += row.Rewards[i]
	}
	if d := sum - wantReward; d > 1e-12 || d < -1e-12 {
		t.Fatalf("%s: rewards on the row sum to %v, want %v", name, sum, wantReward)
	}
}

// TestRunLimitsHold rolls out random trajectories under small random limits and checks every
// limit on every sample: total length within MaxLen, turns within MaxTurns, turns within
// MaxTurnTokens, observations within MaxObsTokens (when the marker and tail fit) with the
// marker exactly on the cut ones, the cut flags agreeing with what happened, the decoder
// holding exactly the trajectory, and the trajectory flattening with consistent masks.
func TestRunLimitsHold(t *testing.T) {
	const markerAndTail = 3 + 2 // "...[truncated N tokens]" is 3 fake tokens; the tail "8 8" is 2
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 77))
		cfg := baseConfig()
		cfg.N, cfg.Seed = 2, seed
		cfg.MaxLen = 6 + rng.IntN(40)
		cfg.MaxTurns = 1 + rng.IntN(4)
		cfg.MaxTurnTokens = 1 + rng.IntN(8)
		cfg.MaxObsTokens = []int{0, 3, markerAndTail, 6, 9}[rng.IntN(5)]
		name := fmt.Sprintf("seed %d %+v", seed, cfg)
		// Logits depend on the history; the stop tokens are likely enough that turns end.
		dec := newScriptDecoder(6, func(_ int, h []int) []float32 {
			l := historyLogits(h, 5, 11, 0.25)
			l[fakeToolEnd] += 1.2
			l[fakeImEnd] += 0.3
			return l
		})
		var eps []*fakeEpisode
		var tasks []Task
		for g := range 3 {
			prompt := make([]int, 1+rng.IntN(min(5, cfg.MaxLen-1)))
			for i := range prompt {
				prompt[i] = 1 + rng.IntN(6)
			}
			tasks = append(tasks, Task{Prompt: prompt, Group: g, NewEpisode: func() Episode {
				ep := &fakeEpisode{obs: func(turn int) (string, int) {
					head := strings.Repeat("7 ", (turn*5+int(seed)+g)%10) // 0..9 tokens; a cut marker counts at most 11
					if turn%2 == 0 {
						return head + "8 8", len("8 8")
					}
					return head + "8 8", 0
				}}
				eps = append(eps, ep)
				return ep
			}})
		}
		out, err := Run(context.Background(), dec, testSampler{}, fakeEncoder{}, tasks, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for r, s := range out {
			name := fmt.Sprintf("%s row %d", name, r)
			if total := len(s.Prompt) + s.ResponseLen(); total > cfg.MaxLen {
				t.Errorf("%s: %d tokens, MaxLen %d", name, total, cfg.MaxLen)
			}
			agentTurns, cutObs := 0, 0
			segs := segmentsOf(s)
			for k, seg := range segs {
				if seg.agent != (k%2 == 0) || len(seg.tokens) == 0 {
					t.Fatalf("%s: segment %d (agent %v, %d tokens) breaks the agent/observation alternation", name, k, seg.agent, len(seg.tokens))
				}
				if seg.agent {
					agentTurns++
					if len(seg.tokens) > cfg.MaxTurnTokens {
						t.Errorf("%s: turn of %d tokens, MaxTurnTokens %d", name, len(seg.tokens), cfg.MaxTurnTokens)
					}
					continue
				}
				if cfg.MaxObsTokens >= markerAndTail && len(seg.tokens) > cfg.MaxObsTokens {
					t.Errorf("%s: observation of %d tokens, MaxObsTokens %d", name, len(seg.tokens), cfg.MaxObsTokens)
				}
				if i := slices.Index(seg.tokens, fakeWord); i >= 0 {
					cutObs++
					if cfg.MaxObsTokens == 0 || i+3 > len(seg.tokens) || seg.tokens[i+2] != fakeWord {
						t.Errorf("%s: observation %v has a broken marker (MaxObsTokens %d)", name, seg.tokens, cfg.MaxObsTokens)
					}
				}
			}
			if agentTurns != len(s.Turns) || len(s.Turns) > cfg.MaxTurns || s.CutObservations != cutObs {
				t.Errorf("%s: %d agent segments, Turns %d, MaxTurns %d, CutObservations %d, markers %d",
					name, agentTurns, len(s.Turns), cfg.MaxTurns, s.CutObservations, cutObs)
			}
			// Each limit that acted says so, naming itself; none that did not.
			for _, lim := range []struct {
				field string
				n     int
			}{{"MaxLen ", b2i(s.CutMaxLength)}, {"MaxTurns ", b2i(s.CutMaxTurns)}, {"MaxTurnTokens ", b2i(s.CutTurnTokens)}, {"MaxObsTokens ", s.CutObservations}} {
				said := 0
				for _, c := range s.Cuts {
					if strings.Contains(c, lim.field) {
						said++
					}
				}
				if (lim.n == 0) != (said == 0) || (lim.field == "MaxObsTokens " && said != lim.n) {
					t.Errorf("%s: %d cuts by %s(flag %d) in %q", name, said, lim.field, lim.n, s.Cuts)
				}
			}
			if s.Truncated() != (s.CutMaxLength || s.CutMaxTurns || s.CutTurnTokens) {
				t.Errorf("%s: Truncated %v but cut length %v turns %v turn tokens %v", name, s.Truncated(), s.CutMaxLength, s.CutMaxTurns, s.CutTurnTokens)
			}
			last := segs[len(segs)-1]
			stopped := slices.Contains(cfg.StopTokens, last.tokens[len(last.tokens)-1])
			switch {
			case !s.Truncated() && !(last.agent && last.tokens[len(last.tokens)-1] == fakeImEnd):
				t.Errorf("%s: not truncated, but the last segment %v is not an answer", name, last.tokens)
			case s.CutMaxLength && len(s.Prompt)+s.ResponseLen() < cfg.MaxLen && !(last.agent && stopped):
				t.Errorf("%s: cut at length %d < MaxLen without a tool call whose observation did not fit", name, len(s.Prompt)+s.ResponseLen())
			case s.CutMaxTurns && (len(s.Turns) != cfg.MaxTurns || !last.agent):
				t.Errorf("%s: cut at the turn limit after %d turns (MaxTurns %d)", name, len(s.Turns), cfg.MaxTurns)
			}
			var fed []int
			fed = append(fed, s.Prompt...)
			for _, seg := range segs {
				fed = append(fed, seg.tokens...)
			}
			if !slices.Equal(dec.history[r], fed[:len(fed)-1]) {
				t.Errorf("%s: decoder holds %v, want %v", name, dec.history[r], fed[:len(fed)-1])
			}
			checkFlattens(t, name, s)
		}
		for i, ep := range eps {
			if ep.finished != 1 || ep.truncated != out[i].Truncated() {
				t.Errorf("%s: episode %d finished %d times, truncated %v (result %v)", name, i, ep.finished, ep.truncated, out[i].Truncated())
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
