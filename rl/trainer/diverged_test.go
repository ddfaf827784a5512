package trainer

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestDivergedPolicyStopsTheStep breaks the policy two ways: a NaN weight (its rollout samples
// from NaN logits, which the sampler answers with NaN log-probs), and finite weights so large
// that the logits overflow. Step must return ErrDiverged naming the step instead of updating,
// and CheckPolicy must refuse both policies while it passes a healthy one.
func TestDivergedPolicyStopsTheStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(tr *Trainer)
		want   string
	}{
		{"nan weight", func(tr *Trainer) { tr.Policy.Params[0].Data[0] = float32(math.NaN()) }, "weight " + "model.embed_tokens.weight"},
		{"huge weights", func(tr *Trainer) {
			for _, p := range tr.Policy.Params {
				for k := range p.Data {
					p.Data[k] = 3e37
				}
			}
		}, "log-probs over a training prompt are not finite"},
	} {
		tr, err := New(tinyRLConfig(GRPO), 11, tinyModel(t, 4), fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.CheckPolicy(); err != nil {
			t.Fatalf("%s: healthy policy refused: %v", tc.name, err)
		}
		tc.break_(tr)
		tr.Policy.MarkWeightsChanged()
		err = tr.CheckPolicy()
		if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckPolicy = %v, want ErrDiverged saying %q", tc.name, err, tc.want)
		}
		_, err = tr.Step(context.Background())
		if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "step ") {
			t.Errorf("%s: Step = %v, want ErrDiverged naming the step", tc.name, err)
		}
		if tr.StepsDone != 0 {
			t.Errorf("%s: StepsDone = %d after a diverged step, want 0", tc.name, tr.StepsDone)
		}
	}
}
