package ref

import (
	"math"

	"golang.org/x/exp/constraints"
)

// AdamW takes one step t (1 for the first) of Adam with decoupled weight decay (Loshchilov &
// Hutter 2019, "Decoupled Weight Decay Regularization", Algorithm 2), as torch.optim.AdamW does
// (amsgrad=False), updating p, m and v (all len(p)) in place from the gradient g:
//
//	p = p * (1 - lr*weightDecay)                       decoupled decay, before the Adam step
//	m = beta1*m + (1-beta1)*g                          first moment
//	v = beta2*v + (1-beta2)*g^2                        second moment
//	p = p - lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)
//
// The arithmetic is in float64, each result rounded once to F.
func AdamW[F constraints.Float](p, g, m, v []F, lr, beta1, beta2, eps, weightDecay float64, t int) {
	bias1 := 1 - math.Pow(beta1, float64(t)) // bias corrections of the two moments
	bias2 := 1 - math.Pow(beta2, float64(t))
	for i := range p {
		gi := float64(g[i])
		mi := beta1*float64(m[i]) + (1-beta1)*gi
		vi := beta2*float64(v[i]) + (1-beta2)*gi*gi
		pi := float64(p[i]) * (1 - lr*weightDecay)
		pi -= lr / bias1 * mi / (math.Sqrt(vi)/math.Sqrt(bias2) + eps)
		p[i], m[i], v[i] = F(pi), F(mi), F(vi)
	}
}
