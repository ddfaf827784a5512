package trainer

import (
	"math/rand/v2"
	"slices"

	"agentr1/mdp"
	"agentr1/rl"
)

// View is a subset of a collated batch's rows, trimmed to the columns those rows use: the
// model input of one forward pass (a mini-batch, or a chunk of the old/reference/critic
// passes; package pipeline's SFT step reads its batches through it too). Response token j of view row i sits at model column P+j; its log-prob comes out of
// the forward at that column, its value (verl's critic convention) at column P+j-1.
type View struct {
	rows   []int     // indices into the full batch
	B, T   int       // rows and width of the model input
	P, L   int       // prompt width (left-padded) and response width of this view
	Tokens []int     // (B, T) input ids, pad on padding
	Attn   []float32 // (B, T) attention mask
	full   *mdp.Batch
}

// NewView gathers rows of b, trimmed to their longest prompt and longest response.
func NewView(b *mdp.Batch, rows []int) *View {
	P, L := 0, 0
	for _, r := range rows {
		P = max(P, b.PromptLens[r])
		L = max(L, b.ResponseLens[r])
	}
	if L == 0 {
		L = 1 // keep a response column so every matrix has a shape; it is fully masked
	}
	v := &View{rows: rows, B: len(rows), T: P + L, P: P, L: L, full: b}
	v.Tokens = make([]int, v.B*v.T)
	v.Attn = make([]float32, v.B*v.T)
	fullT := b.T()
	lo := b.P - P // first full-batch column kept
	for i, r := range rows {
		copy(v.Tokens[i*v.T:(i+1)*v.T], b.Tokens[r*fullT+lo:r*fullT+lo+v.T])
		copy(v.Attn[i*v.T:(i+1)*v.T], b.AttentionMask[r*fullT+lo:r*fullT+lo+v.T])
	}
	return v
}

// Gather returns the view's (B, L) slice of a full-batch response-side array x (b.B, b.L).
func (v *View) Gather(x []float64) rl.Matrix {
	m := rl.NewMatrix(v.B, v.L)
	n := min(v.L, v.full.L)
	for i, r := range v.rows {
		copy(m.Data[i*v.L:i*v.L+n], x[r*v.full.L:r*v.full.L+n])
	}
	return m
}

// Scatter writes the view's (B, L) matrix m into the full-batch response-side array x.
func (v *View) Scatter(x []float64, m rl.Matrix) {
	n := min(v.L, v.full.L)
	for i, r := range v.rows {
		copy(x[r*v.full.L:r*v.full.L+n], m.Data[i*v.L:i*v.L+n])
	}
}

// ResponseColumns reads the response columns of any per-token output (B, T) of a forward pass
// (the log-prob, or the entropy, of token t given the tokens before it) as a (B, L) matrix:
// response token j is at column P+j.
func (v *View) ResponseColumns(out []float32) rl.Matrix {
	m := rl.NewMatrix(v.B, v.L)
	for i := 0; i < v.B; i++ {
		for j := 0; j < v.L; j++ {
			m.Data[i*v.L+j] = float64(out[i*v.T+v.P+j])
		}
	}
	return m
}

// TokenGrad lays a (B, L) gradient with respect to a per-token output of the response (its
// log-probs, or its entropies) out as the (B, T) gradient the model's Backward takes for that
// output: response token j at column P+j, 0 elsewhere. It undoes ResponseColumns.
func (v *View) TokenGrad(g rl.Matrix) []float32 {
	out := make([]float32, v.B*v.T)
	for i := 0; i < v.B; i++ {
		for j := 0; j < v.L; j++ {
			out[i*v.T+v.P+j] = float32(g.Data[i*v.L+j])
		}
	}
	return out
}

// ResponseValues reads the critic's (B, T) output at the state before each response token:
// the value of response token j is the critic's output at column P+j-1 (verl
// dp_critic: values[:, -response_length-1:-1]).
func (v *View) ResponseValues(out []float32) rl.Matrix {
	m := rl.NewMatrix(v.B, v.L)
	for i := 0; i < v.B; i++ {
		for j := 0; j < v.L; j++ {
			m.Data[i*v.L+j] = float64(out[i*v.T+v.P+j-1])
		}
	}
	return m
}

// ValueGrad lays a (B, L) gradient with respect to response values out as the critic's (B, T)
// dL/dvalues, at column P+j-1 for response token j.
func (v *View) ValueGrad(g rl.Matrix) []float32 {
	out := make([]float32, v.B*v.T)
	for i := 0; i < v.B; i++ {
		for j := 0; j < v.L; j++ {
			out[i*v.T+v.P+j-1] = float32(g.Data[i*v.L+j])
		}
	}
	return out
}

// lengthGroups splits the batch's rows into groups of at most size rows of similar lengths
// (sorted by prompt + response length, ties in row order), so each view pads little. With rng
// the rows are shuffled before the stable sort (equal lengths in random order) and the
// groups' order is shuffled too; with nil rng the result is deterministic.
func lengthGroups(b *mdp.Batch, size int, rng *rand.Rand) [][]int {
	rows := rowsInOrder(b.B)
	if rng != nil {
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	length := func(r int) int { return b.PromptLens[r] + b.ResponseLens[r] }
	slices.SortStableFunc(rows, func(x, y int) int { return length(x) - length(y) })
	out := cutGroups(rows, size)
	if rng != nil {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// rowGroups splits the batch's B rows, in row order, into groups of at most size rows: a
// step's GRPO groups stay whole when size is a multiple of N, as in verl's
// batch.split(ppo_mini_batch_size).
func rowGroups(B, size int) [][]int {
	return cutGroups(rowsInOrder(B), size)
}

// rowsInOrder returns the rows 0, 1, ..., B-1.
func rowsInOrder(B int) []int {
	rows := make([]int, B)
	for i := range rows {
		rows[i] = i
	}
	return rows
}

// cutGroups cuts rows, in their order, into consecutive groups of at most size rows (size < 1:
// one group of all).
func cutGroups(rows []int, size int) [][]int {
	if size < 1 {
		size = len(rows)
	}
	var out [][]int
	for lo := 0; lo < len(rows); lo += size {
		out = append(out, rows[lo:min(len(rows), lo+size)])
	}
	return out
}
