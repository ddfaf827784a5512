package rollout

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"agentr1/mdp"
)

// scripted returns a decoder whose row r emits scripts[r] token by token (then token 1 forever).
func scripted(scripts [][]int) *scriptDecoder {
	calls := make([]int, len(scripts))
	return newScriptDecoder(len(scripts), func(row int, _ []int) []float32 {
		k := calls[row]
		calls[row]++
		if k < len(scripts[row]) {
			return oneHot(scripts[row][k])
		}
		return oneHot(1)
	})
}

func baseConfig() Config {
	return Config{N: 1, MaxTurns: 3, MaxTurnTokens: 6, MaxLen: 40, StopTokens: []int{fakeToolEnd, fakeImEnd}, ToolEnd: fakeToolEnd, Workers: 2, Seed: 1}
}

func TestRunScripted(t *testing.T) {
	prompt := []int{5, 5}
	type want struct {
		segments  [][]int // tokens of each segment, agent and observation alternating
		agent     []bool
		rewards   []float64
		truncated bool
		cut       string // which limit: "length", "turns", "turn-tokens" or ""
		turns     int
		envTurns  []string
		cutObs    int      // observations cut to MaxObsTokens
		cuts      []string // Result.Cuts
	}
	cases := []struct {
		name   string
		script []int
		cfg    func(*Config)
		obs    func(turn int) (string, int) // the episode's observations; nil: "7 7 7"
		want   want
	}{
		{
			name:   "answer in one turn",
			script: []int{2, 3, fakeImEnd},
			want: want{segments: [][]int{{2, 3, fakeImEnd}}, agent: []bool{true}, rewards: []float64{0},
				turns: 1, envTurns: []string{"2 3 11"}},
		},
		{
			name:   "tool call then answer",
			script: []int{2, fakeToolEnd, 4, fakeImEnd},
			want: want{segments: [][]int{{2, fakeToolEnd}, {7, 7, 7}, {4, fakeImEnd}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0}, turns: 2, envTurns: []string{"2 10", "4 11"}},
		},
		{
			name:   "turn token limit hands the cut turn to the env",
			script: []int{2, 2, 2, 2, 2, 2, 2},
			want: want{segments: [][]int{{2, 2, 2, 2, 2, 2}}, agent: []bool{true}, rewards: []float64{0},
				truncated: true, cut: "turn-tokens", turns: 1, envTurns: []string{"2 2 2 2 2 2"},
				cuts: []string{"turn 1: 6 tokens generated without a stop token: MaxTurnTokens is 6"}},
		},
		{
			name:   "turn limit cuts a tool call in the last turn",
			script: []int{fakeToolEnd, fakeToolEnd, fakeToolEnd, fakeToolEnd},
			cfg:    func(c *Config) { c.MaxTurns = 2 },
			want: want{segments: [][]int{{fakeToolEnd}, {7, 7, 7}, {fakeToolEnd}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0.1}, truncated: true, cut: "turns", turns: 2, envTurns: []string{"10", "10"},
				cuts: []string{"turn 2 still called a tool: MaxTurns is 2"}},
		},
		{
			name:   "total length cuts mid turn without an env step",
			script: []int{2, fakeToolEnd, 3, 3, 3, 3},
			cfg:    func(c *Config) { c.MaxLen = 9 }, // prompt 2 + turn 2 + obs 3 = 7, then 2 more tokens
			want: want{segments: [][]int{{2, fakeToolEnd}, {7, 7, 7}, {3, 3}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0}, truncated: true, cut: "length", turns: 2, envTurns: []string{"2 10"},
				cuts: []string{"turn 2: prompt and response reached MaxLen 9 tokens while generating"}},
		},
		{
			name:   "observation that does not fit cuts the episode",
			script: []int{2, fakeToolEnd, 3},
			cfg:    func(c *Config) { c.MaxLen = 7 },
			want: want{segments: [][]int{{2, fakeToolEnd}}, agent: []bool{true}, rewards: []float64{0.1},
				truncated: true, cut: "length", turns: 1, envTurns: []string{"2 10"},
				cuts: []string{"turn 1: observation of 3 tokens does not fit: 4 of MaxLen 7 tokens used, one must stay for the next turn"}},
		},
		{
			name:   "observation cap keeps the head, a marker and the tail",
			script: []int{fakeToolEnd, fakeImEnd},
			cfg:    func(c *Config) { c.MaxObsTokens = 7 },
			obs:    func(int) (string, int) { return "7 7 7 7 7 7 8 8", len(" 8 8") },
			// head 7 7, marker "...[truncated 4 tokens]" = 9 4 9, tail 8 8
			want: want{segments: [][]int{{fakeToolEnd}, {7, 7, fakeWord, 4, fakeWord, 8, 8}, {fakeImEnd}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0}, turns: 2, envTurns: []string{"10", "11"}, cutObs: 1,
				cuts: []string{"turn 1: observation of 8 tokens cut to MaxObsTokens 7"}},
		},
		{
			name:   "observation at the cap is whole",
			script: []int{fakeToolEnd, fakeImEnd},
			cfg:    func(c *Config) { c.MaxObsTokens = 8 },
			obs:    func(int) (string, int) { return "7 7 7 7 7 7 8 8", len(" 8 8") },
			want: want{segments: [][]int{{fakeToolEnd}, {7, 7, 7, 7, 7, 7, 8, 8}, {fakeImEnd}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0}, turns: 2, envTurns: []string{"10", "11"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			dec := scripted([][]int{tc.script})
			ep := &fakeEpisode{obs: tc.obs}
			tasks := []Task{{Prompt: prompt, NewEpisode: func() Episode { return ep }, Group: 3}}
			out, err := Run(context.Background(), dec, testSampler{greedy: true}, fakeEncoder{}, tasks, cfg)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			s := out[0]
			var segs [][]int
			var agent []bool
			var rewards []float64
			for _, seg := range segmentsOf(s) {
				segs = append(segs, seg.tokens)
				agent = append(agent, seg.agent)
				rewards = append(rewards, seg.reward)
				if seg.agent != (seg.logProbs != nil) || (seg.agent && len(seg.logProbs) != len(seg.tokens)) {
					t.Errorf("%s: segment %v: %d log-probs for agent=%v", tc.name, seg.tokens, len(seg.logProbs), seg.agent)
				}
			}
			// A turn closing `</tool_call>` records the call on that token with its reward.
			for k, turn := range s.Turns {
				var want []mdp.ToolCall
				if n := len(turn.Action); turn.Action[n-1] == fakeToolEnd {
					want = []mdp.ToolCall{{End: n - 1, Reward: 0.1}}
				}
				if !reflect.DeepEqual(turn.ToolCalls, want) {
					t.Errorf("%s: turn %d %v: tool calls %+v, want %+v", tc.name, k+1, turn.Action, turn.ToolCalls, want)
				}
			}
			if !reflect.DeepEqual(segs, tc.want.segments) || !reflect.DeepEqual(agent, tc.want.agent) || !reflect.DeepEqual(rewards, tc.want.rewards) {
				t.Errorf("%s: segments %v agent %v rewards %v, want %v %v %v", tc.name, segs, agent, rewards, tc.want.segments, tc.want.agent, tc.want.rewards)
			}
			if s.Truncated() != tc.want.truncated || len(s.Turns) != tc.want.turns || s.CutObservations != tc.want.cutObs {
				t.Errorf("%s: truncated %v turns %d cut observations %d, want %v %d %d", tc.name, s.Truncated(), len(s.Turns),
					s.CutObservations, tc.want.truncated, tc.want.turns, tc.want.cutObs)
			}
			if !slices.Equal(s.Cuts, tc.want.cuts) {
				t.Errorf("%s: cuts %q, want %q", tc.name, s.Cuts, tc.want.cuts)
			}
			checkFlattens(t, tc.name, s)
			cut := map[string]bool{"length": s.CutMaxLength, "turns": s.CutMaxTurns, "turn-tokens": s.CutTurnTokens}
			for name, set := range cut {
				if set != (name == tc.want.cut) {
					t.Errorf("%s: cut %s = %v, want cut %q", tc.name, name, set, tc.want.cut)
				}
			}
			if !reflect.DeepEqual(ep.turns, tc.want.envTurns) {
				t.Errorf("%s: env saw %q, want %q", tc.name, ep.turns, tc.want.envTurns)
			}
			if ep.finished != 1 || ep.truncated != tc.want.truncated || s.OutcomeReward != float64(len(ep.turns)) || s.Stats["turns_seen"] != float64(len(ep.turns)) {
				t.Errorf("%s: Finish called %d times (truncated %v), outcome %v %v", tc.name, ep.finished, ep.truncated, s.OutcomeReward, s.Stats)
			}
			if s.Group != 3 || !slices.Equal(s.Prompt, prompt) {
				t.Errorf("%s: group %d prompt %v", tc.name, s.Group, s.Prompt)
			}
			if got := prompt[0:len(prompt):len(prompt)]; s.ResponseLen()+len(got) > cfg.MaxLen {
				t.Errorf("%s: length %d exceeds MaxLen %d", tc.name, s.ResponseLen()+len(got), cfg.MaxLen)
			}
			// The cache holds the prompt and every segment, except the very last sampled token.
			var fed []int
			fed = append(fed, prompt...)
			for _, seg := range segmentsOf(s) {
				fed = append(fed, seg.tokens...)
			}
			if h := dec.history[0]; !slices.Equal(h, fed[:len(fed)-1]) {
				t.Errorf("%s: decoder history %v, want %v", tc.name, h, fed[:len(fed)-1])
			}
		})
	}
}

// randomRun rolls out 3 tasks x 4 samples with a sampler drawing from a smooth distribution.
func randomRun(t *testing.T, seed uint64, workers int, copyRows bool) []*Result {
	t.Helper()
	// Logits depend on the whole history, so any cache corruption changes the samples.
	dec := newScriptDecoder(12, func(_ int, h []int) []float32 {
		l := historyLogits(h, 3, 7, 0.3)
		l[fakeImEnd] += 0.5
		return l
	})
	var d Decoder = dec
	if copyRows {
		d = &copyDecoder{scriptDecoder: dec}
	}
	var tasks []Task
	for g := range 3 {
		tasks = append(tasks, Task{Prompt: []int{g + 1, 2, 3}, Group: g, NewEpisode: func() Episode { return &fakeEpisode{} }})
	}
	cfg := baseConfig()
	cfg.N, cfg.Seed, cfg.Workers = 4, seed, workers
	out, err := Run(context.Background(), d, testSampler{}, fakeEncoder{}, tasks, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunDeterministic(t *testing.T) {
	a := randomRun(t, 7, 1, false)
	b := randomRun(t, 7, 4, false)
	c := randomRun(t, 8, 1, false)
	cp := randomRun(t, 7, 2, true)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, workers 1 vs 4: samples differ")
	}
	if !reflect.DeepEqual(a, cp) {
		t.Errorf("prefilling once and copying rows changed the samples")
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 gave identical samples")
	}
	for i, s := range a {
		if s.Index != i || s.Group != i/4 {
			t.Errorf("row %d: index %d group %d", i, s.Index, s.Group)
		}
	}
	// The group's samples must not all be identical (per-row streams differ).
	if reflect.DeepEqual(a[0].Turns, a[1].Turns) && reflect.DeepEqual(a[1].Turns, a[2].Turns) {
		t.Errorf("rows of one group sampled identical trajectories")
	}
}

// sized is a scriptDecoder that reports a capacity, as model.Decoder does.
type sized struct {
	*scriptDecoder
	rows, maxLen int
}

func (d sized) Rows() int   { return d.rows }
func (d sized) MaxLen() int { return d.maxLen }

// TestRunLongPrompt checks that without RefuseLongPrompts a prompt of MaxLen tokens or more
// gives a result cut before generating, saying why, while the other rows of the batch run.
func TestRunLongPrompt(t *testing.T) {
	cfg := baseConfig()
	cfg.MaxLen = 3
	long, short := &fakeEpisode{}, &fakeEpisode{}
	dec := scripted([][]int{{fakeImEnd}, {2, fakeImEnd}})
	out, err := Run(context.Background(), dec, testSampler{greedy: true}, fakeEncoder{}, []Task{
		{Prompt: []int{1, 2, 3}, NewEpisode: func() Episode { return long }},
		{Prompt: []int{1}, NewEpisode: func() Episode { return short }},
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := out[0]
	want := []string{"prompt of 3 tokens leaves no room for a response: MaxLen is 3 tokens, prompt + response"}
	if !s.CutPrompt || !s.CutMaxLength || !s.Truncated() || len(segmentsOf(s)) != 0 || !slices.Equal(s.Cuts, want) ||
		long.finished != 1 || !long.truncated || len(dec.history[0]) != 0 {
		t.Errorf("long prompt: cut prompt %v length %v truncated %v, %d segments, cuts %q, finished %d (truncated %v), decoder fed %v",
			s.CutPrompt, s.CutMaxLength, s.Truncated(), len(segmentsOf(s)), s.Cuts, long.finished, long.truncated, dec.history[0])
	}
	if s := out[1]; s.Truncated() || s.CutPrompt || len(segmentsOf(s)) != 1 || short.finished != 1 {
		t.Errorf("short prompt beside it: truncated %v cut prompt %v, %d segments", s.Truncated(), s.CutPrompt, len(segmentsOf(s)))
	}
}

// TestRunRefuses checks that a rollout that cannot be done as configured is refused before
// anything is generated, with an error naming the limit, its value and what exceeded it.
func TestRunRefuses(t *testing.T) {
	cases := []struct {
		name   string
		prompt []int
		cfg    func(*Config)
		dec    func(*scriptDecoder) Decoder
		want   string
	}{
		{name: "prompt longer than MaxLen", prompt: []int{1, 2, 3, 4}, cfg: func(c *Config) { c.MaxLen, c.RefuseLongPrompts = 3, true },
			want: "rollout: task 0: prompt of 4 tokens leaves no room for a response: MaxLen is 3 tokens"},
		{name: "prompt of exactly MaxLen", prompt: []int{1, 2, 3}, cfg: func(c *Config) { c.MaxLen, c.RefuseLongPrompts = 3, true },
			want: "prompt of 3 tokens leaves no room"},
		{name: "empty prompt", prompt: []int{}, want: "rollout: task 0: empty prompt"},
		{name: "MaxLen beyond the decoder", prompt: []int{1}, dec: func(d *scriptDecoder) Decoder { return sized{d, 1, 39} },
			want: "rollout: MaxLen 40 exceeds the decoder's 39 tokens per row"},
		{name: "more rows than the decoder", prompt: []int{1}, cfg: func(c *Config) { c.N = 2 },
			dec: func(d *scriptDecoder) Decoder { return sized{d, 1, 40} }, want: "1 tasks x N 2 = 2 rows, the decoder holds 1"},
		{name: "negative MaxObsTokens", prompt: []int{1}, cfg: func(c *Config) { c.MaxObsTokens = -1 }, want: "rollout: MaxObsTokens = -1"},
		{name: "zero MaxTurnTokens", prompt: []int{1}, cfg: func(c *Config) { c.MaxTurnTokens = 0 }, want: "rollout: MaxTurnTokens = 0"},
		{name: "zero MaxTurns", prompt: []int{1}, cfg: func(c *Config) { c.MaxTurns = 0 }, want: "rollout: MaxTurns = 0"},
		{name: "MaxLen 1", prompt: []int{1}, cfg: func(c *Config) { c.MaxLen = 1 }, want: "rollout: MaxLen = 1"},
		{name: "ToolEnd not a stop token", prompt: []int{1}, cfg: func(c *Config) { c.ToolEnd = 3 },
			want: "rollout: ToolEnd 3 is not one of StopTokens [10 11]"},
	}
	for _, tc := range cases {
		cfg := baseConfig()
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		sd := scripted([][]int{{fakeImEnd}, {fakeImEnd}})
		var dec Decoder = sd
		if tc.dec != nil {
			dec = tc.dec(sd)
		}
		ep := &fakeEpisode{}
		out, err := Run(context.Background(), dec, testSampler{greedy: true}, fakeEncoder{},
			[]Task{{Prompt: tc.prompt, NewEpisode: func() Episode { return ep }}}, cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: results %v, error %v; want an error containing %q", tc.name, out, err, tc.want)
		}
		if len(sd.history[0]) != 0 || len(ep.turns) != 0 {
			t.Errorf("%s: refused rollout still fed %v to the decoder and %d turns to the episode", tc.name, sd.history[0], len(ep.turns))
		}
	}
}

func TestRunBatchesSteps(t *testing.T) {
	// Four rows generating 5 tokens each in lockstep: 4 batched steps, not 16.
	dec := scripted([][]int{{1, 1, 1, 1, fakeImEnd}, {1, 1, 1, 1, fakeImEnd}, {1, 1, 1, 1, fakeImEnd}, {1, 1, 1, 1, fakeImEnd}})
	tasks := []Task{{Prompt: []int{1}, NewEpisode: func() Episode { return &fakeEpisode{} }}}
	cfg := baseConfig()
	cfg.N = 4
	if _, err := Run(context.Background(), dec, testSampler{greedy: true}, fakeEncoder{}, tasks, cfg); err != nil {
		t.Fatal(err)
	}
	if dec.steps != 4 {
		t.Errorf("batched steps = %d, want 4", dec.steps)
	}
}

// historyLogits are fake next-token logits (fakeVocab) that depend on the whole history h:
// logit v is ((Σ (i+1)·h[i]) · (v+shift) mod mod) · scale, so any change to the cached
// history changes what is sampled next.
func historyLogits(h []int, shift, mod int, scale float32) []float32 {
	l := make([]float32, fakeVocab)
	sum := 0
	for i, x := range h {
		sum += (i + 1) * x
	}
	for v := range l {
		l[v] = float32((sum*(v+shift))%mod) * scale
	}
	return l
}

// rewardEpisode answers each turn with the next of its scripted process rewards, an
// observation "7" after a turn ending in `</tool_call>`, and ends the episode on any other.
type rewardEpisode struct{ rewards []float64 }

func (e *rewardEpisode) Step(_ context.Context, turn string) (Transition, error) {
	r := e.rewards[0]
	e.rewards = e.rewards[1:]
	if !strings.HasSuffix(turn, "10") {
		return Transition{Done: true, Reward: r}, nil
	}
	return Transition{Observation: "7", Reward: r}, nil
}

func (e *rewardEpisode) Finish(bool) Outcome { return Outcome{Reward: 1} }

// TestRunRecordsToolCalls checks where the trajectory records tool calls: on the last token of
// every turn ending in `</tool_call>`, with the turn's process reward even when it is 0, and on
// the last token of a turn that earned a process reward without closing a call (so the reward
// is kept); a turn that neither closes a call nor earns a reward records none.
func TestRunRecordsToolCalls(t *testing.T) {
	dec := scripted([][]int{{2, fakeToolEnd, 3, fakeToolEnd, 4, fakeImEnd}, {5, fakeImEnd}})
	tasks := []Task{
		{Prompt: []int{1}, NewEpisode: func() Episode { return &rewardEpisode{rewards: []float64{0, 0.5, 0.25}} }},
		{Prompt: []int{1}, NewEpisode: func() Episode { return &rewardEpisode{rewards: []float64{0}} }},
	}
	out, err := Run(context.Background(), dec, testSampler{greedy: true}, fakeEncoder{}, tasks, baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := [][][]mdp.ToolCall{
		{{{End: 1, Reward: 0}}, {{End: 1, Reward: 0.5}}, {{End: 1, Reward: 0.25}}},
		{nil},
	}
	for r, res := range out {
		var got [][]mdp.ToolCall
		for _, turn := range res.Turns {
			got = append(got, turn.ToolCalls)
		}
		if !reflect.DeepEqual(got, want[r]) {
			t.Errorf("row %d: tool calls per turn %+v, want %+v", r, got, want[r])
		}
	}
	if tot := out[0].TotalReward(); tot != 1.75 {
		t.Errorf("row 0: total reward %v, want 1.75 (outcome 1 and process 0.5 + 0.25)", tot)
	}
}
