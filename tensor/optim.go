package tensor

import (
	"fmt"
	"math"

	"agentr1/tensor/ref"
)

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter 2019, Algorithm 2), with
// exactly the semantics of torch.optim.AdamW (amsgrad=False, maximize=False). On each Update,
// with t = Step after incrementing, for every parameter element p with gradient g:
//
//	p = p * (1 - LR*WeightDecay)                      decoupled decay, before the Adam step
//	m = Beta1*m + (1-Beta1)*g
//	v = Beta2*v + (1-Beta2)*g^2
//	p = p - LR/(1-Beta1^t) * m / (sqrt(v)/sqrt(1-Beta2^t) + Eps)
//
// The arithmetic is done in float64 per element; p, m and v are stored in float32.
type AdamW struct {
	LR          float64     // learning rate
	Beta1       float64     // decay of the first-moment average, e.g. 0.9
	Beta2       float64     // decay of the second-moment average, e.g. 0.999
	Eps         float64     // added to the denominator, e.g. 1e-8
	WeightDecay float64     // decoupled weight decay coefficient, e.g. 0.01
	Step        int         // number of updates taken so far
	M, V        [][]float32 // first and second moments, parallel to the params; allocated on the first Update
}

// Update takes one optimiser step over the parallel lists params and grads (each params[i] and
// grads[i] of the same length). A nil grads[i] leaves params[i] and its moments untouched, as
// torch does for a parameter whose .grad is None. It panics if the lists or lengths disagree,
// or if M and V were allocated for differently sized parameters.
func (o *AdamW) Update(params, grads [][]float32) {
	if len(params) != len(grads) {
		panic(fmt.Sprintf("tensor.AdamW.Update: %d params but %d grads", len(params), len(grads)))
	}
	if o.M == nil && o.V == nil {
		o.M, o.V = make([][]float32, len(params)), make([][]float32, len(params))
		for i, p := range params {
			o.M[i], o.V[i] = make([]float32, len(p)), make([]float32, len(p))
		}
	}
	if len(o.M) != len(params) || len(o.V) != len(params) {
		panic(fmt.Sprintf("tensor.AdamW.Update: moments for %d/%d params, got %d params", len(o.M), len(o.V), len(params)))
	}
	o.Step++
	t := float64(o.Step)
	c := adamStep{
		b1: o.Beta1, c1: 1 - o.Beta1, b2: o.Beta2, c2: 1 - o.Beta2,
		decay:    1 - o.LR*o.WeightDecay,
		stepSize: o.LR / (1 - math.Pow(o.Beta1, t)),
		bc2Sqrt:  math.Sqrt(1 - math.Pow(o.Beta2, t)),
		eps:      o.Eps,
	}
	for i, p := range params {
		g := grads[i]
		if g == nil {
			continue
		}
		if len(g) != len(p) || len(o.M[i]) != len(p) || len(o.V[i]) != len(p) {
			panic(fmt.Sprintf("tensor.AdamW.Update: param %d has len %d, grad %d, moments %d/%d", i, len(p), len(g), len(o.M[i]), len(o.V[i])))
		}
		m, v := o.M[i], o.V[i]
		if active.ref {
			ref.AdamW(p, g, m, v, o.LR, o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.Step)
			continue
		}
		Parallel(len(p), elemChunk, func(lo, hi int) {
			active.adamw(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], &c)
		})
	}
}

// adamStep holds the scalars of one AdamW step, in float64: the betas and their complements
// (c1 = 1-Beta1, c2 = 1-Beta2), the decay factor 1 - LR*WeightDecay, the step size
// LR/(1-Beta1^t), sqrt(1-Beta2^t) and Eps. The assembly reads its fields in this order.
type adamStep struct {
	b1, c1, b2, c2, decay, stepSize, bc2Sqrt, eps float64
}

// adamwGeneric updates p, m and v (all len(p)) in place from the gradient g by one AdamW step
// (see AdamW), each element in float64 and rounded once to float32 at the end. The assembly
// versions compute the same operations in the same order, without fused multiply-adds, so
// their results are the same bit for bit; the explicit float64 conversions of products keep
// the compiler from fusing them either (the Go spec lets it fuse x*y + z otherwise, and it
// does with GOAMD64=v3).
func adamwGeneric(p, g, m, v []float32, c *adamStep) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for j := range p {
		gj := float64(g[j])
		mj := float64(c.b1*float64(m[j])) + float64(c.c1*gj)
		vj := float64(c.b2*float64(v[j])) + float64(c.c2*gj*gj)
		pj := float64(float64(p[j]) * c.decay)
		pj -= c.stepSize * mj / (math.Sqrt(vj)/c.bc2Sqrt + c.eps)
		m[j], v[j], p[j] = float32(mj), float32(vj), float32(pj)
	}
}

// normChunk is the fixed block size of ClipGradNorm's partial sums: fixed, so that the total
// does not depend on the number of workers.
const normChunk = 1 << 15

// ClipGradNorm rescales the gradients in place so that their global L2 norm is at most maxNorm,
// as torch.nn.utils.clip_grad_norm_ does (norm_type 2):
//
//	total = sqrt(sum over all grads of g^2)
//	scale = min(1, maxNorm / (total + 1e-6));  g *= scale
//
// It returns total, the norm before clipping. nil entries are skipped. Squares are summed in
// float64 per fixed block and the blocks added in order, so the result is deterministic.
func ClipGradNorm(grads [][]float32, maxNorm float64) (totalNorm float64) {
	var sumSq float64
	for _, g := range grads {
		blocks := (len(g) + normChunk - 1) / normChunk
		partial := make([]float64, blocks)
		Parallel(blocks, 1, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				var s float64
				for _, x := range g[b*normChunk : min((b+1)*normChunk, len(g))] {
					s += float64(x) * float64(x)
				}
				partial[b] = s
			}
		})
		for _, s := range partial {
			sumSq += s
		}
	}
	totalNorm = math.Sqrt(sumSq)
	scale := maxNorm / (totalNorm + 1e-6)
	if scale >= 1 {
		return totalNorm
	}
	for _, g := range grads {
		Parallel(len(g), elemChunk, func(lo, hi int) {
			Scal(float32(scale), g[lo:hi])
		})
	}
	return totalNorm
}
