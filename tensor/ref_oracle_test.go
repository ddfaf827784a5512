package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"agentr1/tensor/ref"
)

// The ref set is the oracle: every fast kernel set (generic, avx2, avx512: supportedKernels)
// runs each operation, forward and backward, on awkward shapes (k = 1, odd sizes, edge tiles, T
// not a multiple of attnBlock, grouped queries) and is compared with package ref's loop (its
// float32 instantiation, called directly, whatever set is active).
//
// oracleTol bounds |fast - ref| <= oracleTol * (1 + |ref|) elementwise. The fast sets sum in
// float32 in their own orders and ref in float64, so they differ by float32 rounding: for the
// longest sums here (k = 300 products of unit normals) a few 1e-6 in practice, 1e-4 at worst;
// a wrong index or formula is off by O(1).
const oracleTol = 1e-4

// withKernels runs f with ks as the active kernel set.
func withKernels(ks *kernels, f func()) {
	defer func(old *kernels) { active = old }(active)
	active = ks
	f()
}

// checkClose reports the first element where got and want differ by more than oracleTol.
func checkClose(t *testing.T, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", name, len(got), len(want))
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) || math.Abs(g-w) > oracleTol*(1+math.Abs(w)) {
			t.Errorf("%s: [%d] = %.8g, ref %.8g", name, i, g, w)
			return
		}
	}
}

// forEachFastSet runs f once per fast kernel set, active, with a name prefix for messages.
func forEachFastSet(t *testing.T, f func(t *testing.T, set string)) {
	for _, ks := range supportedKernels {
		withKernels(ks, func() { f(t, ks.name) })
	}
}

func TestOracleGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 1))
	shapes := [][3]int{{1, 1, 1}, {1, 7, 1}, {5, 3, 1}, {2, 40, 9}, {7, 33, 17}, {13, 65, 300}, {25, 31, 70}, {12, 32, 256}, {37, 5, 3}}
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {0.7, 1}, {1, 0.5}} {
					lda, ldb, ldc := k+1, n+2, n+3 // strides wider than the rows
					if tr[0] {
						lda = m + 1
					}
					if tr[1] {
						ldb = k + 2
					}
					a, b := randSlice(rng, max(m, k)*lda), randSlice(rng, max(n, k)*ldb)
					c := randSlice(rng, m*ldc)
					want := slices.Clone(c)
					Gemm(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)
					ref.Gemm(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], want, ldc)
					checkClose(t, fmt.Sprintf("%s Gemm m=%d n=%d k=%d trans=%v alpha,beta=%v", set, m, n, k, tr, ab), c, want)
				}
			}
		}
	})
}

func TestOracleGemmPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(102, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range [][3]int{{1, 5, 1}, {3, 33, 17}, {9, 70, 300}, {13, 31, 40}} {
			m, n, k := s[0], s[1], s[2]
			for _, transB := range []bool{false, true} {
				b := randSlice(rng, k*n) // (k, n), or (n, k) when transB
				ldb := n
				if transB {
					ldb = k
				}
				var pb, pb2 PackedB
				pb.Pack(transB, k, n, b, ldb)
				pb2.Pack(transB, k, n, b, ldb)
				a := randSlice(rng, m*k)
				c, c2 := randSlice(rng, m*n), randSlice(rng, m*n)
				want, want2 := slices.Clone(c), slices.Clone(c2)
				GemmPackedMulti(false, m, 1, a, k, []PackedProduct{{B: &pb, Beta: 1, C: c, Ldc: n}, {B: &pb2, Beta: 0, C: c2, Ldc: n}})
				ref.Gemm(false, transB, m, n, k, 1, a, k, b, ldb, 1, want, n)
				ref.Gemm(false, transB, m, n, k, 1, a, k, b, ldb, 0, want2, n)
				name := fmt.Sprintf("%s GemmPackedMulti m=%d n=%d k=%d transB=%v", set, m, n, k, transB)
				checkClose(t, name+" beta=1", c, want)
				checkClose(t, name+" beta=0", c2, want2)
			}
		}
	})
}

func TestOracleMatMulLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(103, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {13, 33, 17}, {3, 300, 2}} {
			m, k, n := s[0], s[1], s[2]
			name := fmt.Sprintf("%s m=%d k=%d n=%d", set, m, k, n)
			a, b, dc := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
			c, want := make([]float32, m*n), make([]float32, m*n)
			MatMulForward(c, a, b, m, k, n)
			ref.MatMulForward(want, a, b, m, k, n)
			checkClose(t, name+" MatMulForward", c, want)
			da, db := randSlice(rng, m*k), randSlice(rng, k*n)
			wda, wdb := slices.Clone(da), slices.Clone(db)
			MatMulBackward(da, db, dc, a, b, m, k, n)
			ref.MatMulBackward(wda, wdb, dc, a, b, m, k, n)
			checkClose(t, name+" MatMulBackward da", da, wda)
			checkClose(t, name+" MatMulBackward db", db, wdb)

			// Linear: x (m, k) @ w (n, k)^T + bias (n)
			w, bias := randSlice(rng, n*k), randSlice(rng, n)
			y, wy := make([]float32, m*n), make([]float32, m*n)
			LinearForward(y, a, w, bias, m, k, n)
			ref.LinearForward(wy, a, w, bias, m, k, n)
			checkClose(t, name+" LinearForward", y, wy)
			dx, dw, dbias := randSlice(rng, m*k), randSlice(rng, n*k), randSlice(rng, n)
			wdx, wdw, wdbias := slices.Clone(dx), slices.Clone(dw), slices.Clone(dbias)
			LinearBackward(dx, dw, dbias, dc, a, w, m, k, n)
			ref.LinearBackward(wdx, wdw, wdbias, dc, a, w, m, k, n)
			checkClose(t, name+" LinearBackward dx", dx, wdx)
			checkClose(t, name+" LinearBackward dw", dw, wdw)
			checkClose(t, name+" LinearBackward dbias", dbias, wdbias)
		}
	})
}

func TestOracleRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(104, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range [][2]int{{1, 1}, {3, 7}, {5, 37}, {9, 130}} {
			n, d := s[0], s[1]
			name := fmt.Sprintf("%s RMSNorm n=%d d=%d", set, n, d)
			x, w, dy := randSlice(rng, n*d), randSlice(rng, d), randSlice(rng, n*d)
			y, r, wy, wr := make([]float32, n*d), make([]float32, n), make([]float32, n*d), make([]float32, n)
			RMSNormForward(y, r, x, w, n, d, 1e-6)
			ref.RMSNormForward(wy, wr, x, w, n, d, 1e-6)
			checkClose(t, name+" y", y, wy)
			checkClose(t, name+" rstd", r, wr)
			dx, dw := randSlice(rng, n*d), randSlice(rng, d)
			wdx, wdw := slices.Clone(dx), slices.Clone(dw)
			RMSNormBackward(dx, dw, dy, x, w, wr, n, d)
			ref.RMSNormBackward(wdx, wdw, dy, x, w, wr, n, d)
			checkClose(t, name+" dx", dx, wdx)
			checkClose(t, name+" dw", dw, wdw)
		}
	})
}

func TestOracleRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(105, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range [][3]int{{1, 1, 2}, {3, 3, 6}, {5, 2, 34}} {
			n, heads, D := s[0], s[1], s[2]
			name := fmt.Sprintf("%s RoPE n=%d heads=%d D=%d", set, n, heads, D)
			r := NewRoPE(D, 50, 1e6)
			pos := make([]int, n)
			for i := range pos {
				pos[i] = rng.IntN(50)
			}
			x := randSlice(rng, n*heads*D)
			want := slices.Clone(x)
			r.Forward(x, pos, n, heads)
			ref.RoPEForward(want, pos, n, heads, D, 1e6)
			checkClose(t, name+" forward", x, want)
			r.Backward(x, pos, n, heads)
			ref.RoPEBackward(want, pos, n, heads, D, 1e6)
			checkClose(t, name+" backward", x, want)
		}
	})
}

// oracleAttentionCase is one attention shape with its key mask (B, T).
type oracleAttentionCase struct {
	B, T, Hq, Hkv, D int
	mask             func(b, j int) float32
}

func TestOracleAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(106, 1))
	all := func(b, j int) float32 { return 1 }
	padded := func(b, j int) float32 { // left padding on sequence 0, a hole and right padding on 1
		if (b == 0 && j < 2) || (b == 1 && (j == 3 || j >= 60)) {
			return 0
		}
		return 1
	}
	empty := func(b, j int) float32 { return float32(b) } // sequence 0 has no valid key
	cases := []oracleAttentionCase{
		{1, 1, 1, 1, 1, all},
		{2, 5, 4, 2, 3, padded},
		{2, 9, 3, 3, 5, empty},
		{2, 70, 6, 2, 8, padded}, // T = 70: two row blocks, the second partial
		{1, 65, 2, 1, 4, all},
	}
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, c := range cases {
			B, T, Hq, Hkv, D := c.B, c.T, c.Hq, c.Hkv, c.D
			name := fmt.Sprintf("%s Attention B=%d T=%d Hq=%d Hkv=%d D=%d", set, B, T, Hq, Hkv, D)
			q, k, v := randSlice(rng, B*T*Hq*D), randSlice(rng, B*T*Hkv*D), randSlice(rng, B*T*Hkv*D)
			mask := make([]float32, B*T)
			for i := range mask {
				mask[i] = c.mask(i/T, i%T)
			}
			out, probs := make([]float32, B*T*Hq*D), make([]float32, B*Hq*T*T)
			wout, wprobs := make([]float32, B*T*Hq*D), make([]float32, B*Hq*T*T)
			AttentionForward(out, probs, q, k, v, mask, B, T, Hq, Hkv, D)
			ref.AttentionForward(wout, wprobs, nil, q, k, v, mask, B, T, Hq, Hkv, D)
			checkClose(t, name+" out", out, wout)
			checkClose(t, name+" probs", probs, wprobs)

			sout, stats := make([]float32, B*T*Hq*D), make([]float32, B*Hq*T*2)
			AttentionForwardStats(sout, stats, q, k, v, mask, B, T, Hq, Hkv, D)
			checkClose(t, name+" out (stats)", sout, wout)

			dout := randSlice(rng, B*T*Hq*D)
			dq, dk, dv := randSlice(rng, len(q)), randSlice(rng, len(k)), randSlice(rng, len(v))
			wdq, wdk, wdv := slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)
			sdq, sdk, sdv := slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)
			AttentionBackward(dq, dk, dv, dout, probs, q, k, v, B, T, Hq, Hkv, D)
			AttentionBackwardStats(sdq, sdk, sdv, dout, stats, q, k, v, mask, B, T, Hq, Hkv, D)
			ref.AttentionBackward(wdq, wdk, wdv, dout, wprobs, q, k, v, B, T, Hq, Hkv, D)
			for _, g := range []struct {
				name      string
				got, want []float32
			}{{"dq", dq, wdq}, {"dk", dk, wdk}, {"dv", dv, wdv}, {"dq (stats)", sdq, wdq}, {"dk (stats)", sdk, wdk}, {"dv (stats)", sdv, wdv}} {
				checkClose(t, name+" "+g.name, g.got, g.want)
			}
		}
	})
}

func TestOracleAttentionDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(107, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range [][3]int{{1, 4, 1}, {3, 34, 17}, {5, 8, 70}, {7, 64, 33}} {
			G, D, L := s[0], s[1], s[2]
			maxLen := L + 3
			name := fmt.Sprintf("%s AttentionDecode G=%d D=%d L=%d", set, G, D, L)
			q, k, v := randSlice(rng, G*D), randSlice(rng, L*D), randSlice(rng, L*D) // k, v: (L, D)
			keys := make([]float32, KeyCacheIndex(maxLen-1, D-1, D)+KeyTile)
			values := make([]float32, ValueCacheLen(maxLen, D))
			for j := 0; j < L; j++ {
				for d := 0; d < D; d++ {
					keys[KeyCacheIndex(j, d, D)] = k[j*D+d]
					values[ValueCacheIndex(j, d, maxLen)] = v[j*D+d]
				}
			}
			scale := float32(1 / math.Sqrt(float64(D)))
			out, want := make([]float32, G*D), make([]float32, G*D)
			AttentionDecode(out, q, keys, values, G, D, L, maxLen, scale, make([]float32, G*L))
			ref.AttentionDecode(want, q, k, v, G, D, L, scale)
			checkClose(t, name, out, want)
		}
	})
}

func TestOracleActivations(t *testing.T) {
	rng := rand.New(rand.NewPCG(108, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, n := range []int{1, 7, 1003} {
			name := fmt.Sprintf("%s n=%d", set, n)
			x, up, dy := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
			for i := range x {
				x[i] *= 6 // reach both tails of the sigmoid
			}
			y, wy := make([]float32, n), make([]float32, n)
			SiLUForward(y, x)
			ref.SiLUForward(wy, x)
			checkClose(t, name+" SiLUForward", y, wy)
			dx := randSlice(rng, n)
			wdx := slices.Clone(dx)
			SiLUBackward(dx, dy, x)
			ref.SiLUBackward(wdx, dy, x)
			checkClose(t, name+" SiLUBackward", dx, wdx)

			SwiGLUForward(y, x, up)
			ref.SwiGLUForward(wy, x, up)
			checkClose(t, name+" SwiGLUForward", y, wy)
			dgate, dup := randSlice(rng, n), randSlice(rng, n)
			wdgate, wdup := slices.Clone(dgate), slices.Clone(dup)
			SwiGLUBackward(dgate, dup, dy, x, up)
			ref.SwiGLUBackward(wdgate, wdup, dy, x, up)
			checkClose(t, name+" SwiGLUBackward dgate", dgate, wdgate)
			checkClose(t, name+" SwiGLUBackward dup", dup, wdup)
		}
	})
}

