package rl

import (
	"fmt"
	"math"
	"strings"
)

// KLEstimator is a per-token estimator of KL(π‖π_ref) from the two log-probabilities of the
// sampled token (Schulman, "Approximating KL divergence", 2020, http://joschu.net/blog/kl-approx.html).
type KLEstimator int

const (
	// KLK1 is k1 = logp − ref (verl names "kl", "k1"): unbiased, high variance, can be negative.
	KLK1 KLEstimator = iota
	// KLAbs is |logp − ref| (verl "abs").
	KLAbs
	// KLK2 is k2 = ½(logp − ref)² (verl "mse", "k2").
	KLK2
	// KLK3 is k3 = e^k − k − 1 with k = ref − logp (verl "low_var_kl", "k3"): unbiased, low
	// variance, non-negative; verl clamps k to ±20 and the result to ±10.
	KLK3
)

// String returns verl's canonical name of e.
func (e KLEstimator) String() string {
	switch e {
	case KLK1:
		return "k1"
	case KLAbs:
		return "abs"
	case KLK2:
		return "k2"
	case KLK3:
		return "k3"
	}
	return fmt.Sprintf("KLEstimator(%d)", int(e))
}

// ParseKLEstimator maps verl's kl_penalty names to an estimator: "kl"/"k1", "abs", "mse"/"k2",
// "low_var_kl"/"k3". Like verl at commit b178a3cd it rejects "full" (needs the whole vocabulary)
// and the straight-through "+" variants ("k1+", "k3+", ...), which that verl advertises but
// raises NotImplementedError for.
func ParseKLEstimator(name string) (KLEstimator, error) {
	switch name {
	case "kl", "k1":
		return KLK1, nil
	case "abs":
		return KLAbs, nil
	case "mse", "k2":
		return KLK2, nil
	case "low_var_kl", "k3":
		return KLK3, nil
	case "full":
		return 0, fmt.Errorf("rl: kl_penalty %q needs the full vocabulary distributions and is not supported (verl raises too)", name)
	}
	if strings.HasSuffix(name, "+") {
		return 0, fmt.Errorf("rl: straight-through kl_penalty %q is not supported (verl b178a3cd raises NotImplementedError)", name)
	}
	return 0, fmt.Errorf("rl: unknown kl_penalty %q (want kl/k1, abs, mse/k2 or low_var_kl/k3)", name)
}

// MarshalText writes e's canonical name (String), so a configuration holding an estimator
// reads "k3" in JSON.
func (e KLEstimator) MarshalText() ([]byte, error) {
	if _, err := ParseKLEstimator(e.String()); err != nil {
		return nil, err
	}
	return []byte(e.String()), nil
}

// UnmarshalText parses any of verl's names of an estimator (ParseKLEstimator).
func (e *KLEstimator) UnmarshalText(b []byte) error {
	v, err := ParseKLEstimator(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// k3 clamps, as verl's kl_penalty.
const (
	k3LogRatioClamp = 20.0
	k3ValueClamp    = 10.0
)

// KLPenalty returns the per-token KL estimate, elementwise and unmasked, shape (B, L), and its
// derivative d kl_t / d logp_t:
//
//	k1   kl = logp − ref                        d = 1
//	abs  kl = |logp − ref|                      d = sign(logp − ref) (0 at 0)
//	k2   kl = ½(logp − ref)²                    d = logp − ref
//	k3   k = clamp(ref − logp, −20, 20)
//	     kl = clamp(e^k − k − 1, −10, 10)       d = 1 − e^k, 0 where either clamp is active
//
// Source: verl core_algos.kl_penalty (kl_penalty_forward). It panics if the shapes differ or e
// is unknown.
func KLPenalty(logp, ref Matrix, e KLEstimator) (kl, grad Matrix) {
	sameShape("KLPenalty", logp, ref)
	kl, grad = NewMatrix(logp.B, logp.L), NewMatrix(logp.B, logp.L)
	for n, lp := range logp.Data {
		diff := lp - ref.Data[n]
		switch e {
		case KLK1:
			kl.Data[n], grad.Data[n] = diff, 1
		case KLAbs:
			kl.Data[n] = math.Abs(diff)
			switch {
			case diff > 0:
				grad.Data[n] = 1
			case diff < 0:
				grad.Data[n] = -1
			}
		case KLK2:
			kl.Data[n], grad.Data[n] = 0.5*diff*diff, diff
		case KLK3:
			raw := ref.Data[n] - lp
			k := math.Max(-k3LogRatioClamp, math.Min(k3LogRatioClamp, raw))
			ratio := math.Exp(k)
			v := ratio - k - 1
			kl.Data[n] = math.Max(-k3ValueClamp, math.Min(k3ValueClamp, v))
			if inClosed(raw, -k3LogRatioClamp, k3LogRatioClamp) && inClosed(v, -k3ValueClamp, k3ValueClamp) {
				grad.Data[n] = 1 - ratio
			}
		default:
			panic(fmt.Sprintf("rl.KLPenalty: unknown %v", e))
		}
	}
	return kl, grad
}

// KLLoss returns the KL penalty used as a loss term (GRPO's "use_kl_loss"), AggLoss(kl, m, mode,
// opt), with its gradient with respect to logp, (B, L). The trainer adds coef·KLLoss to the
// policy loss. Source: verl's dp_actor (kl_penalty then agg_loss). It returns an error for an
// unknown mode; it panics if the shapes differ.
func KLLoss(logp, ref, mask Matrix, e KLEstimator, mode AggMode, opt AggOptions) (float64, Matrix, error) {
	kl, dkl := KLPenalty(logp, ref, e)
	loss, w, err := AggLoss(kl, mask, mode, opt)
	if err != nil {
		return 0, Matrix{}, fmt.Errorf("rl.KLLoss: %w", err)
	}
	for n := range w.Data {
		w.Data[n] *= dkl.Data[n]
	}
	return loss, w, nil
}

// KLInReward returns scores − β·(old − ref), elementwise and unmasked, shape (B, L): the k1 KL
// penalty folded into the token-level reward (PPO's "KL in reward"; Ziegler et al. 2019).
//
// Not used by the trainer; reproduces verl's compute_rewards for the golden cases (package
// golden/verl). The trainer's KL in the reward (trainer.KLInReward) takes the configured estimator (KLPenalty) and
// subtracts it on the loss-masked tokens only.
//
// Source: verl core_algos.compute_rewards. It panics if the shapes differ.
func KLInReward(scores, oldLogp, refLogp Matrix, beta float64) Matrix {
	sameShape("KLInReward", scores, oldLogp, refLogp)
	out := NewMatrix(scores.B, scores.L)
	for n, s := range scores.Data {
		out.Data[n] = s - (oldLogp.Data[n]-refLogp.Data[n])*beta
	}
	return out
}
