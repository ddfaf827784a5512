package ref

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fdOp is one operation under a finite-difference check in float64. The check defines the
// scalar L = sum_i y_i u_i for a random upstream u, and compares the gradient backward
// accumulates with the central difference (L(x + h) - L(x - h)) / 2h of every input element.
type fdOp struct {
	name     string
	inputs   map[string][]float64 // differentiable inputs, perturbed in place by the check
	nOut     int                  // len(y)
	forward  func(y []float64)
	backward func(dy []float64, grads map[string][]float64) // accumulates dL/dx into grads[x]
}

// In float64 the central difference's truncation error is O(h^2) and its rounding error about
// 1e-16 |L| / h: both near 1e-10 here, so a tolerance of 1e-6 leaves a wide margin while any
// wrong term in a backward formula is off by far more.
const (
	fdStep = 1e-5
	fdTol  = 1e-6
)

func checkFD(t *testing.T, op fdOp) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	up := randN(rng, op.nOut)
	y := make([]float64, op.nOut)
	loss := func() float64 {
		op.forward(y)
		var s float64
		for i, v := range y {
			s += v * up[i]
		}
		return s
	}
	names := slices.Sorted(maps.Keys(op.inputs))
	grads := map[string][]float64{}
	for _, name := range names {
		grads[name] = make([]float64, len(op.inputs[name]))
	}
	loss() // the backward may use what the forward saved
	op.backward(up, grads)
	for _, name := range names {
		x := op.inputs[name]
		for i := range x {
			x0 := x[i]
			x[i] = x0 + fdStep
			lp := loss()
			x[i] = x0 - fdStep
			lm := loss()
			x[i] = x0
			num := (lp - lm) / (2 * fdStep)
			if got := grads[name][i]; math.Abs(got-num) > fdTol*(1+math.Abs(num)) {
				t.Errorf("%s: d%s[%d] = %.9g, finite difference %.9g", op.name, name, i, got, num)
			}
		}
	}
}

