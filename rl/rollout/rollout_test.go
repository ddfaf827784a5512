package rollout

import (
	"context"
	"reflect"
	"slices"
	"testing"
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
	return Config{N: 1, MaxTurns: 3, MaxTurnTokens: 6, MaxLen: 40, StopTokens: []int{fakeToolEnd, fakeImEnd}, Workers: 2, Seed: 1}
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
	}
	cases := []struct {
		name   string
		script []int
		cfg    func(*Config)
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
				truncated: true, cut: "turn-tokens", turns: 1, envTurns: []string{"2 2 2 2 2 2"}},
		},
		{
			name:   "turn limit cuts a tool call in the last turn",
			script: []int{fakeToolEnd, fakeToolEnd, fakeToolEnd, fakeToolEnd},
			cfg:    func(c *Config) { c.MaxTurns = 2 },
			want: want{segments: [][]int{{fakeToolEnd}, {7, 7, 7}, {fakeToolEnd}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0.1}, truncated: true, cut: "turns", turns: 2, envTurns: []string{"10", "10"}},
		},
		{
			name:   "total length cuts mid turn without an env step",
			script: []int{2, fakeToolEnd, 3, 3, 3, 3},
			cfg:    func(c *Config) { c.MaxLen = 9 }, // prompt 2 + turn 2 + obs 3 = 7, then 2 more tokens
			want: want{segments: [][]int{{2, fakeToolEnd}, {7, 7, 7}, {3, 3}}, agent: []bool{true, false, true},
				rewards: []float64{0.1, 0, 0}, truncated: true, cut: "length", turns: 2, envTurns: []string{"2 10"}},
		},
		{
			name:   "observation that does not fit cuts the episode",
			script: []int{2, fakeToolEnd, 3},
			cfg:    func(c *Config) { c.MaxLen = 7 },
			want: want{segments: [][]int{{2, fakeToolEnd}}, agent: []bool{true}, rewards: []float64{0.1},
				truncated: true, cut: "length", turns: 1, envTurns: []string{"2 10"}},
		},
		{
			name:   "observation cap keeps the head",
			script: []int{fakeToolEnd, fakeImEnd},
			cfg:    func(c *Config) { c.MaxObsTokens = 2 },
			want: want{segments: [][]int{{fakeToolEnd}, {7, 7}, {fakeImEnd}}, agent: []bool{true, false, true},
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
			ep := &fakeEpisode{}
			tasks := []Task{{Prompt: prompt, NewEpisode: func() Episode { return ep }, Group: 3}}
			out, err := Run(context.Background(), dec, testSampler{greedy: true}, fakeEncoder{}, tasks, cfg)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			s := out[0]
			var segs [][]int
			var agent []bool
			var rewards []float64
			for _, seg := range s.Segments {
				segs = append(segs, seg.Tokens)
				agent = append(agent, seg.Agent)
				rewards = append(rewards, seg.Reward)
				if seg.Agent != (seg.LogProbs != nil) || (seg.Agent && len(seg.LogProbs) != len(seg.Tokens)) {
					t.Errorf("%s: segment %v: %d log-probs for agent=%v", tc.name, seg.Tokens, len(seg.LogProbs), seg.Agent)
				}
			}
			if !reflect.DeepEqual(segs, tc.want.segments) || !reflect.DeepEqual(agent, tc.want.agent) || !reflect.DeepEqual(rewards, tc.want.rewards) {
				t.Errorf("%s: segments %v agent %v rewards %v, want %v %v %v", tc.name, segs, agent, rewards, tc.want.segments, tc.want.agent, tc.want.rewards)
			}
			if s.Truncated != tc.want.truncated || s.Turns != tc.want.turns {
				t.Errorf("%s: truncated %v turns %d, want %v %d", tc.name, s.Truncated, s.Turns, tc.want.truncated, tc.want.turns)
			}
			cut := map[string]bool{"length": s.CutLength, "turns": s.CutTurns, "turn-tokens": s.CutTurnTokens}
			for name, set := range cut {
				if set != (name == tc.want.cut) {
					t.Errorf("%s: cut %s = %v, want cut %q", tc.name, name, set, tc.want.cut)
				}
			}
			if !reflect.DeepEqual(ep.turns, tc.want.envTurns) {
				t.Errorf("%s: env saw %q, want %q", tc.name, ep.turns, tc.want.envTurns)
			}
			if ep.finished != 1 || ep.truncated != tc.want.truncated || s.Outcome.Reward != float64(len(ep.turns)) {
				t.Errorf("%s: Finish called %d times (truncated %v), outcome %v", tc.name, ep.finished, ep.truncated, s.Outcome)
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
			for _, seg := range s.Segments {
				fed = append(fed, seg.Tokens...)
			}
			if h := dec.history[0]; !slices.Equal(h, fed[:len(fed)-1]) {
				t.Errorf("%s: decoder history %v, want %v", tc.name, h, fed[:len(fed)-1])
			}
		})
	}
}

// randomRun rolls out 3 tasks x 4 samples with a sampler drawing from a smooth distribution.
func randomRun(t *testing.T, seed uint64, workers int, copyRows bool) []*Sample {
	t.Helper()
	// Logits depend on the whole history, so any cache corruption changes the samples.
	dec := newScriptDecoder(12, func(_ int, h []int) []float32 {
		l := make([]float32, fakeVocab)
		sum := 0
		for i, x := range h {
			sum += (i + 1) * x
		}
		for v := range l {
			l[v] = float32((sum*(v+3))%7) * 0.3
		}
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
	if reflect.DeepEqual(a[0].Segments, a[1].Segments) && reflect.DeepEqual(a[1].Segments, a[2].Segments) {
		t.Errorf("rows of one group sampled identical trajectories")
	}
}

func TestRunPromptTooLong(t *testing.T) {
	cfg := baseConfig()
	cfg.MaxLen = 3
	ep := &fakeEpisode{}
	out, err := Run(context.Background(), scripted([][]int{{fakeImEnd}}), testSampler{greedy: true}, fakeEncoder{},
		[]Task{{Prompt: []int{1, 2, 3}, NewEpisode: func() Episode { return ep }}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !out[0].Truncated || len(out[0].Segments) != 0 || ep.finished != 1 {
		t.Errorf("prompt longer than MaxLen: truncated %v segments %d finished %d", out[0].Truncated, len(out[0].Segments), ep.finished)
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
