package model

// Workspace holds the activations a forward pass saves for its backward pass, and the scratch
// buffers of the backward pass, for one batch shape (B, T). Buffers grow when a larger batch
// arrives and are reused otherwise, so a training step allocates nothing large after the
// first. The zero value is ready to use. A Workspace serves one model at a time (a policy and
// its critic each need their own), and the slices Forward returns are views into it, valid
// until the next Forward on the same Workspace.
//
// Memory: until a Backward has run on it, a workspace is lean: Forward keeps one layer's
// activations, reused layer after layer, which is all a forward-only model (a reference policy,
// log-probs of a rollout) ever needs. The first Backward finds the layers' activations missing,
// runs the forward pass again keeping every layer's (bit for bit the same values, so nothing
// the caller saw changes), and from then on the workspace keeps them in every Forward.
// Per layer it keeps q, k, v, the attention output, both residual streams and the MLP's gate and
// up projections; the attention weights (B*Hq*T*T per layer) only while they fit
// MaxKeptAttention, otherwise two statistics per query row from which backward recomputes them
// (tensor.AttentionForwardStats); the RMSNorm outputs and the SwiGLU product are recomputed in
// backward into buffers shared by all layers.
//
// Shapes use N = B*T rows, C = hidden size, Q = Hq*D, K = Hkv*D, I = intermediate size,
// V = vocabulary size.
type Workspace struct {
	// MaxKeptProbs bounds how many float32 next-token probabilities Forward may keep for
	// Backward (rows x V). Above it Backward recomputes them chunk by chunk from the final
	// hidden states, at the cost of a second lm_head matrix product. 0 means 1<<26 (256 MB).
	MaxKeptProbs int

	// MaxKeptAttention bounds the attention weights (B*Hq*T*T floats per layer) Forward may
	// keep for Backward in a workspace that keeps its activations. Above it only two
	// statistics per query row are kept and Backward recomputes the weights block by block
	// (tensor.AttentionForwardStats), bit for bit the same, at the cost of the scores
	// products again. 0 means 1<<22 (16 MB per layer).
	MaxKeptAttention int

	// Temperature divides the logits before Model.Forward takes their log-probabilities and
	// entropies, so that a policy sampled at temperature τ is scored by the distribution it
	// was sampled from, softmax(logits/τ), as verl's dp_actor (_forward_micro_batch,
	// logits.div_(temperature)) scores rollouts; Backward differentiates through the
	// division. 0 and 1 both mean no division. ForwardLogits ignores it.
	Temperature float32

	// Shards caps how many groups of rows a batch is cut into, each run on its own goroutine
	// (data parallelism, shard.go): 0 means the package's count (SetShards), 1 never cuts.
	Shards int

	cfg           Config // configuration the buffers were sized for
	owner         any    // the *Model or *Critic whose forward pass the buffers hold
	pass          pass   // which forward pass they hold
	B, T          int    // shape of the last forward pass
	capN          int    // rows the per-row buffers hold
	keep          bool   // Forward keeps every layer's activations (set by the first Backward)
	kept          bool   // the last forward pass kept them
	keptAttention bool   // the last forward pass kept the attention weights (layerActs.attnWeights)

	tokens    []int     // (N) input ids of the last forward
	mask      []float32 // (N) attention mask, 1 = real token, 0 = left padding
	positions []int     // (N) rotary positions: cumsum(mask)-1, 0 on padding

	embedded []float32   // (N, C) token embeddings, the residual stream entering layer 0
	layers   []layerActs // per layer when keep, else one slot every layer reuses
	norm     []float32   // (N, C) an RMSNorm output, shared by all layers (recomputed in backward)
	act      []float32   // (min(N, mlpChunk), I) silu(gate) * up of one chunk of rows, shared by all layers
	final    []float32   // (N, C) model.norm output: the final hidden states
	finalR   []float32   // (N) model.norm reciprocal RMS

	head headWork // the fused lm_head / log-prob / entropy pass (head.go)

	logits []float32 // (N, V) ForwardLogits output
	values []float32 // (N) Critic.Forward output

	// Backward scratch, shared by all layers.
	dres   []float32 // (N, C) d(loss)/d(residual stream) at the current layer boundary
	dnorm  []float32 // (N, C) d(loss)/d(RMSNorm output)
	dq     []float32 // (N, Q)
	dk     []float32 // (N, K)
	dv     []float32 // (N, K)
	dattn  []float32 // (N, Q) d(loss)/d(attention output)
	dqProj []float32 // (N, Q) d(loss)/d(q_proj output), Qwen3's q_norm between (else empty)
	dkProj []float32 // (N, K) d(loss)/d(k_proj output), Qwen3's k_norm between (else empty)
	dgate  []float32 // (min(N, mlpChunk), I), one chunk of rows of the MLP's backward pass
	dup    []float32 // (min(N, mlpChunk), I)
	dact   []float32 // (min(N, mlpChunk), I)
	dfinal []float32 // (N, C) d(loss)/d(final hidden states)

	shards  []shard // the groups of rows of a split batch, each with its own workspace
	sharded bool    // the last forward pass ran in shards (its activations are theirs)
}

