package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"agentr1/tensor/ref"
)

// headCase is one configuration of the fused head to hold to its plain definition.
type headCase struct {
	name string
	tied bool
	lens []int   // each row's real tokens, left-padded to 7
	kept int     // Workspace.MaxKeptProbs
	temp float32 // Workspace.Temperature
}

// plainHead returns the plain definition's inputs for tokens (B, T): z = logits / τ (N, V),
// computed by ForwardLogits in ws, and each row's label, the token after it (0 for the last).
func plainHead(m *Model, ws *Workspace, tokens []int, mask []float32, B, T int, temp float32) (z []float32, labels []int) {
	z = append([]float32(nil), m.ForwardLogits(ws, tokens, mask, B, T)...)
	if temp != 0 {
		ref.Scal(1/temp, z) // the reference: softmax(logits / τ)
	}
	labels = make([]int, B*T)
	for i := range B*T - 1 {
		labels[i] = tokens[i+1]
	}
	return z, labels
}

// TestForwardMatchesLogits checks the fused head against its plain definition over full
// logits: Forward's logp and entropy equal ref.LogProbsForward and ref.EntropyForward of
// ForwardLogits at every computed position, and are 0 elsewhere.
func TestForwardMatchesLogits(t *testing.T) {
	for _, tc := range []headCase{
		{"tied/kept", true, []int{7, 4, 1}, 0, 0},
		{"untied/kept", false, []int{7, 7}, 0, 0},
		{"tied/recompute", true, []int{7, 5, 3}, 1, 0},
		{"tied/temperature0.5", true, []int{7, 4, 1}, 0, 0.5},
		{"untied/temperature1.7", false, []int{7, 6}, 0, 1.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(tc.tied)
			m := newTestModel(t, cfg, 1)
			rng := rand.New(rand.NewPCG(2, 2))
			B, T, V := len(tc.lens), 7, cfg.VocabSize
			tokens, mask := leftPadded(rng, V, T, tc.lens)
			ws := &Workspace{MaxKeptProbs: tc.kept, Temperature: tc.temp}
			logp, ent := m.Forward(ws, tokens, mask, B, T)
			logp = append([]float32(nil), logp...)
			ent = append([]float32(nil), ent...)
			logits, labels := plainHead(m, NewWorkspace(), tokens, mask, B, T, tc.temp)
			N := B * T
			wantLogp := make([]float32, N)
			wantEnt := make([]float32, N)
			all := make([]float32, N)
			ref.LogProbsForward(all, logits, labels, N, V)
			allEnt := make([]float32, N)
			ref.EntropyForward(allEnt, logits, N, V)
			for b := range B {
				for tt := 1; tt < T; tt++ {
					i := b*T + tt
					if mask[i] != 0 && mask[i-1] != 0 {
						wantLogp[i], wantEnt[i] = all[i-1], allEnt[i-1]
					}
				}
			}
			for i := range N {
				if d := math.Abs(float64(logp[i] - wantLogp[i])); d > 1e-5 {
					t.Errorf("%s: logp[%d] = %v, want %v", tc.name, i, logp[i], wantLogp[i])
				}
				if d := math.Abs(float64(ent[i] - wantEnt[i])); d > 1e-5 {
					t.Errorf("%s: entropy[%d] = %v, want %v", tc.name, i, ent[i], wantEnt[i])
				}
			}
		})
	}
}

