package trainer

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl"
)

// TestVerlObjectivesWired runs a traced step of each algorithm verl adds to the paper's table
// (and of GRPO with process supervision),
// with no entropy bonus and no KL, and checks that the step computed the advantages with the
// algorithm's rl function and every mini-batch's loss with its policy loss (GSPO's sequence
// ratio, GPG's ratio-free gradient, PPO's clip for the others) on the mini-batch's own
// denominators, and that this gradient alone moved the policy.
func TestVerlObjectivesWired(t *testing.T) {
	for _, algo := range []Algorithm{GSPO, OPO, GPG, GRPOPassK, GRPOProcess} {
		t.Run(string(algo), func(t *testing.T) {
			cfg := tinyRLConfig(algo)
			cfg.EntropyCoef, cfg.KLCoef = 0, 0
			cfg.Epochs = 2 // the second pass sees a moved policy: ratios off 1
			tr, err := New(cfg, 9, tinyModel(t, 5), fakeEncoder{}, fakeSpecials, fakeProblems(6))
			if err != nil {
				t.Fatal(err)
			}
			before := paramsSnapshot(tr.Policy)
			trace, err := tr.TraceStep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sb := trace.Batch
			b := sb.Collated.Batch
			rewards := rl.MatrixOf(b.B, b.L, sb.Rewards)
			advMask := rl.MatrixOf(b.B, b.L, sb.AdvantageMask)
			groups := sb.Collated.Groups
			var want rl.Matrix
			switch algo {
			case GSPO:
				want = rl.GRPOAdvantage(rewards, advMask, groups, cfg.AdvantageEps, cfg.NormByStd)
			case OPO:
				want = rl.OPOAdvantage(rewards, advMask, groups)
			case GPG:
				want = rl.GPGAdvantage(rewards, advMask, groups, 1)
			case GRPOPassK:
				if want, err = rl.GRPOPassKAdvantage(rewards, advMask, groups, cfg.AdvantageEps, cfg.NormByStd); err != nil {
					t.Fatal(err)
				}
			case GRPOProcess:
				want = rl.GRPOProcessAdvantage(rewards, advMask, groups, cfg.AdvantageEps)
			}
			if !slices.Equal(sb.Advantages, want.Data) {
				t.Fatalf("advantages %v, rl gives %v", sb.Advantages, want.Data)
			}
			if len(trace.Policy) == 0 {
				t.Fatal("no policy mini-batch")
			}
			seqRatioOff := false
			for _, p := range trace.Policy {
				var pl rl.PolicyLoss
				switch algo {
				case GSPO:
					pl = rl.GSPOLoss(p.LogProbs, p.OldLogProbs, p.Advantages, p.Mask, cfg.ClipLow, cfg.ClipHigh, p.Agg)
				case GPG:
					if pl, err = rl.GPGLoss(p.LogProbs, p.Advantages, p.Mask, cfg.AggMode, p.Agg); err != nil {
						t.Fatal(err)
					}
				default:
					clip := rl.PPOClip{Low: cfg.ClipLow, High: cfg.ClipHigh, C: cfg.ClipC}
					if pl, err = rl.PPOClipLoss(p.LogProbs, p.OldLogProbs, p.Advantages, p.Mask, clip, cfg.AggMode, p.Agg); err != nil {
						t.Fatal(err)
					}
				}
				if pl.Loss != p.Loss.Loss || !slices.Equal(pl.GradLogProb.Data, p.GradLogProb.Data) {
					t.Fatalf("epoch %d mini-batch %d: loss %v, %s's loss gives %v (or dL/dlogp differs)", p.Epoch, p.MiniBatch, p.Loss.Loss, algo.PolicyLoss(), pl.Loss)
				}
				if algo == GSPO { // one ratio per response: e^{mean log-ratio} on every token
					for i := 0; i < p.Mask.B; i++ {
						for j := 1; j < p.Mask.L; j++ {
							if p.Loss.Ratio.At(i, j) != p.Loss.Ratio.At(i, 0) {
								t.Fatalf("row %d: GSPO ratio %v at token %d, %v at token 0", p.Rows[i], p.Loss.Ratio.At(i, j), j, p.Loss.Ratio.At(i, 0))
							}
						}
						seqRatioOff = seqRatioOff || p.Loss.Ratio.At(i, 0) != 1
					}
				}
				if algo == GPG && p.Loss.Ratio.Data != nil {
					t.Fatal("GPG's loss has a ratio")
				}
			}
			if algo == GSPO && !seqRatioOff {
				t.Error("every GSPO sequence ratio is 1: the test cannot tell the sequence ratio apart")
			}
			for r := range b.B {
				_ = trace.Tokens(r) // the token view (agentr1 explain) reads every loss's figures: GPG has no ratio
			}
			if !paramsChanged(tr.Policy, before) {
				t.Error("the policy loss alone did not move the policy")
			}
		})
	}
}