// pass names the forward pass a workspace holds, so a backward pass can check it.
type pass int

const (
	passNone   pass = iota
	passLogp        // Model.Forward
	passLogits      // Model.ForwardLogits
	passValues      // Critic.Forward
)

// layerActs are the activations one decoder layer saves for its backward pass.
type layerActs struct {
	rstd1       []float32 // (N) input_layernorm reciprocal RMS
	qProj       []float32 // (N, Hq, D) q_proj output; q itself unless Qwen3's q_norm follows
	kProj       []float32 // (N, Hkv, D) k_proj output; k itself unless Qwen3's k_norm follows
	qRstd       []float32 // (N, Hq) q_norm reciprocal RMS of each head vector (Qwen3, else empty)
	kRstd       []float32 // (N, Hkv) k_norm reciprocal RMS of each head vector (Qwen3, else empty)
	q           []float32 // (N, Hq, D) queries after RoPE
	k           []float32 // (N, Hkv, D) keys after RoPE
	v           []float32 // (N, Hkv, D) values
	stats       []float32 // (B, Hq, T, 2) attention softmax statistics (tensor.AttentionForwardStats)
	attnWeights []float32 // (B, Hq, T, T) when they fit MaxKeptAttention, else empty
	attn        []float32 // (N, Hq, D) attention output, before o_proj
	resid1      []float32 // (N, C) residual stream after attention
	rstd2       []float32 // (N) post_attention_layernorm reciprocal RMS
	gate        []float32 // (N, I) gate_proj output
	up          []float32 // (N, I) up_proj output
	resid2      []float32 // (N, C) residual stream leaving the layer
}

// NewWorkspace returns an empty workspace (equivalent to new(Workspace)).
func NewWorkspace() *Workspace { return new(Workspace) }

// grow returns s with length n, reallocating only when its capacity is too small.
func grow[S ~[]E, E any](s S, n int) S {
	if cap(s) < n {
		return make(S, n)
	}
	return s[:n]
}

// prepare sizes the workspace for a forward pass of cfg over a (B, T) batch, reallocating only
// buffers that are too small (or all of them when the configuration changed): one layer slot
// for a lean forward, one per layer once the workspace keeps them.
func (ws *Workspace) prepare(cfg Config, B, T int) {
	ws.owner, ws.pass, ws.sharded = nil, passNone, false
	if !sameArch(ws.cfg, cfg) {
		*ws = Workspace{MaxKeptProbs: ws.MaxKeptProbs, MaxKeptAttention: ws.MaxKeptAttention, Temperature: ws.Temperature,
			Shards: ws.Shards, cfg: cfg, keep: ws.keep, shards: ws.shards}
	}
	ws.B, ws.T = B, T
	N := B * T
	C, I := cfg.HiddenSize, cfg.IntermediateSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	slots := 1
	if ws.keep {
		slots = cfg.NumHiddenLayers
	}
	ws.kept = ws.keep
	limit := ws.MaxKeptAttention
	if limit <= 0 {
		limit = 1 << 22
	}
	P := B * cfg.NumAttentionHeads * T * T
	ws.keptAttention = ws.keep && P <= limit
	grown := N > ws.capN
	if grown {
		// Grow to the larger of the old and new shapes, so that alternating shapes settle
		// instead of reallocating every time.
		ws.capN = N
		n := ws.capN
		ws.tokens = make([]int, n)
		ws.mask = make([]float32, n)
		ws.positions = make([]int, n)
		ws.embedded = make([]float32, n*C)
		ws.norm = make([]float32, n*C)
		ws.act = make([]float32, min(n, mlpChunk)*I)
		ws.final = make([]float32, n*C)
		ws.finalR = make([]float32, n)
		ws.dres, ws.dnorm, ws.dfinal = nil, nil, nil // backward buffers grow lazily
	}
	if grown || len(ws.layers) < slots {
		n := ws.capN
		ws.layers = make([]layerActs, slots)
		for l := range ws.layers {
			a := layerActs{
				rstd1: make([]float32, n),
				q:     make([]float32, n*Q), k: make([]float32, n*K), v: make([]float32, n*K),
				stats: make([]float32, n*cfg.NumAttentionHeads*2), attn: make([]float32, n*Q),
				resid1: make([]float32, n*C), rstd2: make([]float32, n),
				gate: make([]float32, n*I), up: make([]float32, n*I),
				resid2: make([]float32, n*C),
			}
			if cfg.QKNorm() {
				a.qProj, a.kProj = make([]float32, n*Q), make([]float32, n*K)
				a.qRstd = make([]float32, n*cfg.NumAttentionHeads)
				a.kRstd = make([]float32, n*cfg.NumKeyValueHeads)
			}
			ws.layers[l] = a
		}
	}
	if ws.keptAttention {
		for l := range ws.layers {
			ws.layers[l].attnWeights = grow(ws.layers[l].attnWeights, P)
		}
	}
	ws.tokens, ws.mask, ws.positions = ws.tokens[:N], ws.mask[:N], ws.positions[:N]
}

