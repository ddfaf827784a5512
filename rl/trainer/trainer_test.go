package trainer

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"agentr1/model"
)

func paramsSnapshot(m *model.Model) [][]float32 {
	var out [][]float32
	for _, p := range m.Params {
		out = append(out, slices.Clone(p.Data))
	}
	return out
}

func paramsChanged(m *model.Model, before [][]float32) bool {
	for i, p := range m.Params {
		if !slices.Equal(p.Data, before[i]) {
			return true
		}
	}
	return false
}

func finite(xs ...Num) bool {
	for _, x := range xs {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// maskCheck records, over every mini-batch, whether dL/dlogp was non-zero anywhere outside
// the agent tokens (prompt, observation or padding columns) and on observation tokens.
type maskCheck struct {
	outsideAgent   int // non-zero gradients on prompt, padding or observation columns
	onObservation  int // ... of which on observation tokens
	onAgent        int // non-zero gradients on agent tokens
	observationPos int // observation positions seen
}

func (mc *maskCheck) hook(v *View, dlogp []float32) {
	b := v.full
	for i, r := range v.rows {
		for col := 0; col < v.T; col++ {
			g := dlogp[i*v.T+col]
			j := col - v.P // response index
			agent, obs := false, false
			if j >= 0 && j < b.L && j < b.ResponseLens[r] {
				agent = b.ActionMask[r*b.L+j] == 1
				obs = !agent
			}
			if obs {
				mc.observationPos++
			}
			switch {
			case g != 0 && agent:
				mc.onAgent++
			case g != 0:
				mc.outsideAgent++
				if obs {
					mc.onObservation++
				}
			}
		}
	}
}

// TestSmokeEveryAlgorithm runs a few RL steps of every algorithm on the tiny model and checks
// that losses are finite, that no gradient reaches a non-agent token, and that the policy
// changed (and, during PPO's critic warm-up, did not).
func TestSmokeEveryAlgorithm(t *testing.T) {
	for _, algo := range Algorithms {
		t.Run(string(algo), func(t *testing.T) {
			cfg := tinyRLConfig(algo)
			policy := tinyModel(t, 1)
			tr, err := New(cfg, 7, policy, fakeEncoder{}, fakeSpecials, fakeProblems(6))
			if err != nil {
				t.Fatalf("%s: %v", algo, err)
			}
			mc := &maskCheck{}
			tr.onBackward = mc.hook
			before := paramsSnapshot(policy)
			for s := 0; s < cfg.Steps; s++ {
				m, err := tr.Step(context.Background())
				if err != nil {
					t.Fatalf("%s step %d: %v", algo, s, err)
				}
				if !finite(m.Loss, m.PGLoss, m.Entropy, m.GradNorm, m.RewardMean, m.LR, m.ValueLoss, m.LogpDiffMax) {
					t.Errorf("%s step %d: non-finite metric in %+v", algo, s, m)
				}
				if float64(m.LogpDiffMax) > 1e-3 {
					t.Errorf("%s step %d: recomputed log-probs differ from the sampled ones by %g", algo, s, m.LogpDiffMax)
				}
				if algo == PPO && s == 0 {
					if m.Phase != "critic-warmup" || paramsChanged(policy, before) {
						t.Errorf("%s: critic warm-up step changed the policy (phase %q)", algo, m.Phase)
					}
				}
			}
			if !paramsChanged(policy, before) {
				t.Errorf("%s: policy parameters did not change", algo)
			}
			if mc.outsideAgent != 0 {
				t.Errorf("%s: %d non-zero gradients outside agent tokens (%d on observations)", algo, mc.outsideAgent, mc.onObservation)
			}
			if mc.onAgent == 0 {
				t.Errorf("%s: no gradient on any agent token", algo)
			}
			if tr.StepsDone != cfg.Steps {
				t.Errorf("%s: StepsDone = %d, want %d", algo, tr.StepsDone, cfg.Steps)
			}
		})
	}
}

// TestNoLossMaskAblation checks that the "no loss mask" ablation does train on observation
// tokens, and that the default run with the same seed does not.
func TestNoLossMaskAblation(t *testing.T) {
	for _, noMask := range []bool{false, true} {
		cfg := tinyRLConfig(GRPO)
		cfg.NoLossMask = noMask
		cfg.NoAdvantageMask = noMask
		tr, err := New(cfg, 3, tinyModel(t, 2), fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatal(err)
		}
		mc := &maskCheck{}
		tr.onBackward = mc.hook
		for s := 0; s < cfg.Steps; s++ {
			if _, err := tr.Step(context.Background()); err != nil {
				t.Fatalf("noMask=%v step %d: %v", noMask, s, err)
			}
		}
		if mc.observationPos == 0 {
			t.Fatalf("noMask=%v: no observation tokens in the rollouts; the test cannot tell", noMask)
		}
		if noMask && mc.onObservation == 0 {
			t.Errorf("no loss mask: no gradient reached the %d observation positions", mc.observationPos)
		}
		if !noMask && mc.onObservation != 0 {
			t.Errorf("with the loss mask: %d gradients on observation tokens", mc.onObservation)
		}
	}
}

// TestSameSeedSameRun checks determinism: two trainers with the same seed produce the same
// parameters; a different seed does not.
func TestSameSeedSameRun(t *testing.T) {
	run := func(seed uint64) [][]float32 {
		cfg := tinyRLConfig(GRPO)
		cfg.Steps = 2
		policy := tinyModel(t, 1)
		tr, err := New(cfg, seed, policy, fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < cfg.Steps; s++ {
			if _, err := tr.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return paramsSnapshot(policy)
	}
	a, b, c := run(5), run(5), run(6)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("same seed: parameter %d differs", i)
		}
	}
	same := true
	for i := range a {
		same = same && slices.Equal(a[i], c[i])
	}
	if same {
		t.Errorf("seeds 5 and 6 gave identical parameters")
	}
}

// TestSampledOldLogProbs checks that taking the old log-probs from the rollout (no recompute
// pass) trains as the recomputed ones do: the same updates up to float32 rounding, at
// temperature 1 and below it (the update scores tokens by softmax(logits/τ), the distribution
// the rollout sampled from, so the sampled log-probs are the old ones at any temperature).
func TestSampledOldLogProbs(t *testing.T) {
	for _, temp := range []float64{1, 0.6} {
		run := func(check int) [][]float32 {
			cfg := tinyRLConfig(GRPO)
			cfg.CheckOldEvery = check
			cfg.Temperature = temp
			policy := tinyModel(t, 1)
			tr, err := New(cfg, 5, policy, fakeEncoder{}, fakeSpecials, fakeProblems(6))
			if err != nil {
				t.Fatal(err)
			}
			m, err := tr.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if recomputed := !math.IsNaN(float64(m.LogpDiffMax)); recomputed != (check == 1) {
				t.Errorf("temperature %g, CheckOldEvery %d: recomputed = %v", temp, check, recomputed)
			}
			if check == 1 && float64(m.LogpDiffMax) > 1e-3 {
				t.Errorf("temperature %g: recomputed log-probs differ from the sampled ones by %g", temp, m.LogpDiffMax)
			}
			return paramsSnapshot(policy)
		}
		a, b := run(1), run(0)
		worst := 0.0
		for i := range a {
			for j := range a[i] {
				worst = math.Max(worst, math.Abs(float64(a[i][j]-b[i][j])))
			}
		}
		if worst > 1e-4 {
			t.Errorf("temperature %g: sampled vs recomputed old log-probs: parameters differ by %g", temp, worst)
		}
	}
}

// TestResume checks that a run checkpointed after step 2 and resumed into a fresh trainer
// reaches exactly the parameters of the uninterrupted run after step 3.
func TestResume(t *testing.T) {
	cfg := tinyRLConfig(PPO)
	cfg.CriticWarmup = 1
	newTrainer := func() *Trainer { return resumeTrainer(t, cfg) }
	steps := func(tr *Trainer, n int) { runSteps(t, tr, n) }
	full := newTrainer()
	steps(full, 3)

	dir := t.TempDir()
	first := newTrainer()
	steps(first, 2)
	path, err := first.SaveCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := LatestCheckpoint(dir)
	if err != nil || latest != path {
		t.Fatalf("LatestCheckpoint = %q, %v; want %q", latest, err, path)
	}
	resumed := newTrainer()
	if err := resumed.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	if resumed.StepsDone != 2 {
		t.Fatalf("resumed at step %d, want 2", resumed.StepsDone)
	}
	steps(resumed, 1)
	for i, p := range full.Policy.Params {
		if !slices.Equal(p.Data, resumed.Policy.Params[i].Data) {
			t.Fatalf("policy parameter %s differs after resume", p.Name)
		}
	}
	for i, p := range full.Critic.Params {
		if !slices.Equal(p.Data, resumed.Critic.Params[i].Data) {
			t.Fatalf("critic parameter %s differs after resume", p.Name)
		}
	}
}

// TestLearnsToyTask checks the direction of learning end to end: on the toy task (answer
// with a turn containing id 3, ended by <|im_end|>) the mean reward of GRPO, PPO and RLOO must
// climb from its initial level to near 1 in 40 steps.
func TestLearnsToyTask(t *testing.T) {
	for _, algo := range []Algorithm{GRPO, PPO, RLOO} {
		cfg := tinyRLConfig(algo)
		cfg.Steps, cfg.LR, cfg.KLCoef, cfg.EntropyCoef, cfg.CheckOldEvery = 40, 3e-3, 0, 0, 0
		tr, err := New(cfg, 7, tinyModel(t, 1), fakeEncoder{}, fakeSpecials, fakeProblems(6))
		if err != nil {
			t.Fatal(err)
		}
		var first, last float64
		for s := 0; s < cfg.Steps; s++ {
			m, err := tr.Step(context.Background())
			if err != nil {
				t.Fatalf("%s step %d: %v", algo, s, err)
			}
			if s < 5 {
				first += float64(m.RewardMean) / 5
			}
			if s >= cfg.Steps-5 {
				last += float64(m.RewardMean) / 5
			}
		}
		if last < 0.8 || last < first+0.4 {
			t.Errorf("%s: mean reward %.3f over the first 5 steps, %.3f over the last 5; want >= 0.8 and a rise of 0.4", algo, first, last)
		}
	}
}

// TestNumericGuardSkipsNonFiniteUpdates poisons the gradient with a NaN: the optimiser step must
// be skipped (parameters and AdamW state untouched), reported with the parameter's name, and
// counted toward MaxNonFiniteSteps; a clean step resets the count.
func TestNumericGuardSkipsNonFiniteUpdates(t *testing.T) {
	cfg := tinyRLConfig(GRPO)
	policy := tinyModel(t, 4)
	tr, err := New(cfg, 11, policy, fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	poison := true
	tr.onBackward = func(_ *View, dlogp []float32) {
		if poison {
			// Every position, not only those with a non-zero gradient: a mini-batch whose
			// groups all tied has none, and its entropy and KL terms would still update.
			for k := range dlogp {
				dlogp[k] = float32(math.NaN())
			}
		}
	}
	before := paramsSnapshot(policy)
	for s := 0; s < 2; s++ {
		m, err := tr.Step(context.Background())
		if err != nil {
			t.Fatalf("poisoned step %d returned an error instead of skipping: %v", s, err)
		}
		if m.SkippedUpdates == 0 || !strings.Contains(m.SkipReason, "gradient of model.") {
			t.Errorf("step %d: skipped %d, reason %q; want the skip reported with the tensor's name", s, m.SkippedUpdates, m.SkipReason)
		}
	}
	if paramsChanged(policy, before) {
		t.Error("a non-finite gradient changed the parameters")
	}
	if tr.NonFiniteRun != 2 {
		t.Errorf("NonFiniteRun = %d after two poisoned steps, want 2", tr.NonFiniteRun)
	}
	poison = false
	m, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.SkippedUpdates != 0 || tr.NonFiniteRun != 0 || !paramsChanged(policy, before) {
		t.Errorf("clean step: skipped %d, run %d, changed %v", m.SkippedUpdates, tr.NonFiniteRun, paramsChanged(policy, before))
	}
}

// TestIdleRowsLeftOutExactly runs GRPO and RLOO twice from the same seed, once leaving the
// rows with a zero advantage out of the update (the default) and once keeping them: the
// parameters must agree to float32 rounding after every step, while the first run's backward
// passes see fewer rows. With an entropy bonus every row is kept.
func TestIdleRowsLeftOutExactly(t *testing.T) {
	for _, algo := range []Algorithm{GRPO, RLOO} {
		t.Run(string(algo), func(t *testing.T) {
			cfg := tinyRLConfig(algo)
			cfg.EntropyCoef, cfg.KLCoef = 0, 0
			cfg.Steps = 6
			var rows [2]int
			var trs [2]*Trainer
			for i := range trs {
				tr, err := New(cfg, 5, tinyModel(t, 3), fakeEncoder{}, fakeSpecials, fakeProblems(6))
				if err != nil {
					t.Fatal(err)
				}
				tr.keepIdleRows = i == 1
				tr.onBackward = func(v *View, _ []float32) { rows[i] += v.B }
				trs[i] = tr
			}
			idle := 0.0
			for s := 0; s < cfg.Steps; s++ {
				var ms [2]StepMetrics
				for i, tr := range trs {
					m, err := tr.Step(context.Background())
					if err != nil {
						t.Fatalf("step %d: %v", s, err)
					}
					ms[i] = m
				}
				idle += float64(ms[0].ZeroAdvRate)
				if d := math.Abs(float64(ms[0].PGLoss - ms[1].PGLoss)); d > 1e-6 {
					t.Errorf("step %d: pg_loss %v left out, %v kept", s, ms[0].PGLoss, ms[1].PGLoss)
				}
				if d := math.Abs(float64(ms[0].ClipFrac - ms[1].ClipFrac)); d > 1e-9 {
					t.Errorf("step %d: clipfrac %v left out, %v kept", s, ms[0].ClipFrac, ms[1].ClipFrac)
				}
				for k, p := range trs[0].Policy.Params {
					q := trs[1].Policy.Params[k]
					for j := range p.Data {
						if d := math.Abs(float64(p.Data[j] - q.Data[j])); d > 1e-5 {
							t.Fatalf("step %d: %s[%d] = %v left out, %v kept", s, p.Name, j, p.Data[j], q.Data[j])
						}
					}
				}
			}
			if idle == 0 {
				t.Fatal("no step had a row with a zero advantage; the test cannot tell")
			}
			if rows[0] >= rows[1] {
				t.Errorf("backward passes saw %d rows leaving idle rows out, %d keeping them; want fewer", rows[0], rows[1])
			}
		})
	}
	cfg := tinyRLConfig(GRPO) // entropy bonus and KL loss on: every row is kept
	tr, err := New(cfg, 5, tinyModel(t, 3), fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	seen, idle := 0, 0.0
	tr.onBackward = func(v *View, _ []float32) { seen += v.B }
	for s := 0; s < cfg.Steps; s++ {
		m, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		idle += float64(m.ZeroAdvRate)
	}
	if idle == 0 {
		t.Fatal("entropy bonus on: no step had a row with a zero advantage; the test cannot tell")
	}
	if want := cfg.Steps * cfg.Prompts * cfg.N; seen != want {
		t.Errorf("with an entropy bonus the backward passes saw %d rows, want all %d", seen, want)
	}
}

// TestDrGRPONormaliserIsConstant checks Dr.GRPO's loss scale: on the step's first mini-batch
// (ratio exactly 1, nothing clipped) dL/dlogp of every trained token is −A/MaxLen, the same
// constant whatever the mini-batch's longest response (verl divides by the padded response
// length, constant across steps).
func TestDrGRPONormaliserIsConstant(t *testing.T) {
	cfg := tinyRLConfig(DrGRPO)
	cfg.EntropyCoef, cfg.KLCoef = 0, 0
	tr, err := New(cfg, 5, tinyModel(t, 3), fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	var batch *StepBatch
	tr.OnBatch = func(b *StepBatch) { batch = b }
	first, checked := true, 0
	tr.onBackward = func(v *View, dlogp []float32) {
		if !first {
			return
		}
		first = false
		L := batch.Collated.Batch.L
		for i, r := range v.rows {
			for j := 0; j < v.L && j < L; j++ {
				a, m := batch.Advantages[r*L+j], batch.LossMask[r*L+j]
				got := float64(dlogp[i*v.T+v.P+j])
				want := -a * m / float64(cfg.MaxLen)
				if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Fatalf("row %d token %d: dL/dlogp = %g, want -A/MaxLen = %g (A = %g)", r, j, got, want, a)
				}
				if want != 0 {
					checked++
				}
			}
		}
	}
	if _, err := tr.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no token with a non-zero advantage in the first mini-batch; the test cannot tell")
	}
}
