package model

// Workspace holds every activation a forward pass saves for its backward pass, and the
// scratch buffers of the backward pass, for one batch shape (B, T). Buffers grow when a larger
// batch arrives and are reused otherwise, so a training step allocates nothing large after the
// first. The zero value is ready to use. A Workspace serves one model at a time (a policy and
// its critic each need their own), and the slices Forward returns are views into it, valid
// until the next Forward on the same Workspace.
//
// Shapes use N = B*T rows, C = hidden size, Q = Hq*D, K = Hkv*D, I = intermediate size,
// V = vocabulary size.
type Workspace struct {
	// MaxKeptProbs bounds how many float32 next-token probabilities Forward may keep for
	// Backward (rows x V). Above it Backward recomputes them chunk by chunk from the final
	// hidden states, at the cost of a second lm_head matrix product. 0 means 1<<26 (256 MB).
	MaxKeptProbs int

	cfg   Config // configuration the buffers were sized for
	owner any    // the *Model or *Critic whose forward pass the buffers hold
	pass  pass   // which forward pass they hold
	B, T  int    // shape of the last forward pass
	capN  int    // rows the per-row buffers hold
	capP  int    // elements the attention-probability buffers hold (per layer)

	tokens    []int     // (N) input ids of the last forward
	mask      []float32 // (N) attention mask, 1 = real token, 0 = left padding
	positions []int     // (N) rotary positions: cumsum(mask)-1, 0 on padding

	embedded []float32   // (N, C) token embeddings, the residual stream entering layer 0
	layers   []layerActs // per layer
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
	dgate  []float32 // (N, I)
	dup    []float32 // (N, I)
	dact   []float32 // (N, I)
	dfinal []float32 // (N, C) d(loss)/d(final hidden states)
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
	norm1  []float32 // (N, C) input_layernorm output
	rstd1  []float32 // (N) its reciprocal RMS
	q      []float32 // (N, Hq, D) queries after RoPE
	k      []float32 // (N, Hkv, D) keys after RoPE
	v      []float32 // (N, Hkv, D) values
	probs  []float32 // (B, Hq, T, T) attention weights
	attn   []float32 // (N, Hq, D) attention output, before o_proj
	resid1 []float32 // (N, C) residual stream after attention
	norm2  []float32 // (N, C) post_attention_layernorm output
	rstd2  []float32 // (N) its reciprocal RMS
	gate   []float32 // (N, I) gate_proj output
	up     []float32 // (N, I) up_proj output
	act    []float32 // (N, I) silu(gate) * up
	resid2 []float32 // (N, C) residual stream leaving the layer
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
// buffers that are too small (or all of them when the configuration changed).
func (ws *Workspace) prepare(cfg Config, B, T int) {
	ws.owner, ws.pass = nil, passNone
	if !sameArch(ws.cfg, cfg) {
		*ws = Workspace{MaxKeptProbs: ws.MaxKeptProbs, cfg: cfg}
	}
	ws.B, ws.T = B, T
	N := B * T
	C, I := cfg.HiddenSize, cfg.IntermediateSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	P := B * cfg.NumAttentionHeads * T * T
	if N > ws.capN || P > ws.capP {
		// Grow to the larger of the old and new shapes in both measures, so that alternating
		// shapes settle instead of reallocating every time.
		ws.capN, ws.capP = max(ws.capN, N), max(ws.capP, P)
		n, p := ws.capN, ws.capP
		ws.tokens = make([]int, n)
		ws.mask = make([]float32, n)
		ws.positions = make([]int, n)
		ws.embedded = make([]float32, n*C)
		ws.layers = make([]layerActs, cfg.NumHiddenLayers)
		for l := range ws.layers {
			ws.layers[l] = layerActs{
				norm1: make([]float32, n*C), rstd1: make([]float32, n),
				q: make([]float32, n*Q), k: make([]float32, n*K), v: make([]float32, n*K),
				probs: make([]float32, p), attn: make([]float32, n*Q),
				resid1: make([]float32, n*C),
				norm2:  make([]float32, n*C), rstd2: make([]float32, n),
				gate: make([]float32, n*I), up: make([]float32, n*I), act: make([]float32, n*I),
				resid2: make([]float32, n*C),
			}
		}
		ws.final = make([]float32, n*C)
		ws.finalR = make([]float32, n)
		ws.dres, ws.dnorm, ws.dfinal = nil, nil, nil // backward buffers grow lazily
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
	ws.dgate = grow(ws.dgate, N*I)
	ws.dup = grow(ws.dup, N*I)
	ws.dact = grow(ws.dact, N*I)
}

// sameArch reports whether two configurations have the same buffer shapes.
func sameArch(a, b Config) bool {
	return a.VocabSize == b.VocabSize && a.HiddenSize == b.HiddenSize &&
		a.IntermediateSize == b.IntermediateSize && a.NumHiddenLayers == b.NumHiddenLayers &&
		a.NumAttentionHeads == b.NumAttentionHeads && a.NumKeyValueHeads == b.NumKeyValueHeads &&
		a.HeadSize() == b.HeadSize()
}

// footprint returns the bytes held by the workspace's float32 buffers.
func (ws *Workspace) footprint() int {
	n := len(ws.embedded) + len(ws.final) + len(ws.finalR) + cap(ws.mask) + cap(ws.logits) + cap(ws.values) +
		cap(ws.dres) + cap(ws.dnorm) + cap(ws.dq) + cap(ws.dk) + cap(ws.dv) + cap(ws.dattn) +
		cap(ws.dgate) + cap(ws.dup) + cap(ws.dact) + cap(ws.dfinal) +
		cap(ws.head.logp) + cap(ws.head.entropy) + cap(ws.head.probs) + cap(ws.head.z) +
		cap(ws.head.hidden) + cap(ws.head.dlogits) + cap(ws.head.dhidden)
	for _, a := range ws.layers {
		n += len(a.norm1) + len(a.rstd1) + len(a.q) + len(a.k) + len(a.v) + len(a.probs) + len(a.attn) +
			len(a.resid1) + len(a.norm2) + len(a.rstd2) + len(a.gate) + len(a.up) + len(a.act) + len(a.resid2)
	}
	return 4 * n
}