// TestBackwardMatchesLogits checks the fused head's gradients against its plain definition:
// Backward given dL/dlogp and dL/dentropy accumulates the parameter gradients that
// BackwardLogits does for dL/dlogits from ref.LogProbsBackward and ref.EntropyBackward over
// the full logits, with probabilities kept or recomputed and with a temperature.
func TestBackwardMatchesLogits(t *testing.T) {
	for _, tc := range []headCase{
		{"tied/kept", true, []int{7, 4, 1}, 0, 0},
		{"untied/recompute", false, []int{7, 5, 3}, 1, 0},
		{"untied/temperature0.7", false, []int{7, 6}, 0, 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(tc.tied)
			m := newTestModel(t, cfg, 11)
			rng := rand.New(rand.NewPCG(12, 12))
			B, T, V := len(tc.lens), 7, cfg.VocabSize
			N := B * T
			tokens, mask := leftPadded(rng, V, T, tc.lens)
			dlogp, dent := lossWeights(rng, mask, B, T) // (B, T) at the predicted token's position

			ws := &Workspace{MaxKeptProbs: tc.kept, Temperature: tc.temp}
			m.Forward(ws, tokens, mask, B, T)
			m.ZeroGrad()
			m.Backward(ws, dlogp, dent)
			fused := make([][]float32, len(m.Params))
			for i, p := range m.Params {
				fused[i] = append([]float32(nil), p.Grad...)
			}

			// The plain definition: z = logits / τ (N, V); row i predicts tokens[i+1], so its
			// upstream gradients are those Forward stores at position i+1.
			wsLogits := NewWorkspace()
			z, labels := plainHead(m, wsLogits, tokens, mask, B, T, tc.temp)
			up, upEnt := make([]float32, N), make([]float32, N)
			for i := range N - 1 {
				up[i], upEnt[i] = dlogp[i+1], dent[i+1]
			}
			scale := float32(1)
			if tc.temp != 0 {
				scale = 1 / tc.temp
			}
			dz := make([]float32, N*V) // dL/dz (N, V)
			ref.LogProbsBackward(dz, up, z, labels, N, V)
			ref.EntropyBackward(dz, upEnt, z, N, V)
			ref.Scal(scale, dz) // dL/dlogits = dL/dz / τ
			m.ZeroGrad()
			m.BackwardLogits(wsLogits, dz)
			for i, p := range m.Params {
				if j := closeToSum(fused[i], p.Grad); j >= 0 {
					t.Errorf("%s[%d]: fused head %v, plain definition %v", p.Name, j, fused[i][j], p.Grad[j])
				}
			}
		})
	}
}

// lossWeights returns random upstream gradients for logp and entropy, zero where Forward
// computes nothing.
func lossWeights(rng *rand.Rand, mask []float32, B, T int) (a, c []float32) {
	a = make([]float32, B*T)
	c = make([]float32, B*T)
	for b := range B {
		for t := 1; t < T; t++ {
			i := b*T + t
			if mask[i] != 0 && mask[i-1] != 0 {
				a[i] = float32(rng.NormFloat64())
				c[i] = float32(rng.NormFloat64())
			}
		}
	}
	return a, c
}

// checkGrads compares every parameter's analytic gradient with central differences of loss at
// a few entries per tensor (random ones and the largest), in the float32 model. The tolerance
// is relative, with a floor set by the float32 rounding of the loss, which the central
// difference divides by 2h: about 1e-3 of the model's largest gradient entry.
func checkGrads(t *testing.T, name string, params []*Param, loss func() float64, rng *rand.Rand) {
	t.Helper()
	const h = 1e-2
	var scale float64 // the largest gradient entry of the model
	for _, p := range params {
		for _, g := range p.Grad {
			scale = max(scale, math.Abs(float64(g)))
		}
	}
	if scale == 0 {
		t.Fatalf("%s: every gradient is zero", name)
	}
	for _, p := range params {
		idx := []int{rng.IntN(len(p.Data)), rng.IntN(len(p.Data)), rng.IntN(len(p.Data))}
		big := 0
		for i, g := range p.Grad {
			if math.Abs(float64(g)) > math.Abs(float64(p.Grad[big])) {
				big = i
			}
		}
		idx = append(idx, big)
		for _, i := range idx {
			old := p.Data[i]
			p.Data[i] = old + h
			up := loss()
			p.Data[i] = old - h
			down := loss()
			p.Data[i] = old
			fd := (up - down) / (2 * h)
			an := float64(p.Grad[i])
			if math.Abs(fd-an) > 2e-2*math.Abs(an)+1e-3*scale+1e-4 {
				t.Errorf("%s: %s[%d]: analytic %.6g, finite difference %.6g", name, p.Name, i, an, fd)
			}
		}
	}
}

// TestGradientsFiniteDifference checks Backward's gradients for every parameter tensor of the
// whole model, for a loss mixing log-probabilities and entropies over a left-padded batch.
func TestGradientsFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tied  bool
		kept  int
		temp  float32
		qwen3 bool
	}{{"tied", true, 0, 0, false}, {"untied", false, 0, 0, false}, {"tied/recompute", true, 1, 0, false},
		{"tied/temperature0.6", true, 0, 0.6, false}, {"untied/recompute/temperature1.5", false, 1, 1.5, false},
		{"qwen3/tied", true, 0, 0, true}, {"qwen3/untied/recompute/temperature1.5", false, 1, 1.5, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(tc.tied)
			if tc.qwen3 {
				cfg = tinyQwen3Config(tc.tied)
			}
			m := newTestModel(t, cfg, 3)
			rng := rand.New(rand.NewPCG(4, 4))
			B, T := 3, 6
			tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{6, 4, 2})
			a, c := lossWeights(rng, mask, B, T)
			ws := &Workspace{MaxKeptProbs: tc.kept, Temperature: tc.temp}
			loss := func() float64 {
				logp, ent := m.Forward(ws, tokens, mask, B, T)
				var s float64
				for i := range logp {
					s += float64(a[i])*float64(logp[i]) + float64(c[i])*float64(ent[i])
				}
				return s
			}
			loss()
			m.ZeroGrad()
			m.Backward(ws, a, c)
			checkGrads(t, tc.name, m.Params, loss, rng)
		})
	}
}

