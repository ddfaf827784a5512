package rollout

import (
	"context"
	"math"
	"reflect"
	"testing"

	"agentr1/model"
	"agentr1/tensor"
)

// The model's decoder reports its capacity, so Run checks MaxLen and the rows against it.
var _ sizedDecoder = (*model.Decoder)(nil)

// tinyModel is a 2-layer, hidden-32 Qwen2 policy over the fake vocabulary.
func tinyModel(t testing.TB) *model.Model {
	t.Helper()
	cfg := model.Config{
		VocabSize: fakeVocab, HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 128, InitializerRange: 0.3,
	}
	m, err := model.New(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeRollout returns the tasks of groups prompts over the fake vocabulary, each episode the
// fake environment's, and a config that samples n rows of each for up to 4 turns of 8 tokens.
func fakeRollout(groups, n int, seed uint64) ([]Task, Config) {
	var tasks []Task
	for g := range groups {
		tasks = append(tasks, Task{Prompt: []int{1, 2, 3, g}, Group: g, NewEpisode: func() Episode { return &fakeEpisode{} }})
	}
	cfg := Config{N: n, MaxTurns: 4, MaxTurnTokens: 8, MaxLen: 48, StopTokens: []int{fakeToolEnd, fakeImEnd}, ToolEnd: fakeToolEnd, Workers: 2, Seed: seed}
	return tasks, cfg
}

// TestKVCacheContinuity rolls out the real model's decoder, with observations appended to the
// cache mid-sequence, and checks every sampled log-probability against a full forward pass of
// the finished trajectory: the cache after an appended observation must give exactly the
// logits of recomputing the whole prefix (token-in, token-out, nothing re-encoded).
func TestKVCacheContinuity(t *testing.T) {
	m := tinyModel(t)
	tasks, cfg := fakeRollout(3, 4, 9)
	dec := m.NewDecoder(len(tasks)*cfg.N, cfg.MaxLen)
	samples, err := Run(context.Background(), dec, model.Sampler{Temperature: 1}, fakeEncoder{}, tasks, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := model.NewWorkspace()
	observations, checked := 0, 0
	for _, s := range samples {
		tokens := append([]int(nil), s.Prompt...)
		var sampled []float32 // log-prob of each token as sampled, NaN for non-agent tokens
		for range s.Prompt {
			sampled = append(sampled, float32(math.NaN()))
		}
		for _, seg := range segmentsOf(s) {
			tokens = append(tokens, seg.tokens...)
			for k := range seg.tokens {
				if seg.agent {
					sampled = append(sampled, seg.logProbs[k])
				} else {
					sampled = append(sampled, float32(math.NaN()))
				}
			}
			if !seg.agent {
				observations++
			}
		}
		T := len(tokens)
		mask := make([]float32, T)
		for i := range mask {
			mask[i] = 1
		}
		logp, _ := m.Forward(ws, tokens, mask, 1, T)
		for i := 1; i < T; i++ {
			if math.IsNaN(float64(sampled[i])) {
				continue
			}
			checked++
			if d := math.Abs(float64(logp[i] - sampled[i])); d > 1e-4 {
				t.Errorf("row %d token %d: sampled log-prob %g, full forward %g (|diff| %g)", s.Index, i, sampled[i], logp[i], d)
			}
		}
	}
	if observations == 0 || checked == 0 {
		t.Fatalf("no observation was appended (%d) or no token checked (%d): the test cannot tell", observations, checked)
	}
}

// rowByRow hides the model decoder's AppendRows and CopyRow, so that Run feeds it one row at a
// time with Append, as it feeds a decoder without them.
type rowByRow struct{ d *model.Decoder }

func (r rowByRow) Reset(row int)                             { r.d.Reset(row) }
func (r rowByRow) Append(row int, tokens []int) []float32    { return r.d.Append(row, tokens) }
func (r rowByRow) Step(rows []int, tokens []int) [][]float32 { return r.d.Step(rows, tokens) }
func (r rowByRow) Len(row int) int                           { return r.d.Len(row) }

// TestRunFeedsRowsAtOnce checks that a rollout through the decoder's AppendRows (prompts and
// observations of many rows fed at once, on two workers) writes the same trajectories, log-
// probabilities bit for bit, as one that feeds every row with Append.
func TestRunFeedsRowsAtOnce(t *testing.T) {
	m := tinyModel(t)
	tasks, cfg := fakeRollout(4, 3, 11)
	run := func(dec Decoder) []*Result {
		out, err := Run(context.Background(), dec, model.Sampler{Temperature: 1}, fakeEncoder{}, tasks, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	defer tensor.SetWorkers(tensor.SetWorkers(2))
	atOnce := run(m.NewDecoder(len(tasks)*cfg.N, cfg.MaxLen))
	oneByOne := run(rowByRow{m.NewDecoder(len(tasks)*cfg.N, cfg.MaxLen)})
	observations := 0
	for i := range atOnce {
		if !reflect.DeepEqual(atOnce[i], oneByOne[i]) {
			t.Errorf("row %d: fed at once %+v, one by one %+v", i, atOnce[i].Trajectory, oneByOne[i].Trajectory)
		}
		for _, turn := range atOnce[i].Turns {
			observations += len(turn.Observation)
		}
	}
	if observations == 0 {
		t.Fatal("no observation was appended: the test cannot tell")
	}
}
