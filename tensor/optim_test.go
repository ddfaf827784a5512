package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAdamWMatchesTorchSteps follows torch.optim.AdamW's single-tensor loop step by step in
// float64 (exp_avg.lerp_, exp_avg_sq.mul_().addcmul_(), denom = sqrt(v)/sqrt(bc2) + eps,
// param.addcdiv_(exp_avg, denom, -lr/bc1)) and compares five updates.
func TestAdamWMatchesTorchSteps(t *testing.T) {
	cases := []struct {
		name                string
		lr, b1, b2, eps, wd float64
	}{
		{"defaults", 1e-3, 0.9, 0.999, 1e-8, 0.01},
		{"no-decay", 3e-3, 0.8, 0.95, 1e-6, 0},
		{"strong-decay", 1e-2, 0.9, 0.99, 1e-8, 0.5},
	}
	for _, c := range cases {
		rng := rand.New(rand.NewPCG(1, 2))
		p := randSlice(rng, 7)
		ref := make([]float64, len(p))
		for i, x := range p {
			ref[i] = float64(x)
		}
		m, v := make([]float64, len(p)), make([]float64, len(p))
		o := &AdamW{LR: c.lr, Beta1: c.b1, Beta2: c.b2, Eps: c.eps, WeightDecay: c.wd}
		for step := 1; step <= 5; step++ {
			g := randSlice(rng, len(p))
			o.Update([][]float32{p}, [][]float32{g})
			bc1, bc2 := 1-math.Pow(c.b1, float64(step)), 1-math.Pow(c.b2, float64(step))
			for i := range ref {
				gi := float64(g[i])
				ref[i] *= 1 - c.lr*c.wd
				m[i] += (gi - m[i]) * (1 - c.b1)
				v[i] = v[i]*c.b2 + (1-c.b2)*gi*gi
				ref[i] -= c.lr / bc1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(bc2) + c.eps)
			}
			for i := range ref {
				if d := math.Abs(float64(p[i]) - ref[i]); d > 1e-6*(1+math.Abs(ref[i])) {
					t.Fatalf("%s: step %d: param[%d] = %v, want %v", c.name, step, i, p[i], ref[i])
				}
				if d := math.Abs(float64(o.V[0][i]) - v[i]); d > 1e-6*(1+v[i]) {
					t.Fatalf("%s: step %d: exp_avg_sq[%d] = %v, want %v", c.name, step, i, o.V[0][i], v[i])
				}
			}
		}
		if o.Step != 5 {
			t.Errorf("%s: Step = %d after 5 updates", c.name, o.Step)
		}
	}
}

// TestAdamWKernels checks every kernel set's adamw against adamwGeneric bit for bit, over
// lengths with and without a tail past the last full vector, at an unaligned offset, with
// gradients of every scale (zero, subnormal, huge) and guard elements after the end that must
// stay as they were.
func TestAdamWKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := &adamStep{b1: 0.9, c1: 1 - 0.9, b2: 0.999, c2: 1 - 0.999, decay: 1 - 1e-3*0.01,
		stepSize: 1e-3 / (1 - 0.9*0.9), bc2Sqrt: math.Sqrt(1 - 0.999*0.999), eps: 1e-8}
	scales := []float32{0, 1e-40, 1e-6, 1, 1e3, 1e30}
	vScales := []float32{0, 1e-30, 1e-16, 1e-8, 1, 1e6, 1e30}
	for _, ks := range supportedKernels {
		for _, n := range []int{0, 1, 3, 4, 5, 8, 13, 1027} {
			const off, guard = 1, 5
			var bufs [4][]float32 // p, g, m, v, each with off + n + guard elements
			for i := range bufs {
				bufs[i] = make([]float32, off+n+guard)
				for j := range bufs[i] {
					bufs[i][j] = float32(rng.NormFloat64())
				}
			}
			for j := range bufs[1] {
				bufs[1][j] *= scales[j%len(scales)]
			}
			for j := range bufs[3] { // the second moment: never negative, some small beside eps^2
				bufs[3][j] = float32(math.Abs(float64(bufs[3][j]))) * vScales[j%len(vScales)]
			}
			want := [4][]float32{}
			for i := range bufs {
				want[i] = slices.Clone(bufs[i])
			}
			sl := func(b []float32) []float32 { return b[off : off+n] }
			adamwGeneric(sl(want[0]), sl(want[1]), sl(want[2]), sl(want[3]), c)
			ks.adamw(sl(bufs[0]), sl(bufs[1]), sl(bufs[2]), sl(bufs[3]), c)
			for i, name := range []string{"p", "g", "m", "v"} {
				if j := bitDiff(bufs[i], want[i]); j >= 0 {
					t.Fatalf("%s: n=%d: %s[%d] = %v, want %v (adamwGeneric)", ks.name, n, name, j-off, bufs[i][j], want[i][j])
				}
			}
		}
	}
}

