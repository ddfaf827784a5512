package model

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"agentr1/tensor"
)

// Decoder runs the model incrementally over a batch of independent rows, keeping each row's
// keys and values (a KV cache) so that every new token costs one pass of the layers instead of
// a pass over the whole sequence. Rows have their own lengths: a row is prefilled with Append
// (a prompt, or a tool observation appended mid-sequence; AppendRows feeds several rows at
// once, a row per core), then grown one token at a time with Step, which batches every
// stepping row through each projection as one matrix product.
// Token positions within a row are 0, 1, 2, ...: the logits equal those of Forward on the
// row's tokens, whatever padding that batch had. A Decoder is not safe for concurrent use.
//
// Weights: each step multiplies a few rows by every weight matrix, so the decoder reads them
// packed for tensor.GemmPacked: a model held for inference (LoadForInference) has them packed
// already; for one that can train (up to decoderPackLimit parameters) the decoder keeps a
// packed copy and repacks it before its next step whenever the weights may have changed: after
// Model.WritableParams (the optimiser's hand-out) or Model.MarkWeightsChanged, and whenever it
// is fed while every row is empty. Code that writes Param.Data directly between steps of a
// live decoder must call MarkWeightsChanged (the KV caches then hold values of the old weights
// too: Reset the rows).
type Decoder struct {
	m      *Model
	rows   int
	maxLen int
	lens   []int       // (rows) tokens in each row's cache
	kLine  int         // floats of one row and key/value head in kCache: tiles*D*KeyTile
	kCache [][]float32 // per layer (rows, Hkv, tiles, D, KeyTile) keys after RoPE, tile by tile (tensor.KeyCacheIndex)
	vLine  int         // floats of one row and key/value head in vCache: tensor.ValueCacheLen(maxLen, D)
	vCache [][]float32 // per layer (rows, Hkv, D/ValueBlock, maxLen, ValueBlock) values in blocks of dimensions (tensor.ValueCacheIndex)
	logits []float32   // (rows, V) each row's latest next-token logits
	out    [][]float32 // (rows) views into logits returned by Step

	// Scratch for up to cap tokens processed together (a prefill chunk or one Step): one set
	// per shard of a Step split across cores (the first also serves Append and unsplit Steps).
	cap     int
	scratch []*decodeScratch

	// appendScratch: one set of prefillChunk tokens for each core beyond the first that
	// AppendRows uses (the first uses scratch[0]).
	appendScratch []*decodeScratch

	packed packedWeights // the weight matrices packed for the decoding products
}

// decodeScratch holds the buffers of one pass of up to cap tokens through the layers, whose
// logits are wanted after up to outRows of them.
type decodeScratch struct {
	x      []float32   // (cap, C) residual stream
	norm   []float32   // (cap, C) RMSNorm output
	rstd   []float32   // (cap)
	q      []float32   // (cap, Hq, D)
	k      []float32   // (cap, Hkv, D)
	v      []float32   // (cap, Hkv, D)
	attn   []float32   // (cap, Hq, D)
	qProj  []float32   // (cap, Hq, D) q_proj output before Qwen3's q_norm (else empty)
	kProj  []float32   // (cap, Hkv, D) k_proj output before Qwen3's k_norm (else empty)
	rstdH  []float32   // (cap, Hq) reciprocal RMS of each head vector, Qwen3 (else empty)
	gate   []float32   // (cap, I)
	up     []float32   // (cap, I)
	act    []float32   // (cap, I)
	rowOf  []int       // (cap) cache row of each token
	pos    []int       // (cap) position of each token in its row
	last   []int       // (outRows) index of a row's last token within the batch, for the lm_head
	hidden []float32   // (outRows, C) final hidden states of the rows whose logits are wanted
	hlog   []float32   // (outRows, V) their logits before scattering into logits
	scores [][]float32 // per attention worker (group*maxLen): scores and probabilities of one query group

	prods [3]tensor.PackedProduct // the products of one Decoder.project call
}

