package model

import "agentr1/tensor"

// Data parallelism over the rows of a batch.
//
// Model.Forward and Critic.Forward cut a batch of B >= 2 rows into S = min(Workspace.Shards or
// Shards(), B) shards of consecutive rows and run the shards at once, one goroutine each
// (tensor.Shards), every kernel inside them single-threaded while every worker runs a shard;
// the matching Backward does the same. Splitting each kernel across the cores instead pays a
// hand-off and a wait per product, dozens per layer, and the small products of a small model
// split badly: on the two-core machine of BENCHMARKS.md an SFT step took 1.36x less time on two
// cores than on one that way, and 1.5-1.9x less time with shards (model and bench benchmarks).
//
// The shard count is a setting of its own (SetShards), not the number of workers, because it
// decides the bits of a run: a gradient is a sum over rows taken in S parts, and S parts round
// differently from S+1. With the count fixed, the workers only decide how fast the shards run
// (fewer workers than shards take them in turns; more lend their cores to the shards' kernels,
// tensor.Available), so one machine writes the same run as another whatever its cores.
//
// Each shard has its own Workspace. Shard 0 runs the model itself; shard s > 0 runs a view of
// it (gradView) whose parameters share the model's values and accumulate their gradients in
// the shard's own buffer, which Backward adds into Param.Grad, shard 1 first, and clears. A
// row's log-probability, entropy or value is the whole-batch pass's up to float32 rounding
// (bit for bit where a product of fewer rows takes the same kernel path), and the gradient is
// the same sum taken in S parts; both are the same from run to run for a given shard count.
//
// The shards' gradient buffers are S-1 more copies of the gradient, allocated at the first
// Backward (a forward-only user, such as a frozen reference policy, never pays for them).
// The rule: a model of at most shardGradLimit parameters takes them, since they are small
// beside its activations; a larger model's Backward instead runs the shards one after
// another, each with every core inside its kernels (which split well at that size), each
// adding straight into Param.Grad, so that training holds one gradient whatever the cores.

// DefaultShards is the shard count unless SetShards changes it: two, the cores of the machines
// every documented run was made on, so that those runs are written again bit for bit anywhere.
const DefaultShards = 2

// shards is the shard count of every pass whose Workspace does not set its own (SetShards).
var shards = DefaultShards

// Shards returns how many groups of rows a batch is cut into (SetShards).
func Shards() int { return shards }

// SetShards sets how many groups of rows Model.Forward, Critic.Forward and Decoder.Step cut a
// batch into (at least 1; 1 never cuts) when a Workspace does not set its own, and returns the
// previous value. It is part of what a training run is, as its seed is: the same count writes
// the same bits on any number of workers. It is not safe to call while passes run.
func SetShards(n int) int {
	old := shards
	shards = max(n, 1)
	return old
}

// shardGradLimit is the largest model, in parameters, whose Backward runs its shards at once,
// each accumulating into its own gradient buffer: 2^26 floats, 256 MiB per extra shard.
var shardGradLimit = 1 << 26

// forwardInShards runs m.forward over the batch on ws: whole when ws does not split it (split),
// else on each shard at once, gathering the shards' log-probs and entropies (B, T).
func (m *Model) forwardInShards(ws *Workspace, tokens []int, attentionMask []float32, B, T int) (logp, entropy []float32) {
	if !ws.split(m, nil, B, T) {
		return m.forward(ws, tokens, attentionMask, B, T)
	}
	h := &ws.head
	h.logp = grow(h.logp, B*T)
	h.entropy = grow(h.entropy, B*T)
	tensor.Shards(len(ws.shards), func(s int) {
		sh := &ws.shards[s]
		logp, entropy := sh.m.forward(sh.ws, sh.tokens(tokens, T), sh.rows(attentionMask, T), sh.hi-sh.lo, T)
		copy(sh.rows(h.logp, T), logp)
		copy(sh.rows(h.entropy, T), entropy)
	})
	ws.owner, ws.pass = m, passLogp
	return h.logp, h.entropy
}