// perturbRef moves the reference model's weights off the policy's so that the KL between
// them is not zero from the first step.
func perturbRef(tr *Trainer, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, p := range tr.Ref.Params {
		for j := range p.Data {
			p.Data[j] += float32(0.05 * rng.NormFloat64())
		}
	}
	tr.Ref.MarkWeightsChanged()
}

// refLogProbs returns the reference model's log-probs of the batch's responses, (B, L), one row
// at a time.
func refLogProbs(tr *Trainer, b *mdp.Batch) rl.Matrix {
	out := rl.NewMatrix(b.B, b.L)
	ws := &model.Workspace{Temperature: float32(tr.Config.Temperature)}
	for r := 0; r < b.B; r++ {
		v := NewView(b, []int{r})
		logpT, _ := tr.Ref.Forward(ws, v.Tokens, v.Attn, 1, v.T)
		v.Scatter(out.Data, v.ResponseColumns(logpT))
	}
	return out
}

// TestKLInRewardHonoursEstimator checks that the KL folded into the token reward is β times
// the chosen estimator of the old and reference log-probs, on the loss mask (verl
// apply_kl_penalty), for each of k1, abs, k2 and k3, and that the estimators give different
// rewards (so a step that ignored the choice would fail).
func TestKLInRewardHonoursEstimator(t *testing.T) {
	var first []float64
	differs := false
	for _, est := range []rl.KLEstimator{rl.KLK1, rl.KLAbs, rl.KLK2, rl.KLK3} {
		cfg := tinyRLConfig(GRPO)
		cfg.KLPlacement, cfg.KLRewardEstimator, cfg.KLCoef = KLInReward, est, 0.5
		tr, err := New(cfg, 4, tinyModel(t, 6), fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatal(err)
		}
		perturbRef(tr, 3)
		var sb *StepBatch
		tr.OnBatch = func(b *StepBatch) { sb = b }
		m, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := sb.Collated.Batch
		old := rl.MatrixOf(b.B, b.L, sb.OldLogProbs)
		kl, _ := rl.KLPenalty(old, refLogProbs(tr, b), est)
		penalised := 0
		for k, r := range sb.Rewards {
			want := b.Rewards[k]
			if sb.LossMask[k] != 0 {
				want -= cfg.KLCoef * kl.Data[k]
				penalised++
			}
			if math.Abs(r-want) > 1e-4 { // the reference ran row by row here, batched in the step: float32 rounding
				t.Fatalf("%v: reward at %d is %v, want %v (score %v, kl %v)", est, k, r, want, b.Rewards[k], kl.Data[k])
			}
		}
		if penalised == 0 || float64(m.KLCoef) != cfg.KLCoef {
			t.Fatalf("%v: %d penalised tokens, kl_coef metric %v", est, penalised, m.KLCoef)
		}
		if first == nil {
			first = sb.Rewards
		} else if !slices.Equal(first, sb.Rewards) {
			differs = true
		}
	}
	if !differs {
		t.Error("every estimator gave the same rewards: the test cannot tell them apart")
	}
}

// TestAdaptiveKLUpdate checks verl's AdaptiveKLController.update on hand-computed steps.
func TestAdaptiveKLUpdate(t *testing.T) {
	for _, tc := range []struct {
		beta, kl, target float64
		n, horizon       int
		want             float64
	}{
		{0.1, 0.11, 0.1, 100, 1000, 0.1 * 1.01},  // e = 0.1: 1 + 0.1·100/1000
		{0.1, 0.3, 0.1, 80, 10000, 0.1 * 1.0016}, // e = 2 clipped to 0.2: 1 + 0.2·80/10000
		{0.1, 0.0, 0.1, 80, 10000, 0.1 * 0.9984}, // e = −1 clipped to −0.2
		{0.2, 0.09, 0.1, 10, 10, 0.2 * 0.9},      // e = −0.1: 1 − 0.1·10/10
		{0.05, 0.1, 0.1, 500, 10, 0.05},          // on target: unchanged
	} {
		got := AdaptiveKLUpdate(tc.beta, tc.kl, tc.target, tc.n, tc.horizon)
		if math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("AdaptiveKLUpdate(%v, kl %v, target %v, n %d, horizon %d) = %v, want %v", tc.beta, tc.kl, tc.target, tc.n, tc.horizon, got, tc.want)
		}
	}
}