// newDecodeScratch returns the buffers of a pass of up to n tokens of cfg, with logits wanted
// after up to outRows of them.
func newDecodeScratch(cfg Config, n, outRows int) *decodeScratch {
	C, I, V := cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	sc := &decodeScratch{
		x: make([]float32, n*C), norm: make([]float32, n*C), rstd: make([]float32, n),
		q: make([]float32, n*Q), k: make([]float32, n*K), v: make([]float32, n*K),
		attn: make([]float32, n*Q),
		gate: make([]float32, n*I), up: make([]float32, n*I), act: make([]float32, n*I),
		rowOf: make([]int, n), pos: make([]int, n), last: make([]int, 0, outRows),
		hidden: make([]float32, outRows*C), hlog: make([]float32, outRows*V),
	}
	if cfg.QKNorm() {
		sc.qProj, sc.kProj = make([]float32, n*Q), make([]float32, n*K)
		sc.rstdH = make([]float32, n*cfg.NumAttentionHeads)
	}
	return sc
}

// prefillChunk is the largest number of a row's tokens Append processes in one pass.
const prefillChunk = 128

// NewDecoder returns a decoder for rows independent sequences of at most maxLen tokens each.
// It panics if rows < 1, maxLen < 1 or maxLen exceeds max_position_embeddings.
func (m *Model) NewDecoder(rows, maxLen int) *Decoder {
	cfg := m.Config
	if rows < 1 || maxLen < 1 || maxLen > cfg.MaxPositionEmbeddings {
		panic(fmt.Sprintf("model.NewDecoder: rows=%d maxLen=%d (want >= 1, maxLen <= max_position_embeddings %d)", rows, maxLen, cfg.MaxPositionEmbeddings))
	}
	V := cfg.VocabSize
	S := max(rows, prefillChunk)
	tiles := (maxLen + tensor.KeyTile - 1) / tensor.KeyTile
	d := &Decoder{
		kLine: tiles * cfg.HeadSize() * tensor.KeyTile,
		vLine: tensor.ValueCacheLen(maxLen, cfg.HeadSize()),
		m:     m, rows: rows, maxLen: maxLen, cap: S,
		lens:    make([]int, rows),
		kCache:  make([][]float32, cfg.NumHiddenLayers),
		vCache:  make([][]float32, cfg.NumHiddenLayers),
		logits:  make([]float32, rows*V),
		out:     make([][]float32, 0, rows),
		scratch: []*decodeScratch{newDecodeScratch(cfg, S, rows)},
	}
	for l := range d.kCache {
		d.kCache[l] = make([]float32, rows*cfg.NumKeyValueHeads*d.kLine)
		d.vCache[l] = make([]float32, rows*cfg.NumKeyValueHeads*d.vLine)
	}
	return d
}

// Rows returns the number of rows of the decoder.
func (d *Decoder) Rows() int { return d.rows }

// MaxLen returns the capacity of each row in tokens.
func (d *Decoder) MaxLen() int { return d.maxLen }

// Len returns the number of tokens in row's cache.
func (d *Decoder) Len(row int) int { return d.lens[row] }

// Reset empties row's cache.
func (d *Decoder) Reset(row int) { d.lens[row] = 0 }

// CopyRow makes row dst a copy of row src (cache and latest logits), so that several samples
// can share one prefilled prompt (GRPO's group of responses).
func (d *Decoder) CopyRow(dst, src int) {
	if dst == src {
		return
	}
	cfg := d.m.Config
	D, Hkv, V := cfg.HeadSize(), cfg.NumKeyValueHeads, cfg.VocabSize
	n := d.lens[src]
	keys := (n + tensor.KeyTile - 1) / tensor.KeyTile * D * tensor.KeyTile // floats of n keys' tiles
	for l := range d.kCache {
		for g := range Hkv {
			from, to := (src*Hkv+g)*d.kLine, (dst*Hkv+g)*d.kLine
			copy(d.kCache[l][to:to+keys], d.kCache[l][from:from+keys])
			for b := 0; b < D; b += tensor.ValueBlock { // the first n positions of every block
				from = (src*Hkv+g)*d.vLine + tensor.ValueCacheIndex(0, b, d.maxLen)
				to = (dst*Hkv+g)*d.vLine + tensor.ValueCacheIndex(0, b, d.maxLen)
				copy(d.vCache[l][to:to+n*tensor.ValueBlock], d.vCache[l][from:from+n*tensor.ValueBlock])
			}
		}
	}
	copy(d.logits[dst*V:(dst+1)*V], d.logits[src*V:(src+1)*V])
	d.lens[dst] = d.lens[src]
}

