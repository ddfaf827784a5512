package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attentionDecodeReference computes AttentionDecode's output in float64 from keys given
// position-major (L, D), by the definition: scores, softmax, weighted sum of values.
func attentionDecodeReference(q, keysPM, values []float32, G, D, L int, scale float32) []float64 {
	out := make([]float64, G*D)
	s := make([]float64, L)
	for h := range G {
		mx := math.Inf(-1)
		for j := range L {
			var dot float64
			for d := range D {
				dot += float64(q[h*D+d]) * float64(keysPM[j*D+d])
			}
			s[j] = float64(scale) * dot
			mx = math.Max(mx, s[j])
		}
		var sum float64
		for j := range L {
			s[j] = math.Exp(s[j] - mx)
			sum += s[j]
		}
		for j := range L {
			for d := range D {
				out[h*D+d] += s[j] / sum * float64(values[j*D+d])
			}
		}
	}
	return out
}

// tileKeys lays out position-major keys (L, D) as AttentionDecode reads them, with NaN in the
// unused positions of the last tile and in a guard tail (which must never be read).
func tileKeys(keysPM []float32, D, L int) []float32 {
	tiles := (L + KeyTile - 1) / KeyTile
	out := make([]float32, tiles*D*KeyTile+8)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	for j := range L {
		for d := range D {
			out[KeyCacheIndex(j, d, D)] = keysPM[j*D+d]
		}
	}
	return out
}

// blockValues lays out position-major values (L, D) as AttentionDecode reads them from a cache
// of maxLen positions, with NaN in every slot it must not read.
func blockValues(valuesPM []float32, D, L, maxLen int) []float32 {
	out := make([]float32, ValueCacheLen(maxLen, D)+8)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	for j := range L {
		for d := range D {
			out[ValueCacheIndex(j, d, maxLen)] = valuesPM[j*D+d]
		}
	}
	return out
}

// TestAttentionDecode checks AttentionDecode on every kernel set against the float64 definition
// over awkward head counts, head sizes and lengths (one position, partial last tiles, more
// heads than one strip), with NaN in every cache slot it must not read.
func TestAttentionDecode(t *testing.T) {
	defer func(ks *kernels) { active = ks }(active)
	for _, ks := range supportedKernels {
		active = ks
		for _, tc := range []struct{ G, D, L int }{
			{1, 1, 1}, {1, 8, 1}, {2, 32, 1}, {2, 32, 17}, {2, 32, 144}, {3, 20, 33}, {4, 64, 16},
			{5, 16, 40}, {8, 128, 70}, {7, 33, 5},
		} {
			name := fmt.Sprintf("impl=%s/G=%d/D=%d/L=%d", ks.name, tc.G, tc.D, tc.L)
			r := rand.New(rand.NewPCG(uint64(tc.G*1000+tc.D), uint64(tc.L)))
			rnd := func(n int, scale float32) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = scale * (2*r.Float32() - 1)
				}
				return x
			}
			q, keysPM, valuesPM := rnd(tc.G*tc.D, 2), rnd(tc.L*tc.D, 2), rnd(tc.L*tc.D, 1)
			maxLen := tc.L + 3
			scale := float32(1 / math.Sqrt(float64(tc.D)))
			want := attentionDecodeReference(q, keysPM, valuesPM, tc.G, tc.D, tc.L, scale)
			out := make([]float32, tc.G*tc.D)
			scratch := make([]float32, tc.G*tc.L)
			AttentionDecode(out, q, tileKeys(keysPM, tc.D, tc.L), blockValues(valuesPM, tc.D, tc.L, maxLen), tc.G, tc.D, tc.L, maxLen, scale, scratch)
			for i, v := range out {
				if d := math.Abs(float64(v) - want[i]); !(d <= 1e-5+1e-5*math.Abs(want[i])) {
					t.Errorf("%s: out[%d] = %v, want %v", name, i, v, want[i])
					break
				}
			}
		}
	}
}

// TestAttentionDecodePanics checks that bad sizes panic with a message naming the function.
func TestAttentionDecodePanics(t *testing.T) {
	buf := make([]float32, 64)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"L = 0", func() { AttentionDecode(buf, buf, buf, buf, 1, 4, 0, 4, 1, buf) }},
		{"L > maxLen", func() { AttentionDecode(buf, buf, buf, buf, 1, 4, 3, 2, 1, buf) }},
		{"short keys", func() { AttentionDecode(buf, buf, buf[:20], buf, 1, 4, 5, 5, 1, buf) }},
		{"short values", func() { AttentionDecode(buf, buf, buf, buf[:30], 1, 4, 3, 5, 1, buf) }},
		{"short scratch", func() { AttentionDecode(buf, buf, buf, buf, 2, 4, 5, 5, 1, buf[:9]) }},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if len(msg) < 23 || msg[:23] != "tensor.AttentionDecode:" {
					t.Errorf("%s: panic %q, want one starting with tensor.AttentionDecode:", tc.name, msg)
				}
			}()
			tc.call()
		}()
	}
}

// BenchmarkAttentionDecode times one decoding position's attention for a head group of
// bench-s (2 query heads of size 32 per key/value head) at several cache lengths, the cache in
// cache (one group), reporting GFLOP/s of the two products.
func BenchmarkAttentionDecode(b *testing.B) {
	const G, D = 2, 32
	for _, L := range []int{32, 144, 256} {
		r := rand.New(rand.NewPCG(5, uint64(L)))
		x := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = r.Float32()
			}
			return v
		}
		q, keys, values := x(G*D), x((L+KeyTile-1)/KeyTile*D*KeyTile), x(ValueCacheLen(L, D))
		out, scratch := make([]float32, G*D), make([]float32, G*L)
		b.Run(fmt.Sprintf("impl=%s/G=%d/D=%d/L=%d", active.name, G, D, L), func(b *testing.B) {
			for b.Loop() {
				AttentionDecode(out, q, keys, values, G, D, L, L, 0.17, scratch)
			}
			reportGFLOPs(b, 4*float64(G*D*L))
		})
	}
}