func randN(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// TestBackwardFiniteDifferences checks every backward function of the package against the
// finite differences of its forward, in float64.
func TestBackwardFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ops []fdOp

	{ // MatMul: (3, 4) @ (4, 5)
		m, k, n := 3, 4, 5
		a, b := randN(rng, m*k), randN(rng, k*n)
		ops = append(ops, fdOp{name: "MatMul", inputs: map[string][]float64{"a": a, "b": b}, nOut: m * n,
			forward: func(y []float64) { MatMulForward(y, a, b, m, k, n) },
			backward: func(dy []float64, g map[string][]float64) {
				MatMulBackward(g["a"], g["b"], dy, a, b, m, k, n)
			}})
	}
	{ // Linear with bias: (3, 4) -> (3, 2)
		n, in, out := 3, 4, 2
		x, w, bias := randN(rng, n*in), randN(rng, out*in), randN(rng, out)
		ops = append(ops, fdOp{name: "Linear", inputs: map[string][]float64{"x": x, "w": w, "bias": bias}, nOut: n * out,
			forward: func(y []float64) { LinearForward(y, x, w, bias, n, in, out) },
			backward: func(dy []float64, g map[string][]float64) {
				LinearBackward(g["x"], g["w"], g["bias"], dy, x, w, n, in, out)
			}})
	}
	{ // RMSNorm: (3, 5)
		n, d := 3, 5
		x, w := randN(rng, n*d), randN(rng, d)
		rstd := make([]float64, n)
		ops = append(ops, fdOp{name: "RMSNorm", inputs: map[string][]float64{"x": x, "w": w}, nOut: n * d,
			forward: func(y []float64) { RMSNormForward(y, rstd, x, w, n, d, 1e-6) },
			backward: func(dy []float64, g map[string][]float64) {
				RMSNormBackward(g["x"], g["w"], dy, x, w, rstd, n, d)
			}})
	}
	{ // RoPE: 3 tokens of 2 heads of 6, at positions 0, 7, 2
		n, heads, D := 3, 2, 6
		x := randN(rng, n*heads*D)
		pos := []int{0, 7, 2}
		ops = append(ops, fdOp{name: "RoPE", inputs: map[string][]float64{"x": x}, nOut: len(x),
			forward: func(y []float64) { copy(y, x); RoPEForward(y, pos, n, heads, D, 10000) },
			backward: func(dy []float64, g map[string][]float64) {
				dx := slices.Clone(dy)
				RoPEBackward(dx, pos, n, heads, D, 10000)
				Axpy(1, dx, g["x"])
			}})
	}
	{ // Attention: 2 sequences of 5, 4 query heads in 2 groups, head size 3; the first
		// sequence left-padded by one token, the second with a hole.
		B, T, Hq, Hkv, D := 2, 5, 4, 2, 3
		q, k, v := randN(rng, B*T*Hq*D), randN(rng, B*T*Hkv*D), randN(rng, B*T*Hkv*D)
		mask := []float64{0, 1, 1, 1, 1, 1, 1, 0, 1, 1}
		probs := make([]float64, B*Hq*T*T)
		ops = append(ops, fdOp{name: "Attention", inputs: map[string][]float64{"q": q, "k": k, "v": v}, nOut: len(q),
			forward: func(y []float64) { AttentionForward(y, probs, nil, q, k, v, mask, B, T, Hq, Hkv, D) },
			backward: func(dy []float64, g map[string][]float64) {
				AttentionBackward(g["q"], g["k"], g["v"], dy, probs, q, k, v, B, T, Hq, Hkv, D)
			}})
	}
	{ // SiLU and SwiGLU over 7 elements
		x, gate, up := randN(rng, 7), randN(rng, 7), randN(rng, 7)
		ops = append(ops, fdOp{name: "SiLU", inputs: map[string][]float64{"x": x}, nOut: 7,
			forward:  func(y []float64) { SiLUForward(y, x) },
			backward: func(dy []float64, g map[string][]float64) { SiLUBackward(g["x"], dy, x) }})
		ops = append(ops, fdOp{name: "SwiGLU", inputs: map[string][]float64{"gate": gate, "up": up}, nOut: 7,
			forward: func(y []float64) { SwiGLUForward(y, gate, up) },
			backward: func(dy []float64, g map[string][]float64) {
				SwiGLUBackward(g["gate"], g["up"], dy, gate, up)
			}})
	}
	{ // Softmax, LogSoftmax, LogProbs and Entropy over (3, 6) logits
		n, V := 3, 6
		x := randN(rng, n*V)
		labels := []int{0, 5, 2}
		y := make([]float64, n*V) // the forward output the softmax backwards read
		ops = append(ops, fdOp{name: "Softmax", inputs: map[string][]float64{"x": x}, nOut: n * V,
			forward:  func(out []float64) { SoftmaxForward(out, x, n, V); copy(y, out) },
			backward: func(dy []float64, g map[string][]float64) { SoftmaxBackward(g["x"], dy, y, n, V) }})
		ops = append(ops, fdOp{name: "LogSoftmax", inputs: map[string][]float64{"x": x}, nOut: n * V,
			forward:  func(out []float64) { LogSoftmaxForward(out, x, n, V); copy(y, out) },
			backward: func(dy []float64, g map[string][]float64) { LogSoftmaxBackward(g["x"], dy, y, n, V) }})
		ops = append(ops, fdOp{name: "LogProbs", inputs: map[string][]float64{"x": x}, nOut: n,
			forward: func(out []float64) { LogProbsForward(out, x, labels, n, V) },
			backward: func(dy []float64, g map[string][]float64) {
				LogProbsBackward(g["x"], dy, x, labels, n, V)
			}})
		ops = append(ops, fdOp{name: "Entropy", inputs: map[string][]float64{"x": x}, nOut: n,
			forward:  func(out []float64) { EntropyForward(out, x, n, V) },
			backward: func(dy []float64, g map[string][]float64) { EntropyBackward(g["x"], dy, x, n, V) }})
	}
	{ // Embedding: a (4, 3) table, ids with a repeat
		table := randN(rng, 4*3)
		ids := []int{2, 0, 2, 3}
		ops = append(ops, fdOp{name: "Embedding", inputs: map[string][]float64{"table": table}, nOut: len(ids) * 3,
			forward:  func(y []float64) { EmbeddingForward(y, table, ids, 3) },
			backward: func(dy []float64, g map[string][]float64) { EmbeddingBackward(g["table"], dy, ids, 3) }})
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) { checkFD(t, op) })
	}
}