// Append feeds tokens to the end of row (a prompt, or a tool observation in the middle of a
// rollout) and returns the next-token logits (V) after the last of them: a view into the
// decoder valid until the row is next fed. With no tokens it returns the row's latest logits
// (nil for an empty row). It panics if the row would exceed MaxLen or a token is outside the
// vocabulary.
func (d *Decoder) Append(row int, tokens []int) []float32 {
	d.checkRow("Append", row, len(tokens))
	if len(tokens) > 0 {
		d.refreshWeights()
		d.prefill(d.scratch[0], row, tokens)
	}
	return d.latest(row)
}

// AppendRows feeds feeds[i] to the end of row rows[i] for every i, as Append does for each
// row in turn, and returns each row's next-token logits (as Append; the outer slice is reused
// by the next AppendRows or Step). It panics as Append does, and if the lists differ in length or a row is
// listed twice.
//
// On two or more workers the rows are spread over the cores, each core taking the next row
// when it is done with one and running it through the layers with single-threaded kernels (a
// core left without rows lends itself to the kernels of the rows still running, as in
// tensor.Shards): a rollout appends its observations a few hundred tokens at a time, too few
// for one row's products to keep two cores busy. Each row's cache and logits are bit for bit
// what Append writes, since every product and attention sum adds its terms in the same order
// whatever the number of threads.
func (d *Decoder) AppendRows(rows []int, feeds [][]int) [][]float32 {
	if len(rows) != len(feeds) {
		panic(fmt.Sprintf("model.Decoder.AppendRows: %d rows and %d feeds", len(rows), len(feeds)))
	}
	for i, r := range rows {
		d.checkRow("AppendRows", r, len(feeds[i]))
		if slices.Contains(rows[:i], r) {
			panic(fmt.Sprintf("model.Decoder.AppendRows: row %d listed twice", r))
		}
	}
	S := min(tensor.Workers(), len(rows))
	for len(d.appendScratch) < S-1 {
		d.appendScratch = append(d.appendScratch, newDecodeScratch(d.m.Config, prefillChunk, 1))
	}
	d.refreshWeights()
	var next atomic.Int64 // the next row to take: a core that is done takes the next one
	tensor.Shards(S, func(s int) {
		sc := d.scratch[0]
		if s > 0 {
			sc = d.appendScratch[s-1]
		}
		for i := int(next.Add(1)) - 1; i < len(rows); i = int(next.Add(1)) - 1 {
			d.prefill(sc, rows[i], feeds[i]) // nothing to do for an empty feed
		}
	})
	d.out = d.out[:0]
	for _, r := range rows {
		d.out = append(d.out, d.latest(r))
	}
	return d.out
}

// prefill runs tokens through the layers at the end of row, prefillChunk tokens at a time,
// with the buffers of sc (whose capacity is at least prefillChunk tokens). The packed weights
// must be current (refreshWeights).
func (d *Decoder) prefill(sc *decodeScratch, row int, tokens []int) {
	for lo := 0; lo < len(tokens); lo += prefillChunk {
		hi := min(lo+prefillChunk, len(tokens))
		n := hi - lo
		for i := range n {
			sc.rowOf[i] = row
			sc.pos[i] = d.lens[row] + i
		}
		sc.last = append(sc.last[:0], n-1)
		d.forward(sc, tokens[lo:hi])
		d.lens[row] += n
	}
}

// latest returns row's latest next-token logits (V), nil for an empty row.
func (d *Decoder) latest(row int) []float32 {
	if d.lens[row] == 0 {
		return nil
	}
	V := d.m.Config.VocabSize
	return d.logits[row*V : (row+1)*V]
}

