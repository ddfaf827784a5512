package rollout

import (
	"context"
	"math"
	"testing"

	"agentr1/model"
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

// TestKVCacheContinuity rolls out the real model's decoder, with observations appended to the
// cache mid-sequence, and checks every sampled log-probability against a full forward pass of
// the finished trajectory: the cache after an appended observation must give exactly the
// logits of recomputing the whole prefix (token-in, token-out, nothing re-encoded).
func TestKVCacheContinuity(t *testing.T) {
	m := tinyModel(t)
	var tasks []Task
	for g := range 3 {
		tasks = append(tasks, Task{Prompt: []int{1, 2, 3, g}, Group: g, NewEpisode: func() Episode { return &fakeEpisode{} }})
	}
	cfg := Config{N: 4, MaxTurns: 4, MaxTurnTokens: 8, MaxLen: 48, StopTokens: []int{fakeToolEnd, fakeImEnd}, ToolEnd: fakeToolEnd, Workers: 2, Seed: 9}
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
