package tensor

import (
	"fmt"
	"math"
	"sync"

	"agentr1/tensor/ref"
)

// KeyTile is the number of positions in one tile of the key-cache layout AttentionDecode reads:
// keys are stored tile by tile, and within a tile dimension by dimension, so that the scores of
// KeyTile consecutive positions are one contiguous (D, KeyTile) block of the cache.
const KeyTile = 32

// KeyCacheIndex returns where key dimension d of position pos sits in a key cache laid out as
// AttentionDecode reads it, (ceil(L/KeyTile), D, KeyTile):
//
//	keys[(pos/KeyTile)*D*KeyTile + d*KeyTile + pos%KeyTile] = key_pos[d]
func KeyCacheIndex(pos, d, D int) int {
	return (pos/KeyTile)*D*KeyTile + d*KeyTile + pos%KeyTile
}

// ValueBlock is the number of dimensions in one block of the value-cache layout AttentionDecode
// reads: values are stored in blocks of ValueBlock dimensions, each block position-major, so
// that the weighted sum of one block streams contiguous memory.
const ValueBlock = 32

// ValueCacheLen returns the floats a value cache of maxLen positions of size D takes,
// ceil(D/ValueBlock) blocks of (maxLen, ValueBlock).
func ValueCacheLen(maxLen, D int) int {
	return (D + ValueBlock - 1) / ValueBlock * maxLen * ValueBlock
}

// ValueCacheIndex returns where value dimension d of position pos sits in a value cache of
// maxLen positions laid out as AttentionDecode reads it, (ceil(D/ValueBlock), maxLen,
// ValueBlock):
//
//	values[(d/ValueBlock)*maxLen*ValueBlock + pos*ValueBlock + d%ValueBlock] = value_pos[d]
func ValueCacheIndex(pos, d, maxLen int) int {
	return (d/ValueBlock)*maxLen*ValueBlock + pos*ValueBlock + d%ValueBlock
}

// AttentionDecode computes the attention output of one decoding position for the G query
// heads that share one key/value head (grouped-query attention), against the L positions of
// a key/value cache (Vaswani et al. 2017, eq. 1; the computation tensor.AttentionForward does
// for the last row of a causal sequence):
//
//	out[h] (D) = sum_{j<L} softmax_j(scale * q[h] . key_j) value_j
//
//	q:       (G, D)
//	keys:    (ceil(L/KeyTile), D, KeyTile), see KeyCacheIndex; positions >= L in the last tile
//	         are never read
//	values:  (ceil(D/ValueBlock), maxLen, ValueBlock), see ValueCacheIndex; maxLen >= L
//	out:     (G, D), overwritten
//	scratch: at least G*L floats, overwritten (the scores, then the unnormalised probabilities)
//
// Both products stream the cache front to back: the scores KeyTile positions at a time from
// the tiles, the weighted sum ValueBlock dimensions at a time from the value blocks, through
// the strip kernels (two heads at a time with strip2x32, four with strip4x16; plain loops for
// kernel sets that have neither).
// The softmax subtracts the row maximum and divides once at the end (exp(s_j - max) / sum).
// It panics if L < 1 or a slice is too short.
func AttentionDecode(out, q, keys, values []float32, G, D, L, maxLen int, scale float32, scratch []float32) {
	if G < 1 || D < 1 || L < 1 || maxLen < L {
		panic(fmt.Sprintf("tensor.AttentionDecode: G=%d D=%d L=%d maxLen=%d, want all >= 1 and L <= maxLen", G, D, L, maxLen))
	}
	tiles := (L + KeyTile - 1) / KeyTile
	lastKey := KeyCacheIndex(L-1, D-1, D) + 1
	lastValue := ValueCacheIndex(L-1, D-1, maxLen) + 1
	if len(q) < G*D || len(out) < G*D || len(keys) < lastKey || len(values) < lastValue || len(scratch) < G*L {
		panic(fmt.Sprintf("tensor.AttentionDecode: G=%d D=%d L=%d: len(q)=%d, len(out)=%d (want %d), len(keys)=%d (want %d), len(values)=%d (want %d), len(scratch)=%d (want %d)",
			G, D, L, len(q), len(out), G*D, len(keys), lastKey, len(values), lastValue, len(scratch), G*L))
	}
	if active.ref {
		attentionDecodeRef(out, q, keys, values, G, D, L, maxLen, scale)
		return
	}
	ks := active
	s := scratch[:G*L] // (G, L)
	// The kernel's operands live in pooled memory: passed through a function value, a local
	// array would escape to the heap on every call.
	sb := stripPool.Get().(*stripBuffers)
	defer stripPool.Put(sb)
	// scores s (G, L) = (scale * q (G, D)) @ keys^T (D, L), up to four heads and KeyTile
	// positions at a time.
	sb.scaled = grow(sb.scaled, 4*D)
	for h0 := 0; h0 < G; h0 += 4 {
		hn := min(4, G-h0)
		for r := range sb.rows {
			qs := sb.scaled[r*D : (r+1)*D]
			for d, v := range q[min(h0+r, G-1)*D:][:D] { // the last head repeated when hn < 4
				qs[d] = scale * v
			}
			sb.rows[r] = qs
		}
		for t := range tiles {
			j0 := t * KeyTile
			cols := min(KeyTile, L-j0)
			sb.strip(ks, D, hn, keys[t*D*KeyTile:], KeyTile, cols)
			for r := range hn {
				copy(s[(h0+r)*L+j0:][:cols], sb.res[r*32:r*32+cols])
			}
		}
	}
	// Unnormalised probabilities e_j = exp(s_j - max) per head, and their sums.
	var inv [4]float32 // 1/sum for the heads of one pass below
	for h0 := 0; h0 < G; h0 += 4 {
		hn := min(4, G-h0)
		for r := range hn {
			row := s[(h0+r)*L:][:L]
			mx := ks.max(row)
			if math.IsInf(float64(mx), -1) { // every score -Inf: zero weights, as SoftmaxForward
				clear(row)
				inv[r] = 0
				continue
			}
			inv[r] = float32(1 / ks.expSum(row, row, 1, mx))
		}
		// out (hn, D) = e (hn, L) @ values (L, D), one block of dimensions at a time, then / sum.
		for r := range sb.rows {
			sb.rows[r] = s[min(h0+r, G-1)*L:][:L]
		}
		for d0 := 0; d0 < D; d0 += ValueBlock {
			cols := min(ValueBlock, D-d0)
			sb.strip(ks, L, hn, values[d0*maxLen:], ValueBlock, cols) // block (L, ValueBlock)
			for r := range hn {
				row := out[(h0+r)*D+d0:][:cols]
				for c := range row {
					row[c] = sb.res[r*32+c] * inv[r]
				}
			}
		}
	}
}