// prepareBackward sizes the backward scratch buffers for the current (B, T).
func (ws *Workspace) prepareBackward() {
	cfg := ws.cfg
	N := ws.B * ws.T
	C, I := cfg.HiddenSize, cfg.IntermediateSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	ws.dres = grow(ws.dres, N*C)
	ws.dnorm = grow(ws.dnorm, N*C)
	ws.dfinal = grow(ws.dfinal, N*C)
	ws.dq = grow(ws.dq, N*Q)
	ws.dk = grow(ws.dk, N*K)
	ws.dv = grow(ws.dv, N*K)
	ws.dattn = grow(ws.dattn, N*Q)
	if cfg.QKNorm() {
		ws.dqProj = grow(ws.dqProj, N*Q)
		ws.dkProj = grow(ws.dkProj, N*K)
	}
	ws.dgate = grow(ws.dgate, min(N, mlpChunk)*I)
	ws.dup = grow(ws.dup, min(N, mlpChunk)*I)
	ws.dact = grow(ws.dact, min(N, mlpChunk)*I)
}

// sameArch reports whether two configurations have the same buffer shapes.
func sameArch(a, b Config) bool {
	return a.QKNorm() == b.QKNorm() && a.VocabSize == b.VocabSize && a.HiddenSize == b.HiddenSize &&
		a.IntermediateSize == b.IntermediateSize && a.NumHiddenLayers == b.NumHiddenLayers &&
		a.NumAttentionHeads == b.NumAttentionHeads && a.NumKeyValueHeads == b.NumKeyValueHeads &&
		a.HeadSize() == b.HeadSize()
}

// footprint returns the bytes held by the workspace's float32 buffers.
func (ws *Workspace) footprint() int {
	n := len(ws.embedded) + len(ws.final) + len(ws.finalR) + cap(ws.mask) + cap(ws.logits) + cap(ws.values) +
		cap(ws.dres) + cap(ws.dnorm) + cap(ws.dq) + cap(ws.dk) + cap(ws.dv) + cap(ws.dattn) +
		cap(ws.dgate) + cap(ws.dup) + cap(ws.dact) + cap(ws.dfinal) + cap(ws.dqProj) + cap(ws.dkProj) +
		cap(ws.head.logp) + cap(ws.head.entropy) + cap(ws.head.probs) + cap(ws.head.z) +
		cap(ws.head.hidden) + cap(ws.head.dlogits) + cap(ws.head.dhidden) + len(ws.norm) + len(ws.act)
	for _, sh := range ws.shards {
		n += len(sh.grad) + sh.ws.footprint()/4
	}
	for _, a := range ws.layers {
		n += len(a.rstd1) + len(a.qProj) + len(a.kProj) + len(a.qRstd) + len(a.kRstd) + len(a.q) + len(a.k) + len(a.v) + len(a.stats) + cap(a.attnWeights) + len(a.attn) +
			len(a.resid1) + len(a.rstd2) + len(a.gate) + len(a.up) + len(a.resid2)
	}
	return 4 * n
}

// view returns the activation buffers of layer l sliced to the current batch: N rows and
// B*Hq*T attention statistics. A lean forward pass (see Workspace) gives every layer the same
// slot.
func (ws *Workspace) view(l int) layerActs {
	cfg := ws.cfg
	N := ws.B * ws.T
	C, I := cfg.HiddenSize, cfg.IntermediateSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	a := ws.layers[0]
	if ws.kept {
		a = ws.layers[l]
	}
	v := layerActs{
		rstd1: a.rstd1[:N],
		q:     a.q[:N*Q], k: a.k[:N*K], v: a.v[:N*K],
		stats: a.stats[:N*cfg.NumAttentionHeads*2], attn: a.attn[:N*Q],
		attnWeights: a.attnWeights[:min(len(a.attnWeights), ws.B*cfg.NumAttentionHeads*ws.T*ws.T)],
		resid1:      a.resid1[:N*C], rstd2: a.rstd2[:N],
		gate: a.gate[:N*I], up: a.up[:N*I],
		resid2: a.resid2[:N*C],
	}
	v.qProj, v.kProj = v.q, v.k // the projections are q and k themselves
	if cfg.QKNorm() {
		v.qProj, v.kProj = a.qProj[:N*Q], a.kProj[:N*K]
		v.qRstd, v.kRstd = a.qRstd[:N*cfg.NumAttentionHeads], a.kRstd[:N*cfg.NumKeyValueHeads]
	}
	return v
}

// layerInput returns the residual stream entering layer l (N, C): the embeddings, or the
// previous layer's output (in a lean pass, only while layer l has not run).
func (ws *Workspace) layerInput(l int) []float32 {
	N, C := ws.B*ws.T, ws.cfg.HiddenSize
	if l == 0 {
		return ws.embedded[:N*C]
	}
	return ws.view(l - 1).resid2
}