// TestGemmAgainstMatMul checks Gemm's four transposes, strides, alpha and beta against
// MatMulForward on explicitly transposed copies.
func TestGemmAgainstMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, n, k := 3, 4, 5
	a, b := randN(rng, m*k), randN(rng, k*n) // op(A) (m, k), op(B) (k, n)
	want := make([]float64, m*n)
	MatMulForward(want, a, b, m, k, n)
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		transA, transB := tr[0], tr[1]
		// Store A and B transposed where asked, with one column of slack in every row.
		as, lda := store(a, m, k, transA)
		bs, ldb := store(b, k, n, transB)
		c0 := randN(rng, m*(n+2))
		c := slices.Clone(c0)
		Gemm(transA, transB, m, n, k, 2, as, lda, bs, ldb, 0.5, c, n+2)
		for i := 0; i < m; i++ {
			for j := 0; j < n+2; j++ {
				w := c0[i*(n+2)+j] // the slack beyond n is untouched
				if j < n {
					w = 2*want[i*n+j] + 0.5*c0[i*(n+2)+j]
				}
				if got := c[i*(n+2)+j]; math.Abs(got-w) > 1e-12 {
					t.Errorf("transA=%v transB=%v: c[%d,%d] = %g, want %g", transA, transB, i, j, got, w)
				}
			}
		}
	}
}

// store returns x (r, c), or its transpose (c, r) when trans, with one spare column per row,
// and the row stride.
func store(x []float64, r, c int, trans bool) ([]float64, int) {
	if !trans {
		out := make([]float64, r*(c+1))
		for i := 0; i < r; i++ {
			copy(out[i*(c+1):], x[i*c:(i+1)*c])
		}
		return out, c + 1
	}
	out := make([]float64, c*(r+1))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*(r+1)+i] = x[i*c+j]
		}
	}
	return out, r + 1
}

// TestAttentionDecodeIsTheLastRow checks that decoding the last position of a sequence against
// its cache gives the causal forward's last row, for each query head of a group.
func TestAttentionDecodeIsTheLastRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	T, Hq, Hkv, D := 6, 3, 1, 4
	q, k, v := randN(rng, T*Hq*D), randN(rng, T*Hkv*D), randN(rng, T*Hkv*D)
	mask := []float64{1, 1, 1, 1, 1, 1}
	out := make([]float64, T*Hq*D)
	AttentionForward(out, nil, nil, q, k, v, mask, 1, T, Hq, Hkv, D)
	got := make([]float64, Hq*D)
	AttentionDecode(got, q[(T-1)*Hq*D:], k, v, Hq, D, T, 1/math.Sqrt(float64(D)))
	for i, w := range out[(T-1)*Hq*D:] {
		if math.Abs(got[i]-w) > 1e-12 {
			t.Errorf("out[%d] = %g, want the forward's %g", i, got[i], w)
		}
	}
}

// TestAttentionMasking checks the weights' zeros: above the diagonal, at padded keys, and on
// the whole row of a padded query; and that each other row sums to 1.
func TestAttentionMasking(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	T, D := 4, 2
	q, k, v := randN(rng, T*D), randN(rng, T*D), randN(rng, T*D)
	mask := []float64{0, 1, 0, 1}
	probs, stats := make([]float64, T*T), make([]float64, T*2)
	AttentionForward(make([]float64, T*D), probs, stats, q, k, v, mask, 1, T, 1, 1, D)
	for i := 0; i < T; i++ {
		var sum float64
		for j := 0; j < T; j++ {
			p := probs[i*T+j]
			if (j > i || mask[i] == 0 || mask[j] == 0) && p != 0 {
				t.Errorf("P[%d,%d] = %g, want 0", i, j, p)
			}
			sum += p
		}
		if wantSum := mask[i]; math.Abs(sum-wantSum) > 1e-12 {
			t.Errorf("row %d sums to %g, want %g", i, sum, wantSum)
		}
		if mask[i] == 0 && (!math.IsInf(stats[2*i], 1) || stats[2*i+1] != 0) {
			t.Errorf("row %d stats = %v, want [+Inf 0]", i, stats[2*i:2*i+2])
		}
	}
}

