package ref

import (
	"math"

	"golang.org/x/exp/constraints"
)

// Softmax, log-softmax, and the per-token quantities of logits rows that the RL losses consume
// (verl's logprobs_from_logits and entropy_from_logits). Every row is shifted by its maximum
// before exponentiating, so that no exponential overflows, and summed in float64.

// logNormaliser returns the maximum m of x and logZ = log sum_j exp(x_j - m), so that
// log softmax(x)_j = (x_j - m) - logZ and logsumexp(x) = m + logZ. Shifting by m keeps every
// exponential in [0, 1], and subtracting m before logZ keeps log-probabilities exact even where
// m + logZ would round to m (logits near the float32 maximum). A row of only -Inf gives
// m = -Inf.
func logNormaliser[F constraints.Float](x []F) (m, logZ float64) {
	m = math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	if math.IsInf(m, -1) {
		return m, 0
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v) - m)
	}
	return m, math.Log(sum)
}

// logSoftmax returns log softmax(x)_j given x_j and x's logNormaliser.
func logSoftmax(xj, m, logZ float64) float64 { return (xj - m) - logZ }

// SoftmaxForward computes y_ij = exp(x_ij) / sum_k exp(x_ik) over each row of x (n, d),
// overwriting y (n, d); y may be x. A row of only -Inf gives zeros.
func SoftmaxForward[F constraints.Float](y, x []F, n, d int) {
	for i := 0; i < n; i++ {
		m, logZ := logNormaliser(x[i*d : (i+1)*d])
		for j := 0; j < d; j++ {
			p := 0.0
			if !math.IsInf(m, -1) {
				p = math.Exp(logSoftmax(float64(x[i*d+j]), m, logZ))
			}
			y[i*d+j] = F(p)
		}
	}
}

// SoftmaxBackward accumulates the gradient of y = softmax(x) given the forward output y
// (the Jacobian dy_j/dx_k = y_j (1[j == k] - y_k)):
//
//	dx_ij += y_ij * (dy_ij - sum_k dy_ik y_ik)
//
// dx may be nil.
func SoftmaxBackward[F constraints.Float](dx, dy, y []F, n, d int) {
	if dx == nil {
		return
	}
	for i := 0; i < n; i++ {
		var dot float64 // sum_k dy_ik y_ik
		for k := 0; k < d; k++ {
			dot += float64(dy[i*d+k]) * float64(y[i*d+k])
		}
		for j := 0; j < d; j++ {
			dx[i*d+j] += F(float64(y[i*d+j]) * (float64(dy[i*d+j]) - dot))
		}
	}
}

// LogSoftmaxForward computes y_ij = x_ij - logsumexp_k(x_ik) over each row of x (n, d),
// overwriting y (n, d); y may be x.
func LogSoftmaxForward[F constraints.Float](y, x []F, n, d int) {
	for i := 0; i < n; i++ {
		m, logZ := logNormaliser(x[i*d : (i+1)*d])
		for j := 0; j < d; j++ {
			y[i*d+j] = F(logSoftmax(float64(x[i*d+j]), m, logZ))
		}
	}
}

// LogSoftmaxBackward accumulates the gradient of y = log_softmax(x) given the forward output y
// (dy_j/dx_k = 1[j == k] - softmax(x)_k, and softmax(x) = exp(y)):
//
//	dx_ij += dy_ij - exp(y_ij) * sum_k dy_ik
//
// dx may be nil.
func LogSoftmaxBackward[F constraints.Float](dx, dy, y []F, n, d int) {
	if dx == nil {
		return
	}
	for i := 0; i < n; i++ {
		var sum float64 // sum_k dy_ik
		for k := 0; k < d; k++ {
			sum += float64(dy[i*d+k])
		}
		for j := 0; j < d; j++ {
			dx[i*d+j] += F(float64(dy[i*d+j]) - math.Exp(float64(y[i*d+j]))*sum)
		}
	}
}

// LogProbsForward computes the log-probability of each row's label, overwriting logp (n)
// (verl logprobs_from_logits):
//
//	logp_i = logits_i[labels_i] - logsumexp(logits_i)      logits: (n, V)   labels: (n)
func LogProbsForward[F constraints.Float](logp, logits []F, labels []int, n, V int) {
	for i := 0; i < n; i++ {
		row := logits[i*V : (i+1)*V] // (V)
		m, logZ := logNormaliser(row)
		logp[i] = F(logSoftmax(float64(row[labels[i]]), m, logZ))
	}
}

// LogProbsBackward accumulates the gradient of LogProbsForward:
//
//	dlogits_ij += dlogp_i * (1[j == labels_i] - softmax(logits_i)_j)
//
// dlogits may be nil.
func LogProbsBackward[F constraints.Float](dlogits, dlogp, logits []F, labels []int, n, V int) {
	if dlogits == nil {
		return
	}
	for i := 0; i < n; i++ {
		row := logits[i*V : (i+1)*V] // (V)
		m, logZ := logNormaliser(row)
		for j := 0; j < V; j++ {
			p := math.Exp(logSoftmax(float64(row[j]), m, logZ))
			dlogits[i*V+j] -= F(float64(dlogp[i]) * p)
		}
		dlogits[i*V+labels[i]] += dlogp[i]
	}
}

// EntropyForward computes the entropy of each row's softmax distribution, overwriting ent (n)
// (verl entropy_from_logits):
//
//	H_i = -sum_j p_ij log p_ij = logsumexp(logits_i) - sum_j p_ij logits_ij,   p_i = softmax(logits_i)
//
// A logit of -Inf has p = 0 and adds nothing (0 log 0 = 0).
func EntropyForward[F constraints.Float](ent, logits []F, n, V int) {
	for i := 0; i < n; i++ {
		ent[i] = F(entropy(logits[i*V : (i+1)*V]))
	}
}

// entropy returns -sum_j p_j log p_j of p = softmax(x), skipping p_j = 0 (0 log 0 = 0).
func entropy[F constraints.Float](x []F) float64 {
	m, logZ := logNormaliser(x)
	var h float64
	for _, v := range x {
		if logp := logSoftmax(float64(v), m, logZ); !math.IsInf(logp, -1) {
			h -= math.Exp(logp) * logp
		}
	}
	return h
}

// EntropyBackward accumulates the gradient of EntropyForward. With log p_j = x_j - lse,
// dH/dx_j = -p_j (log p_j + H):
//
//	dlogits_ij += -dent_i * p_ij * (log p_ij + H_i)
//
// dlogits may be nil.
func EntropyBackward[F constraints.Float](dlogits, dent, logits []F, n, V int) {
	if dlogits == nil {
		return
	}
	for i := 0; i < n; i++ {
		row := logits[i*V : (i+1)*V] // (V)
		m, logZ := logNormaliser(row)
		h := entropy(row)
		for j := 0; j < V; j++ {
			if logp := logSoftmax(float64(row[j]), m, logZ); !math.IsInf(logp, -1) {
				dlogits[i*V+j] += F(-float64(dent[i]) * math.Exp(logp) * (logp + h))
			}
		}
	}
}