// stripBuffers are the operands of the strip kernels: up to four rows of A, the kernels' own
// output, and the (4, 32) result of stripBuffers.strip.
type stripBuffers struct {
	scaled []float32 // (4, D) scaled queries
	rows   [4][]float32
	out    [64]float32
	res    [128]float32 // (4, 32)
}

var stripPool = sync.Pool{New: func() any { return new(stripBuffers) }}

// strip computes res[r*32+j] = sum_p rows[r][p] * b[p*ldb+j] for the first hn (1-4) rows and
// cols (<= 32) columns, over k: with strip2x32 for up to two rows (a head group of two, as in
// Qwen2.5), else strip4x16 on each half of the columns, else plain loops.
func (sb *stripBuffers) strip(ks *kernels, k, hn int, b []float32, ldb, cols int) {
	if hn <= 2 && ks.strip2x32 != nil {
		ks.strip2x32(k, sb.rows[0][:k], sb.rows[min(1, hn-1)][:k], b, ldb, cols, &sb.out)
		copy(sb.res[:64], sb.out[:])
		return
	}
	for j0 := 0; j0 < cols; j0 += 16 {
		n := min(16, cols-j0)
		if ks.strip4x16 != nil {
			ks.strip4x16(k, &sb.rows, b[j0:], ldb, n, &sb.out)
		} else {
			stripGeneric(k, &sb.rows, b[j0:], ldb, n, &sb.out)
		}
		for r := range hn {
			copy(sb.res[r*32+j0:r*32+j0+n], sb.out[r*16:r*16+n])
		}
	}
}

// stripGeneric is the plain-Go strip4x16: out[i*16+j] = sum_p a[i][p] * b[p*ldb+j] for the four
// rows of a and the first cols (<= 16) columns of b, 0 in the other columns.
func stripGeneric(k int, a *[4][]float32, b []float32, ldb, cols int, out *[64]float32) {
	*out = [64]float32{}
	for i := range a {
		row := a[i][:k]
		acc := out[i*16 : i*16+cols]
		for p, aip := range row {
			brow := b[p*ldb:][:cols]
			for j, v := range brow {
				acc[j] += aip * v
			}
		}
	}
}

// attentionDecodeRef is AttentionDecode on the ref kernel set: the cache's keys and values are
// copied out of their tiled layouts into plain (L, D) rows for ref.AttentionDecode.
func attentionDecodeRef(out, q, keys, values []float32, G, D, L, maxLen int, scale float32) {
	k, v := make([]float32, L*D), make([]float32, L*D) // (L, D) each
	for j := 0; j < L; j++ {
		for d := 0; d < D; d++ {
			k[j*D+d] = keys[KeyCacheIndex(j, d, D)]
			v[j*D+d] = values[ValueCacheIndex(j, d, maxLen)]
		}
	}
	ref.AttentionDecode(out, q, k, v, G, D, L, scale)
}