// backwardInShards runs m.backward for the last forwardInShards on ws: whole, or on each shard
// at once, adding the shards' gradients into Param.Grad in shard order.
func (m *Model) backwardInShards(ws *Workspace, dlogp, dentropy []float32) {
	if !ws.sharded {
		m.backward(ws, dlogp, dentropy)
		return
	}
	if gradsOneByOne(m.Params) {
		for s := range ws.shards {
			sh := &ws.shards[s]
			m.backward(sh.ws, sh.rows(dlogp, ws.T), sh.rows(dentropy, ws.T))
		}
		return
	}
	ws.shardGrads(m.Params)
	tensor.Shards(len(ws.shards), func(s int) {
		sh := &ws.shards[s]
		sh.m.backward(sh.ws, sh.rows(dlogp, ws.T), sh.rows(dentropy, ws.T))
	})
	ws.mergeGrads(m.Params)
}

// forwardInShards runs c.forward over the batch on ws, whole or in shards, gathering the
// values (B, T).
func (c *Critic) forwardInShards(ws *Workspace, tokens []int, attentionMask []float32, B, T int) []float32 {
	if !ws.split(c.Model, c, B, T) {
		return c.forward(ws, tokens, attentionMask, B, T)
	}
	ws.values = grow(ws.values, B*T)
	tensor.Shards(len(ws.shards), func(s int) {
		sh := &ws.shards[s]
		copy(sh.rows(ws.values, T), sh.c.forward(sh.ws, sh.tokens(tokens, T), sh.rows(attentionMask, T), sh.hi-sh.lo, T))
	})
	ws.owner, ws.pass = c, passValues
	return ws.values
}

// backwardInShards runs c.backward for the last forwardInShards on ws, whole or in shards.
func (c *Critic) backwardInShards(ws *Workspace, dvalues []float32) {
	if !ws.sharded {
		c.backward(ws, dvalues)
		return
	}
	if gradsOneByOne(c.Params) {
		for s := range ws.shards {
			sh := &ws.shards[s]
			c.backward(sh.ws, sh.rows(dvalues, ws.T))
		}
		return
	}
	ws.shardGrads(c.Params)
	tensor.Shards(len(ws.shards), func(s int) {
		sh := &ws.shards[s]
		sh.c.backward(sh.ws, sh.rows(dvalues, ws.T))
	})
	ws.mergeGrads(c.Params)
}

// shard is one group of consecutive rows of a split batch.
type shard struct {
	lo, hi int               // rows [lo, hi) of the batch
	ws     *Workspace        // the shard's activations
	m      *Model            // the model (shard 0) or a view of it accumulating into grad
	c      *Critic           // likewise for a critic's pass (nil otherwise)
	view   map[*Param]*Param // the view's parameter for each of the pass's (shard > 0)
	grad   []float32         // the view's gradient buffer (shard > 0, from the first Backward), zero between passes
}

// split prepares ws to run a (B, T) batch in shards and reports whether it will: not for a
// single row or a shard count of 1. (A shard's own workspace never splits: the shards run
// forward and backward, which never call split.) The pass is m's, or with c not nil the
// critic c's (whose trunk is m). Shards get about equal numbers of rows, the later ones one
// more when S does not divide B.
func (ws *Workspace) split(m *Model, c *Critic, B, T int) bool {
	ws.sharded = false
	S := ws.Shards
	if S <= 0 {
		S = shards
	}
	S = min(S, B)
	if S < 2 {
		return false
	}
	params := m.Params
	if c != nil {
		params = c.Params
	}
	for len(ws.shards) < S {
		ws.shards = append(ws.shards, shard{ws: new(Workspace)})
	}
	ws.shards = ws.shards[:S]
	for s := range ws.shards {
		sh := &ws.shards[s]
		sh.lo, sh.hi = s*B/S, (s+1)*B/S
		rows := sh.hi - sh.lo
		// The shard's share of the caps on what a pass keeps, so that the split batch keeps
		// what the whole one would have.
		sh.ws.MaxKeptProbs = max(1, keptCap(ws.MaxKeptProbs, 1<<26)*rows/B)
		sh.ws.MaxKeptAttention = max(1, keptCap(ws.MaxKeptAttention, 1<<22)*rows/B)
		sh.ws.Temperature = ws.Temperature
		if s == 0 {
			sh.m, sh.c = m, c
			continue
		}
		view := gradView(params)
		sh.m, sh.c, sh.view = m.withParams(view), nil, view
		if c != nil {
			sh.c = &Critic{Model: sh.m, ScoreW: view[c.ScoreW], ScoreBias: view[c.ScoreBias]}
			sh.c.collectParams()
		}
	}
	ws.owner, ws.pass = nil, passNone
	ws.B, ws.T = B, T
	ws.sharded = true
	return true
}