// TestAdamWByHand checks one AdamW step against a hand computation: at t = 1 the bias
// corrections undo the moments' (1 - beta) factors, so with eps = 0 the step is lr * sign(g).
func TestAdamWByHand(t *testing.T) {
	p, g := []float64{1, 2}, []float64{0.5, -3}
	m, v := make([]float64, 2), make([]float64, 2)
	AdamW(p, g, m, v, 0.1, 0.9, 0.999, 0, 0.5, 1)
	for i, want := range []float64{1*(1-0.05) - 0.1, 2*(1-0.05) + 0.1} {
		if math.Abs(p[i]-want) > 1e-12 {
			t.Errorf("p[%d] = %.15g, want %.15g", i, p[i], want)
		}
	}
	for i, want := range []float64{0.1 * 0.5, 0.1 * -3} {
		if math.Abs(m[i]-want) > 1e-15 {
			t.Errorf("m[%d] = %g, want %g", i, m[i], want)
		}
	}
}

// TestFloat32MatchesFloat64 checks that the float32 instantiation computes the same function
// as the float64 one, to float32 rounding, on a few operations.
func TestFloat32MatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	n, d := 4, 9
	x64, w64 := randN(rng, n*d), randN(rng, d)
	x32, w32 := to32(x64), to32(w64)
	y64, r64 := make([]float64, n*d), make([]float64, n)
	y32, r32 := make([]float32, n*d), make([]float32, n)
	RMSNormForward(y64, r64, x64, w64, n, d, 1e-6)
	RMSNormForward(y32, r32, x32, w32, n, d, 1e-6)
	for i := range y64 {
		if math.Abs(float64(y32[i])-y64[i]) > 1e-6*(1+math.Abs(y64[i])) {
			t.Errorf("RMSNorm y[%d]: float32 %g, float64 %g", i, y32[i], y64[i])
		}
	}
	e64, e32 := make([]float64, n), make([]float32, n)
	EntropyForward(e64, x64, n, d)
	EntropyForward(e32, x32, n, d)
	for i := range e64 {
		if math.Abs(float64(e32[i])-e64[i]) > 1e-6*(1+math.Abs(e64[i])) {
			t.Errorf("Entropy[%d]: float32 %g, float64 %g", i, e32[i], e64[i])
		}
	}
	if got, want := fmt.Sprint(len(e32)), fmt.Sprint(n); got != want {
		t.Errorf("len = %s, want %s", got, want)
	}
}

func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestSoftmaxInPlace checks that SoftmaxForward and LogSoftmaxForward may overwrite their
// input, as the model's sampler calls them.
func TestSoftmaxInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n, d := 2, 5
	x := randN(rng, n*d)
	for _, f := range []struct {
		name string
		fn   func(y, x []float64, n, d int)
	}{{"Softmax", SoftmaxForward[float64]}, {"LogSoftmax", LogSoftmaxForward[float64]}} {
		want := make([]float64, n*d)
		f.fn(want, x, n, d)
		got := slices.Clone(x)
		f.fn(got, got, n, d)
		if !slices.Equal(got, want) {
			t.Errorf("%s in place = %v, want %v", f.name, got, want)
		}
	}
}

// TestLogitsNearFloat32Max checks the log-probabilities, entropy and softmax of logits near
// the float32 maximum, where logsumexp = m + log 2 rounds to m even in float64: the
// log-probabilities must subtract m before the log of the sum.
func TestLogitsNearFloat32Max(t *testing.T) {
	x := []float32{3e38, 3e38, 0}
	logp, ent, p := make([]float32, 3), make([]float32, 1), make([]float32, 3)
	LogProbsForward(logp[:1], x, []int{0}, 1, 3)
	LogProbsForward(logp[1:2], x, []int{2}, 1, 3)
	EntropyForward(ent, x, 1, 3)
	SoftmaxForward(p, x, 1, 3)
	if math.Abs(float64(logp[0])+math.Ln2) > 1e-6 || logp[1] != -3e38 {
		t.Errorf("log-probs = %v, %v; want -ln 2, -3e38", logp[0], logp[1])
	}
	if math.Abs(float64(ent[0])-math.Ln2) > 1e-6 {
		t.Errorf("entropy = %v, want ln 2", ent[0])
	}
	if p[0] != 0.5 || p[1] != 0.5 || p[2] != 0 {
		t.Errorf("softmax = %v, want [0.5 0.5 0]", p)
	}
}