func TestAdamWNilGradSkipsParam(t *testing.T) {
	p0, p1 := []float32{1, 2}, []float32{3, 4}
	o := &AdamW{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
	o.Update([][]float32{p0, p1}, [][]float32{nil, {1, 1}})
	if !slices.Equal(p0, []float32{1, 2}) || !slices.Equal(o.M[0], []float32{0, 0}) {
		t.Errorf("nil grad: param %v moments %v, want untouched", p0, o.M[0])
	}
	if p1[0] >= 3 {
		t.Errorf("non-nil grad: param %v was not updated", p1)
	}
}

func TestClipGradNorm(t *testing.T) {
	big := make([]float32, 3*normChunk+5) // several blocks, so the parallel sum is exercised
	for i := range big {
		big[i] = float32(math.Sin(float64(i)))
	}
	cases := []struct {
		name    string
		grads   [][]float32
		maxNorm float64
		norm    float64 // expected total norm before clipping
	}{
		{"clipped", [][]float32{{3, 0}, {0, 4}}, 1, 5},
		{"below-max", [][]float32{{3, 0}, {0, 4}}, 10, 5},
		{"nil-entry", [][]float32{nil, {0, 2}}, 1, 2},
		{"zero", [][]float32{{0, 0}}, 1, 0},
		{"large", [][]float32{big}, 1, math.Sqrt(sumSquares(big))},
	}
	for _, c := range cases {
		before := make([][]float32, len(c.grads))
		for i, g := range c.grads {
			before[i] = slices.Clone(g)
		}
		got := ClipGradNorm(c.grads, c.maxNorm)
		if math.Abs(got-c.norm) > 1e-6*(1+c.norm) {
			t.Errorf("%s: total norm %v, want %v", c.name, got, c.norm)
		}
		scale := math.Min(1, c.maxNorm/(c.norm+1e-6))
		for i, g := range c.grads {
			for j, x := range g {
				if want := float64(before[i][j]) * scale; math.Abs(float64(x)-want) > 1e-6 {
					t.Fatalf("%s: grads[%d][%d] = %v, want %v", c.name, i, j, x, want)
				}
			}
		}
	}
}

func TestClipGradNormDeterministic(t *testing.T) {
	defer SetWorkers(SetWorkers(1))
	rng := rand.New(rand.NewPCG(8, 9))
	g := randSlice(rng, 5*normChunk+123)
	var norms []float64
	for _, w := range []int{1, 2, 3} {
		SetWorkers(w)
		norms = append(norms, ClipGradNorm([][]float32{slices.Clone(g)}, math.Inf(1)))
	}
	if norms[0] != norms[1] || norms[0] != norms[2] {
		t.Errorf("norm depends on the worker count: %v", norms)
	}
}

func sumSquares(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

// BenchmarkAdamW times one AdamW step over 4M parameters (bench-s has 3.95M) on one worker, for
// every kernel set, in ns per parameter.
//
//	go test -run '^$' -bench AdamW ./tensor/
func BenchmarkAdamW(b *testing.B) {
	defer SetWorkers(SetWorkers(1))
	const n = 1 << 22
	rng := rand.New(rand.NewPCG(5, 6))
	p, g := randSlice(rng, n), randSlice(rng, n)
	m, v := make([]float32, n), make([]float32, n)
	c := &adamStep{b1: 0.9, c1: 0.1, b2: 0.999, c2: 0.001, decay: 1 - 1e-5, stepSize: 1e-3, bc2Sqrt: 0.05, eps: 1e-8}
	for _, ks := range supportedKernels {
		b.Run("impl="+ks.name, func(b *testing.B) {
			for b.Loop() {
				ks.adamw(p, g, m, v, c)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/param")
		})
	}
}