// decodeShardMinRows is the fewest rows a Step splits into shards (see
// Decoder.Step), so that a shard's products still fill a 6-row register tile. Measured on two
// cores (BENCHMARKS.md): greedy decoding of 16 rows 1.25x faster cut into two shards of 8 than
// with each product split across the cores, a 40-row rollout 1.2x; 8 rows no different.
const decodeShardMinRows = 12

// Step feeds one token to each listed row (tokens[i] to rows[i]), all rows through each layer
// together, and returns each row's next-token logits (V), views into the decoder valid until
// that row is next fed (the outer slice itself is reused by the next Step or AppendRows). It
// panics if the lists differ in length, a row is listed twice or is full, or a token is outside
// the vocabulary.
//
// A Step of at least decodeShardMinRows rows is cut into Shards() groups of consecutive rows,
// run at once (tensor.Shards) with single-threaded kernels, as Model.Forward cuts a batch
// (shard.go): each row's logits are what one pass of all rows gives, up to float32 rounding,
// and the same bits for a given shard count on any number of workers.
func (d *Decoder) Step(rows []int, tokens []int) [][]float32 {
	if len(rows) != len(tokens) {
		panic(fmt.Sprintf("model.Decoder.Step: %d rows and %d tokens", len(rows), len(tokens)))
	}
	V := d.m.Config.VocabSize
	for i, r := range rows {
		d.checkRow("Step", r, 1)
		for _, prev := range rows[:i] {
			if prev == r {
				panic(fmt.Sprintf("model.Decoder.Step: row %d listed twice", r))
			}
		}
		if id := tokens[i]; id < 0 || id >= V {
			panic(fmt.Sprintf("model.Decoder: token %d at %d outside the vocabulary [0, %d)", id, i, V))
		}
	}
	n := len(rows)
	S := 1
	if n >= decodeShardMinRows {
		S = min(shards, n)
	}
	for len(d.scratch) < S {
		d.scratch = append(d.scratch, newDecodeScratch(d.m.Config, (d.rows+1)/2+1, (d.rows+1)/2+1))
	}
	if n > 0 {
		d.refreshWeights()
		tensor.Shards(S, func(s int) {
			lo, hi := s*n/S, (s+1)*n/S
			sc := d.scratch[s]
			sc.last = sc.last[:0]
			for i, r := range rows[lo:hi] {
				sc.rowOf[i] = r
				sc.pos[i] = d.lens[r]
				sc.last = append(sc.last, i)
			}
			d.forward(sc, tokens[lo:hi])
		})
	}
	d.out = d.out[:0]
	for _, r := range rows {
		d.lens[r]++
		d.out = append(d.out, d.logits[r*V:(r+1)*V])
	}
	return d.out
}

func (d *Decoder) checkRow(fn string, row, n int) {
	if row < 0 || row >= d.rows {
		panic(fmt.Sprintf("model.Decoder.%s: row %d outside [0, %d)", fn, row, d.rows))
	}
	if d.lens[row]+n > d.maxLen {
		panic(fmt.Sprintf("model.Decoder.%s: row %d holds %d tokens, %d more exceed MaxLen %d", fn, row, d.lens[row], n, d.maxLen))
	}
}