// TestBackwardLogitsFiniteDifference checks BackwardLogits for L = sum(logits * R).
func TestBackwardLogitsFiniteDifference(t *testing.T) {
	cfg := tinyConfig(false)
	m := newTestModel(t, cfg, 5)
	rng := rand.New(rand.NewPCG(6, 6))
	B, T, V := 2, 5, cfg.VocabSize
	tokens, mask := leftPadded(rng, V, T, []int{5, 3})
	R := make([]float32, B*T*V)
	for b := range B {
		for tt := range T {
			if mask[b*T+tt] == 0 {
				continue // padded rows' logits are not meaningful
			}
			for j := range V {
				R[(b*T+tt)*V+j] = float32(rng.NormFloat64())
			}
		}
	}
	ws := NewWorkspace()
	loss := func() float64 {
		logits := m.ForwardLogits(ws, tokens, mask, B, T)
		var s float64
		for i, z := range logits {
			s += float64(z) * float64(R[i])
		}
		return s
	}
	loss()
	m.ZeroGrad()
	m.BackwardLogits(ws, R)
	checkGrads(t, "logits", m.Params, loss, rng)
}

// TestBackwardRepeatable checks that two Backward calls on one Forward add up to twice the
// gradient, and that a workspace reused for a larger and then a smaller batch gives the same
// results as a fresh one.
func TestBackwardRepeatable(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 8)
	rng := rand.New(rand.NewPCG(9, 9))
	B, T := 2, 6
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{6, 3})
	a, c := lossWeights(rng, mask, B, T)

	fresh := NewWorkspace()
	m.Forward(fresh, tokens, mask, B, T)
	m.ZeroGrad()
	m.Backward(fresh, a, c)
	once := append([]float32(nil), m.Params[0].Grad...)
	m.Backward(fresh, a, c)
	for i, g := range m.Params[0].Grad {
		if math.Abs(float64(g-2*once[i])) > 1e-5*(1+math.Abs(float64(g))) {
			t.Fatalf("second Backward: grad[%d] = %v, want %v", i, g, 2*once[i])
		}
	}

	reused := NewWorkspace()
	bigTokens, bigMask := leftPadded(rng, cfg.VocabSize, 9, []int{9, 9, 9})
	m.Forward(reused, bigTokens, bigMask, 3, 9)
	logp, _ := m.Forward(reused, tokens, mask, B, T)
	m.ZeroGrad()
	m.Backward(reused, a, c)
	want, _ := m.Forward(fresh, tokens, mask, B, T)
	for i := range want {
		if logp[i] != want[i] {
			t.Fatalf("reused workspace: logp[%d] = %v, fresh %v", i, logp[i], want[i])
		}
	}
	for i, g := range m.Params[0].Grad {
		if math.Abs(float64(g-once[i])) > 1e-6*(1+math.Abs(float64(g))) {
			t.Fatalf("reused workspace: grad[%d] = %v, want %v", i, g, once[i])
		}
	}
}

// TestTrainingStepAllocations checks that a forward+backward step on a warmed-up workspace
// allocates nothing of the size of its activations: what remains are the kernels' small
// per-call buffers.
func TestTrainingStepAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	cfg := tinyConfig(true)
	cfg.HiddenSize, cfg.IntermediateSize = 64, 128
	m := newTestModel(t, cfg, 10)
	rng := rand.New(rand.NewPCG(11, 11))
	B, T := 4, 64
	tokens, mask := leftPadded(rng, cfg.VocabSize, T, []int{64, 40, 64, 5})
	a, c := lossWeights(rng, mask, B, T)
	ws := NewWorkspace()
	step := func() {
		m.Forward(ws, tokens, mask, B, T)
		m.Backward(ws, a, c)
	}
	step()
	footprint := ws.footprint()
	const steps = 5
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range steps {
		step()
	}
	runtime.ReadMemStats(&after)
	bytes := int64(after.TotalAlloc-before.TotalAlloc) / steps
	t.Logf("%d bytes allocated per step, workspace %d bytes", bytes, footprint)
	if bytes > int64(footprint)/8 {
		t.Errorf("a warmed-up step allocates %d bytes; the workspace holds %d", bytes, footprint)
	}
}
