package trainer

import (
	"context"
	"fmt"
	"math"
	"testing"

	"agentr1/model"
	"agentr1/rl"
)

// TestTraceStep checks the figures a traced step reports (what agentr1 explain prints) against
// the rl functions computed independently on the same batch: the advantages from rl's GRPO and
// GAE functions, the old and first new log-probs from a forward pass of the policy as it was
// before the step, the ratio e^(new − old), the clip flags from the clipped objective's
// branches, the loss denominators from the mini-batch's mask, dL/dlogp from rl.PPOClipLoss
// (plus the KL loss's when the KL is a loss term), and that dL/dlogp is what the model's
// backward pass received.
func TestTraceStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		algo Algorithm
		cfg  func(*RLConfig)
	}{
		{"grpo, KL loss, entropy bonus", GRPO, nil},
		{"grpo, idle rows left out", GRPO, func(c *RLConfig) { c.KLCoef, c.EntropyCoef = 0, 0 }},
		{"ppo, KL in the reward", PPO, nil},
	} {
		cfg := tinyRLConfig(tc.algo)
		cfg.CriticWarmup = 0
		cfg.Epochs = 2 // the second pass sees a moved policy: ratios off 1, some clipped
		cfg.ClipLow, cfg.ClipHigh = 0.02, 0.02
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		tr, err := New(cfg, 9, tinyModel(t, 5), fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		before := tr.Policy.Clone()
		var criticBefore *model.Critic
		if tr.Critic != nil {
			criticBefore = tr.Critic.Clone()
		}
		type backward struct {
			v     *View
			dlogp []float32
		}
		var backwards []backward
		tr.onBackward = func(v *View, dlogp []float32) { backwards = append(backwards, backward{v, dlogp}) }
		trace, err := tr.TraceStep(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkTrace(t, tc.name, tr, trace, before, criticBefore)
		if len(backwards) != len(trace.Policy) {
			t.Fatalf("%s: %d backward passes, %d policy traces", tc.name, len(backwards), len(trace.Policy))
		}
		for k, p := range trace.Policy {
			bw := backwards[k]
			for i := range p.Rows {
				for j := 0; j < p.GradLogProb.L; j++ {
					if got, want := bw.dlogp[i*bw.v.T+bw.v.P+j], float32(p.GradLogProb.At(i, j)); got != want {
						t.Fatalf("%s: mini-batch %d row %d token %d: backward got dL/dlogp %v, trace says %v", tc.name, k, p.Rows[i], j, got, want)
					}
				}
			}
		}
	}
}

// checkTrace is TestTraceStep's comparison of one traced step with the rl functions.
func checkTrace(t *testing.T, name string, tr *Trainer, trace *StepTrace, before *model.Model, criticBefore *model.Critic) {
	t.Helper()
	c := &tr.Config
	sb := trace.Batch
	b := sb.Collated.Batch
	rewards := rl.MatrixOf(b.B, b.L, sb.Rewards)
	advMask := rl.MatrixOf(b.B, b.L, b.AdvantageMask)
	lossMask := rl.MatrixOf(b.B, b.L, b.ActionMask)

	// The rewards are the rows' token rewards: β·(old − ref) is 0 when the KL is in the reward,
	// the reference being the policy before its first step (old, recomputed, equals ref).
	for k, r := range sb.Rewards {
		if r != b.Rewards[k] {
			t.Fatalf("%s: reward at %d is %v, the row's %v", name, k, r, b.Rewards[k])
		}
	}

	// Advantages (and returns) from rl's functions on the same rewards and masks.
	var wantAdv, wantRet rl.Matrix
	switch c.Algorithm {
	case GRPO:
		wantAdv = rl.GRPOAdvantage(rewards, advMask, sb.Collated.Groups, c.AdvantageEps, c.NormByStd)
		wantRet = wantAdv
	case PPO:
		var err error
		if wantAdv, wantRet, err = rl.GAE(rewards, rl.MatrixOf(b.B, b.L, sb.Values), advMask, c.Gamma, c.Lambda); err != nil {
			t.Fatalf("%s: GAE: %v", name, err)
		}
	}
	for k := range wantAdv.Data {
		if sb.Advantages[k] != wantAdv.Data[k] || sb.Returns[k] != wantRet.Data[k] {
			t.Fatalf("%s: at %d advantage %v return %v, rl gives %v %v", name, k, sb.Advantages[k], sb.Returns[k], wantAdv.Data[k], wantRet.Data[k])
		}
	}

	// Old log-probs (recomputed: CheckOldEvery 1) and the critic's values from the models as
	// they were before the step, row by row.
	ws := &model.Workspace{Temperature: float32(c.Temperature)}
	for r := 0; r < b.B; r++ {
		v := NewView(b, []int{r})
		logpT, _ := before.Forward(ws, v.Tokens, v.Attn, 1, v.T)
		logp := v.ResponseColumns(logpT)
		var vals rl.Matrix
		if criticBefore != nil {
			vals = v.ResponseValues(criticBefore.Forward(model.NewWorkspace(), v.Tokens, v.Attn, 1, v.T))
		}
		for j, tok := range trace.Tokens(r) {
			if !tok.Agent {
				continue
			}
			if d := math.Abs(tok.OldLogProb - logp.At(0, j)); d > 1e-4 {
				t.Fatalf("%s: row %d token %d: old log-prob %v, the policy before the step gives %v", name, r, j, tok.OldLogProb, logp.At(0, j))
			}
			if criticBefore != nil && math.Abs(tok.Value-vals.At(0, j)) > 1e-4 {
				t.Fatalf("%s: row %d token %d: value %v, the critic before the step gives %v", name, r, j, tok.Value, vals.At(0, j))
			}
			if p := trace.Policy[0]; tok.Trained && tok.Epoch == 0 && tok.MiniBatch == 0 && p.Epoch == 0 {
				if d := math.Abs(tok.NewLogProb - logp.At(0, j)); d > 1e-4 {
					t.Fatalf("%s: row %d token %d: new log-prob %v in the first mini-batch, the policy gives %v", name, r, j, tok.NewLogProb, logp.At(0, j))
				}
			}
		}
	}

	// Each policy mini-batch: its inputs are the batch's, its denominators the mini-batch's
	// mask's, and the loss's per-token figures are rl.PPOClipLoss's on them.
	clip := rl.PPOClip{Low: c.ClipLow, High: c.ClipHigh, C: c.ClipC}
	teaching, left, clipped, unclipped, moved := 0, 0, 0, 0, 0
	for _, p := range trace.Policy {
		mb := fmt.Sprintf("%s: mini-batch %d (epoch %d)", name, p.MiniBatch, p.Epoch)
		full := NewView(b, p.MiniBatchRows).Gather(lossMask.Data)
		tokens := rl.MaskedSum(full, full)
		if p.Agg.BatchNumTokens != tokens {
			t.Fatalf("%s: loss over %v tokens, the mini-batch's mask has %v", mb, p.Agg.BatchNumTokens, tokens)
		}
		v := NewView(b, p.Rows)
		old, adv, mask := v.Gather(sb.OldLogProbs), v.Gather(sb.Advantages), v.Gather(lossMask.Data)
		for _, m := range [][2]rl.Matrix{{old, p.OldLogProbs}, {adv, p.Advantages}, {mask, p.Mask}} {
			for i := range m[0].Data {
				if m[0].Data[i] != m[1].Data[i] {
					t.Fatalf("%s: an input of the loss differs from the batch at %d: %v, batch %v", mb, i, m[1].Data[i], m[0].Data[i])
				}
			}
		}
		pl, err := rl.PPOClipLoss(p.LogProbs, old, adv, mask, clip, c.AggMode, p.Agg)
		if err != nil {
			t.Fatalf("%s: %v", mb, err)
		}
		grad := pl.GradLogProb
		if c.KLMode() == KLAsLoss {
			ref := p.OldLogProbs // the reference is the policy before the step, as old (recomputed)
			_, klGrad, err := rl.KLLoss(p.LogProbs, ref, mask, c.KLEstimator, c.AggMode, p.Agg)
			if err != nil {
				t.Fatalf("%s: %v", mb, err)
			}
			for i := range grad.Data {
				grad.Data[i] += c.KLCoef * klGrad.Data[i]
			}
		}
		for i, r := range p.Rows {
			toks := trace.Tokens(r)
			for j := 0; j < v.L && j < len(toks); j++ {
				if mask.At(i, j) == 0 {
					continue
				}
				newLogp, oldLogp, a := p.LogProbs.At(i, j), old.At(i, j), adv.At(i, j)
				ratio := math.Exp(math.Max(-20, math.Min(20, newLogp-oldLogp)))
				isClipped := -a*math.Max(1-clip.Low, math.Min(1+clip.High, ratio)) > -a*ratio
				if p.Loss.Ratio.At(i, j) != ratio || (p.Loss.Clipped.At(i, j) != 0) != isClipped {
					t.Fatalf("%s: row %d token %d: ratio %v clipped %v, e^(new − old) = %v, clipped %v",
						mb, r, j, p.Loss.Ratio.At(i, j), p.Loss.Clipped.At(i, j), ratio, isClipped)
				}
				if d := math.Abs(p.GradLogProb.At(i, j) - grad.At(i, j)); d > 1e-15 {
					t.Fatalf("%s: row %d token %d: dL/dlogp %v, rl gives %v", mb, r, j, p.GradLogProb.At(i, j), grad.At(i, j))
				}
				if isClipped {
					clipped++
				} else {
					unclipped++
				}
				if math.Abs(ratio-1) > 1e-3 {
					moved++
				}
				// The token view shows the last mini-batch that trained on the row.
				if tok := toks[j]; tok.Epoch == p.Epoch && tok.MiniBatch == p.MiniBatch &&
					(tok.NewLogProb != newLogp || tok.Ratio != ratio || tok.Clipped != isClipped || tok.GradLogProb != p.GradLogProb.At(i, j)) {
					t.Fatalf("%s: row %d token %d: Tokens shows %+v, the mini-batch has new %v ratio %v clipped %v grad %v",
						mb, r, j, tok, newLogp, ratio, isClipped, p.GradLogProb.At(i, j))
				}
			}
		}
		teaching += len(p.Rows)
		left += len(p.MiniBatchRows) - len(p.Rows)
	}
	if len(trace.Policy) != c.Epochs*c.MiniBatches || unclipped == 0 || moved == 0 {
		t.Fatalf("%s: %d policy mini-batches (want %d), %d clipped and %d unclipped tokens, %d ratios off 1: the test cannot tell",
			name, len(trace.Policy), c.Epochs*c.MiniBatches, clipped, unclipped, moved)
	}
	t.Logf("%s: %d rows trained, %d left out, %d tokens clipped, %d not, %d ratios off 1", name, teaching, left, clipped, unclipped, moved)
}

// TestTraceStepChangesNothing checks TraceStep's promise: the traced step is Step, number for
// number (the trace's clone of dL/dlogp must not change the KL term's arithmetic).
func TestTraceStepChangesNothing(t *testing.T) {
	for _, algo := range []Algorithm{GRPO, PPO} {
		var params [2][][]float32
		for k := range 2 {
			tr, err := New(tinyRLConfig(algo), 9, tinyModel(t, 5), fakeEncoder{}, fakeSpecials, fakeProblems(6))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if k == 0 {
					_, err = tr.Step(context.Background())
				} else {
					_, err = tr.TraceStep(context.Background())
				}
				if err != nil {
					t.Fatalf("%s: %v", algo, err)
				}
			}
			params[k] = tr.Policy.WritableParams()
		}
		for i := range params[0] {
			for j := range params[0][i] {
				if math.Float32bits(params[0][i][j]) != math.Float32bits(params[1][i][j]) {
					t.Fatalf("%s: parameter %d[%d] is %v after Step, %v after TraceStep", algo, i, j, params[0][i][j], params[1][i][j])
				}
			}
		}
	}
}