// forward runs n = len(tokens) tokens through the model with the buffers of sc, token i
// belonging to cache row sc.rowOf[i] at position sc.pos[i] (a row's tokens in order), appends
// their keys and values to the caches, and writes the logits after each token listed in
// sc.last into its row's slot. The packed weights must be current (refreshWeights).
//
// Each layer here is layerForward (layer.go) over n rows of new tokens, attending to the
// cache instead of the batch: the sampled log-probs it leads to are the old log-probs of most
// RL steps, so TestDecoderMatchesForward holds it to Forward token by token.
func (d *Decoder) forward(sc *decodeScratch, tokens []int) {
	m, cfg := d.m, d.m.Config
	n := len(tokens)
	C, I, D, V := cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadSize(), cfg.VocabSize
	Hq, Hkv := cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	Q, K := Hq*D, Hkv*D
	eps := float32(cfg.RMSNormEps)
	for i, id := range tokens {
		if id < 0 || id >= V {
			panic(fmt.Sprintf("model.Decoder: token %d at %d outside the vocabulary [0, %d)", id, i, V))
		}
	}
	x, norm, rstd := sc.x[:n*C], sc.norm[:n*C], sc.rstd[:n]
	q, k, v, attn := sc.q[:n*Q], sc.k[:n*K], sc.v[:n*K], sc.attn[:n*Q]
	gate, up, act := sc.gate[:n*I], sc.up[:n*I], sc.act[:n*I]
	pos := sc.pos[:n]
	qProj, kProj := q, k // the projections are q and k themselves, unless Qwen3's norms follow
	if cfg.QKNorm() {
		qProj, kProj = sc.qProj[:n*Q], sc.kProj[:n*K]
	}
	var none packedLayer     // the layers' stand-in when nothing is packed
	m.embedTokens(x, tokens) // x (n, C) = embed_tokens[tokens]
	for l := range m.layers {
		p, pl := &m.layers[l], &none
		if d.packed.valid {
			pl = &d.packed.layers[l]
		}
		tensor.RMSNormForward(norm, rstd, x, p.inputNorm.Data, n, C, eps)
		d.project(sc, norm, n, C,
			projection{y: qProj, w: p.q.Data, bias: data(p.qBias), packed: pl.q, out: Q},
			projection{y: kProj, w: p.k.Data, bias: data(p.kBias), packed: pl.k, out: K},
			projection{y: v, w: p.v.Data, bias: data(p.vBias), packed: pl.v, out: K})
		if p.qNorm != nil { // Qwen3: an RMSNorm over each head vector, as layerForward
			tensor.RMSNormForward(q, sc.rstdH[:n*Hq], qProj, p.qNorm.Data, n*Hq, D, eps)
			tensor.RMSNormForward(k, sc.rstdH[:n*Hkv], kProj, p.kNorm.Data, n*Hkv, D, eps)
		}
		m.rope.Forward(q, pos, n, Hq)
		m.rope.Forward(k, pos, n, Hkv)
		kc, vc := d.kCache[l], d.vCache[l]
		for i := range n {
			for g := range Hkv {
				// Key dimension dd of this position sits KeyTile apart from dd-1; value
				// dimensions run in blocks of ValueBlock, maxLen*ValueBlock apart.
				at := (sc.rowOf[i]*Hkv+g)*d.kLine + tensor.KeyCacheIndex(pos[i], 0, D)
				for dd, x := range k[i*K+g*D : i*K+(g+1)*D] {
					kc[at+dd*tensor.KeyTile] = x
				}
				at = (sc.rowOf[i]*Hkv+g)*d.vLine + tensor.ValueCacheIndex(pos[i], 0, d.maxLen)
				for b0 := 0; b0 < D; b0 += tensor.ValueBlock {
					copy(vc[at+b0*d.maxLen:][:min(tensor.ValueBlock, D-b0)], v[i*K+g*D+b0:i*K+g*D+min(b0+tensor.ValueBlock, D)])
				}
			}
		}
		d.attention(sc, attn, q, d.kCache[l], d.vCache[l], n)
		d.accumulate(x, attn, n, Q, p.o.Data, pl.o) // x += attn (n, Q) @ o_proj (C, Q)^T
		tensor.RMSNormForward(norm, rstd, x, p.postNorm.Data, n, C, eps)
		d.project(sc, norm, n, C,
			projection{y: gate, w: p.gate.Data, packed: pl.gate, out: I},
			projection{y: up, w: p.up.Data, packed: pl.up, out: I})
		tensor.SwiGLUForward(act, gate, up)
		d.accumulate(x, act, n, I, p.down.Data, pl.down) // x += act (n, I) @ down_proj (C, I)^T
	}
	r := len(sc.last)
	hidden, hlog := sc.hidden[:r*C], sc.hlog[:r*V]
	for j, i := range sc.last {
		copy(hidden[j*C:(j+1)*C], x[i*C:(i+1)*C])
	}
	final := norm[:r*C] // (r, C)
	tensor.RMSNormForward(final, rstd[:r], hidden, m.norm.Data, r, C, eps)
	d.project(sc, final, r, C, projection{y: hlog, w: m.lmHead.Data, packed: d.packed.lmHead, out: V})
	for j, i := range sc.last {
		row := sc.rowOf[i]
		copy(d.logits[row*V:(row+1)*V], hlog[j*V:(j+1)*V])
	}
}