func TestOracleSoftmaxAndLogits(t *testing.T) {
	rng := rand.New(rand.NewPCG(109, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		for _, s := range [][2]int{{1, 1}, {3, 7}, {4, 1027}} {
			n, V := s[0], s[1]
			name := fmt.Sprintf("%s n=%d V=%d", set, n, V)
			x, dy := randSlice(rng, n*V), randSlice(rng, n*V)
			for i := range x {
				x[i] *= 4
			}
			labels := make([]int, n)
			for i := range labels {
				labels[i] = rng.IntN(V)
			}
			for _, op := range []struct {
				name     string
				forward  func(y, x []float32, n, d int)
				backward func(dx, dy, y []float32, n, d int)
				refF     func(y, x []float32, n, d int)
				refB     func(dx, dy, y []float32, n, d int)
			}{
				{"Softmax", SoftmaxForward, SoftmaxBackward, ref.SoftmaxForward[float32], ref.SoftmaxBackward[float32]},
				{"LogSoftmax", LogSoftmaxForward, LogSoftmaxBackward, ref.LogSoftmaxForward[float32], ref.LogSoftmaxBackward[float32]},
			} {
				y, wy := make([]float32, n*V), make([]float32, n*V)
				op.forward(y, x, n, V)
				op.refF(wy, x, n, V)
				checkClose(t, name+" "+op.name+"Forward", y, wy)
				dx := randSlice(rng, n*V)
				wdx := slices.Clone(dx)
				op.backward(dx, dy, wy, n, V)
				op.refB(wdx, dy, wy, n, V)
				checkClose(t, name+" "+op.name+"Backward", dx, wdx)
			}

			logp, wlogp := make([]float32, n), make([]float32, n)
			LogProbsForward(logp, x, labels, n, V)
			ref.LogProbsForward(wlogp, x, labels, n, V)
			checkClose(t, name+" LogProbsForward", logp, wlogp)
			dlogp := randSlice(rng, n)
			dl := randSlice(rng, n*V)
			wdl := slices.Clone(dl)
			LogProbsBackward(dl, dlogp, x, wlogp, labels, n, V)
			ref.LogProbsBackward(wdl, dlogp, x, labels, n, V)
			checkClose(t, name+" LogProbsBackward", dl, wdl)

			ent, went := make([]float32, n), make([]float32, n)
			EntropyForward(ent, x, n, V)
			ref.EntropyForward(went, x, n, V)
			checkClose(t, name+" EntropyForward", ent, went)
			EntropyBackward(dl, dlogp, x, went, n, V)
			ref.EntropyBackward(wdl, dlogp, x, n, V)
			checkClose(t, name+" EntropyBackward", dl, wdl)
		}
	})
}

func TestOracleEmbeddingAdamWVectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(110, 1))
	forEachFastSet(t, func(t *testing.T, set string) {
		// Embedding: a (9, 5) table, ids with repeats.
		table, ids := randSlice(rng, 9*5), []int{3, 0, 8, 3, 3, 1, 8}
		y, wy := make([]float32, len(ids)*5), make([]float32, len(ids)*5)
		EmbeddingForward(y, table, ids, 5)
		ref.EmbeddingForward(wy, table, ids, 5)
		checkClose(t, set+" EmbeddingForward", y, wy)
		dy, dt := randSlice(rng, len(y)), randSlice(rng, len(table))
		wdt := slices.Clone(dt)
		EmbeddingBackward(dt, dy, ids, 5)
		ref.EmbeddingBackward(wdt, dy, ids, 5)
		checkClose(t, set+" EmbeddingBackward", dt, wdt)

		// AdamW: three steps on a parameter of odd length.
		const n = 1001
		p, opt := randSlice(rng, n), &AdamW{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
		wp, wm, wv := slices.Clone(p), make([]float32, n), make([]float32, n)
		for step := 1; step <= 3; step++ {
			g := randSlice(rng, n)
			opt.Update([][]float32{p}, [][]float32{g})
			ref.AdamW(wp, g, wm, wv, 0.01, 0.9, 0.999, 1e-8, 0.1, step)
		}
		checkClose(t, set+" AdamW p", p, wp)
		checkClose(t, set+" AdamW m", opt.M[0], wm)
		checkClose(t, set+" AdamW v", opt.V[0], wv)

		for _, n := range []int{0, 1, 7, 33, 1001} {
			x, yv := randSlice(rng, n), randSlice(rng, n)
			name := fmt.Sprintf("%s n=%d", set, n)
			checkClose(t, name+" Dot", []float32{Dot(x, yv)}, []float32{ref.Dot(x, yv)})
			got, want := slices.Clone(yv), slices.Clone(yv)
			Axpy(-0.3, x, got)
			ref.Axpy(-0.3, x, want)
			checkClose(t, name+" Axpy", got, want)
			Scal(1.7, got)
			ref.Scal(1.7, want)
			checkClose(t, name+" Scal", got, want)
			if n > 0 {
				if got, want := Argmax(x), ref.Argmax(x); got != want {
					t.Errorf("%s Argmax = %d, ref %d", name, got, want)
				}
			}
		}
	})
}