// keptCap returns a workspace cap on kept floats, or def when it is unset.
func keptCap(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// rows returns the part of x (B*T; nil stays nil) that holds the shard's rows.
func (sh *shard) rows(x []float32, T int) []float32 {
	if x == nil {
		return nil
	}
	return x[sh.lo*T : sh.hi*T]
}

// tokens returns the part of tokens (B*T) that holds the shard's rows.
func (sh *shard) tokens(tokens []int, T int) []int { return tokens[sh.lo*T : sh.hi*T] }

// gradsOneByOne reports whether Backward runs the shards of a split pass over params one after
// another, straight into their Param.Grad: for models above shardGradLimit (see the top of
// this file).
func gradsOneByOne(params []*Param) bool {
	n := 0
	for _, p := range params {
		n += len(p.Data)
	}
	return n > shardGradLimit
}

// shardGrads gives the views of shards s > 0 their gradient buffers, zero, allocated on the
// first Backward of a split pass and kept (a forward-only user never holds one).
func (ws *Workspace) shardGrads(params []*Param) {
	n := 0
	for _, p := range params {
		n += len(p.Data)
	}
	for s := 1; s < len(ws.shards); s++ {
		sh := &ws.shards[s]
		if len(sh.grad) != n {
			sh.grad = make([]float32, n)
		}
		off := 0
		for _, p := range params {
			k := len(p.Data)
			sh.view[p].Grad = sh.grad[off : off+k : off+k]
			off += k
		}
	}
}

// mergeGrads adds the gradients the shards' views accumulated into params, in shard order,
// and clears the views' buffers.
func (ws *Workspace) mergeGrads(params []*Param) {
	for s := 1; s < len(ws.shards); s++ {
		sh := &ws.shards[s]
		off := 0
		for _, p := range params {
			n := len(p.Grad)
			tensor.Axpy(1, sh.grad[off:off+n], p.Grad)
			off += n
		}
		clear(sh.grad)
	}
}

// gradView returns, for each of params, a parameter with the same name, shape and values and
// no gradient yet (shardGrads gives it one): a copy of a model that reads the same weights and
// accumulates its gradients apart.
func gradView(params []*Param) map[*Param]*Param {
	view := make(map[*Param]*Param, len(params))
	for _, p := range params {
		view[p] = &Param{Name: p.Name, Shape: p.Shape, Data: p.Data, Packed: p.Packed}
	}
	return view
}

// withParams returns a Model of m's configuration whose parameters are view[p] for each p of
// m (a tied lm_head stays the embedding), sharing m's rotary table. Parameters missing from
// view (an untied lm_head of a critic's trunk, which it never uses) are m's own.
func (m *Model) withParams(view map[*Param]*Param) *Model {
	get := func(p *Param) *Param {
		if p == nil {
			return nil // a parameter the architecture does not have
		}
		if q, ok := view[p]; ok {
			return q
		}
		return p
	}
	v := &Model{Config: m.Config, embed: get(m.embed), norm: get(m.norm), lmHead: get(m.lmHead), rope: m.rope}
	for _, p := range m.Params {
		v.Params = append(v.Params, get(p))
	}
	v.layers = make([]layerParams, len(m.layers))
	for l, p := range m.layers {
		v.layers[l] = layerParams{
			inputNorm: get(p.inputNorm), q: get(p.q), qBias: get(p.qBias), k: get(p.k), kBias: get(p.kBias),
			v: get(p.v), vBias: get(p.vBias), qNorm: get(p.qNorm), kNorm: get(p.kNorm), o: get(p.o), postNorm: get(p.postNorm),
			gate: get(p.gate), up: get(p.up), down: get(p.down),
		}
	}
	return v
}