// TestStepKL checks the KL the adaptive controller reads on a hand-computed batch: the mean
// over rows of each row's masked mean, an empty row counting 0 (verl's current_kl), not the
// mean over tokens.
func TestStepKL(t *testing.T) {
	kl := rl.MatrixOf(3, 3, []float64{1, 2, 9, 4, 9, 9, 9, 9, 9})
	mask := rl.MatrixOf(3, 3, []float64{1, 1, 0, 1, 0, 0, 0, 0, 0})
	if got, want := stepKL(kl, mask), (1.5+4+0)/3; math.Abs(got-want) > 1e-7 {
		t.Errorf("stepKL = %v, want %v", got, want)
	}
}

// TestAdaptiveKLController runs the adaptive controller in the trainer, the KL in the reward and
// then as a loss term: each step uses the β the previous one left, and after each step β is
// AdaptiveKLUpdate of that β with the step's KL (the per-row means of the estimator over the
// loss mask, averaged over rows) and the batch's rows.
func TestAdaptiveKLController(t *testing.T) {
	for _, place := range []KLPlacement{KLInReward, KLAsLoss} {
		cfg := tinyRLConfig(GRPO)
		cfg.KLPlacement, cfg.KLCtrl, cfg.KLTarget, cfg.KLHorizon = place, KLAdaptive, 0.05, 20
		tr, err := New(cfg, 4, tinyModel(t, 6), fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatal(err)
		}
		perturbRef(tr, 5)
		var sb *StepBatch
		tr.OnBatch = func(b *StepBatch) { sb = b }
		beta := cfg.KLCoef
		for s := 0; s < 3; s++ {
			m, err := tr.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if float64(m.KLCoef) != beta {
				t.Fatalf("%s step %d: used β %v, want the previous step's %v", place, s, m.KLCoef, beta)
			}
			b := sb.Collated.Batch
			est := cfg.KLEstimator
			if place == KLInReward {
				est = cfg.KLRewardEstimator
			}
			kl, _ := rl.KLPenalty(rl.MatrixOf(b.B, b.L, sb.OldLogProbs), refLogProbs(tr, b), est)
			rows := rl.MaskedRowMeans(kl, rl.MatrixOf(b.B, b.L, sb.LossMask))
			current := 0.0
			for _, r := range rows {
				current += r
			}
			current /= float64(len(rows))
			want := AdaptiveKLUpdate(beta, current, cfg.KLTarget, b.B, cfg.KLHorizon)
			if math.Abs(tr.KLBeta-want) > 1e-9*want || tr.KLBeta == beta {
				t.Fatalf("%s step %d: β %v after the step, want %v (from %v, KL %v)", place, s, tr.KLBeta, want, beta, current)
			}
			beta = tr.KLBeta
		}
	}
}

// TestResumeAdaptiveKL checks that a run with the adaptive KL controller resumed from a
// checkpoint continues exactly as the uninterrupted run: β is part of the saved state.
func TestResumeAdaptiveKL(t *testing.T) {
	cfg := tinyRLConfig(GRPO)
	cfg.KLPlacement, cfg.KLCtrl, cfg.KLTarget, cfg.KLHorizon, cfg.KLCoef = KLInReward, KLAdaptive, 1e-4, 10, 0.5
	newTrainer := func() *Trainer { return resumeTrainer(t, cfg) }
	steps := func(tr *Trainer, n int) { runSteps(t, tr, n) }
	full := newTrainer()
	steps(full, 3)
	first := newTrainer()
	steps(first, 2)
	if first.KLBeta == cfg.KLCoef {
		t.Fatal("β did not move in two steps: the test cannot tell")
	}
	path, err := first.SaveCheckpoint(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	resumed := newTrainer()
	if err := resumed.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	if resumed.KLBeta != first.KLBeta {
		t.Fatalf("resumed β %v, saved %v", resumed.KLBeta, first.KLBeta)
	}
	steps(resumed, 1)
	if resumed.KLBeta != full.KLBeta {
		t.Errorf("β %v after resume, %v uninterrupted", resumed.KLBeta, full.KLBeta)
	}
	for i, p := range full.Policy.Params {
		if !slices.Equal(p.Data, resumed.Policy.Params[i].Data) {
			t.Fatalf("policy parameter %s differs after resume", p.Name)
		}
	}
}