// projection is one matrix product of a decoding step, y (n, out) = x (n, in) @ w (out, in)^T +
// bias (bias may be nil), with packed the decoder's packed copy of w.
type projection struct {
	y, w, bias []float32
	packed     *tensor.PackedB
	out        int
}

// project computes projections of the same input x (n, in) (at most three): with the weights
// packed, as one tensor.GemmPackedMulti, a single parallel region; otherwise one
// tensor.LinearForward each.
func (d *Decoder) project(sc *decodeScratch, x []float32, n, in int, ps ...projection) {
	if !d.packed.valid {
		for _, p := range ps {
			tensor.LinearForward(p.y, x, p.w, p.bias, n, in, p.out)
		}
		return
	}
	prods := sc.prods[:len(ps)]
	for i, p := range ps {
		prods[i] = tensor.PackedProduct{B: p.packed, C: p.y, Ldc: p.out}
	}
	tensor.GemmPackedMulti(false, n, 1, x, in, prods)
	for _, p := range ps {
		if p.bias != nil {
			addBias(p.y, p.bias, n)
		}
	}
}

// accumulate adds to the residual stream x (n, C) the product y (n, in) @ w (C, in)^T, through
// packed, w's packed copy, when the weights are packed.
func (d *Decoder) accumulate(x, y []float32, n, in int, w []float32, packed *tensor.PackedB) {
	C := d.m.Config.HiddenSize
	if d.packed.valid {
		tensor.GemmPacked(false, n, 1, y, in, packed, 1, x, C)
		return
	}
	tensor.Gemm(false, true, n, C, in, 1, y, in, w, in, 1, x, C)
}

// addBias adds bias (out) to each of the rows of y (rows, out).
func addBias(y, bias []float32, rows int) {
	out := len(bias)
	for i := range rows {
		row := y[i*out : (i+1)*out]
		for j, b := range bias {
			row[j] += b
		}
	}
}

// attention computes causal grouped-query attention for the n tokens of the current batch
// against their rows' caches (Vaswani et al. 2017, eq. 1, as tensor.AttentionForward computes
// it for a whole sequence): for token i in row r at position P and query head h with
// key/value head g = h / (Hq/Hkv),
//
//	out[i,h] = sum_{j<=P} softmax_j(q[i,h] . K[r,g,j] / sqrt(D)) V[r,g,j]
//
// One task is a token and a key/value head: the group of query heads sharing it go through
// tensor.AttentionDecode against the cache. Tasks are split evenly over the workers, each with
// its own scores buffer.
func (d *Decoder) attention(sc *decodeScratch, out, q, kCache, vCache []float32, n int) {
	cfg := d.m.Config
	D, Hq, Hkv := cfg.HeadSize(), cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	group := Hq / Hkv
	M := d.maxLen
	scale := float32(1 / math.Sqrt(float64(D)))
	tasks := n * Hkv
	// A task costs about 4*group*(P+1)*D flops; give each worker at least ~64K of them.
	work := tasks * 4 * group * (sc.pos[n-1] + 1) * D
	W := max(1, min(tensor.Available(), tasks, work/(1<<16)))
	for len(sc.scores) < W {
		sc.scores = append(sc.scores, make([]float32, group*M))
	}
	tensor.Parallel(W, 1, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			scores := sc.scores[w]
			for task := w * tasks / W; task < (w+1)*tasks/W; task++ {
				i, g := task/Hkv, task%Hkv
				line := sc.rowOf[i]*Hkv + g                        // cache[r, g]
				qg := q[(i*Hq+g*group)*D : (i*Hq+(g+1)*group)*D]   // (group, D)
				og := out[(i*Hq+g*group)*D : (i*Hq+(g+1)*group)*D] // (group, D)
				tensor.AttentionDecode(og, qg, kCache[line*d.kLine:(line+1)*d.kLine], vCache[line*d.vLine:(line+1)*d.vLine],
					group, D, sc.pos[i]+1, M, scale, scores)
			}
		}
	})
}
