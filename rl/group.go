package rl

import (
	"fmt"
	"math"
)

// OutcomeScores returns s_i = Σ_t r_{i,t} over all L positions, shape (B). The mask is not
// applied: this is how every verl outcome estimator (GRPO, RLOO, OPO, GPG, REINFORCE++-baseline)
// reads the score, so a reward placed at a masked position still counts.
func OutcomeScores(rewards Matrix) []float64 {
	s := make([]float64, rewards.B) // (B)
	for i := range s {
		for _, r := range rewards.Row(i) {
			s[i] += r
		}
	}
	return s
}

// groupsOf returns the members of each group id, in order of first appearance; ids need not be
// contiguous. It panics if len(index) != b.
func groupsOf(fn string, index []int, b int) [][]int {
	if len(index) != b {
		panic(fmt.Sprintf("rl.%s: %d group ids for %d responses", fn, len(index), b))
	}
	slot := map[int]int{}
	var groups [][]int
	for i, id := range index {
		k, ok := slot[id]
		if !ok {
			k = len(groups)
			slot[id] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], i)
	}
	return groups
}

// meanStd returns the mean and the unbiased (N−1) standard deviation of s over members, as
// torch.mean and torch.std of the stacked group. The mean is taken about the first member,
// μ = s₀ + Σ(s_i − s₀)/N, which is the plain mean up to rounding and exactly the common score
// of a tied group: summed plainly, eight scores of 0.2 have mean 0.2 − 2.8e-17, and GRPO would
// give the tied group advantages of 3e-11 instead of 0. It panics for fewer than two members.
func meanStd(s []float64, members []int) (mean, std float64) {
	n := float64(len(members))
	if len(members) < 2 {
		panic("rl.meanStd: group of fewer than two")
	}
	s0 := s[members[0]]
	for _, i := range members {
		mean += s[i] - s0
	}
	mean = s0 + mean/n
	ss := 0.0
	for _, i := range members {
		ss += (s[i] - mean) * (s[i] - mean)
	}
	return mean, math.Sqrt(ss / (n - 1))
}

// broadcast returns adv_{i,t} = scalar_i · m_{i,t}, shape (B, L).
func broadcast(scalar []float64, mask Matrix) Matrix {
	out := NewMatrix(mask.B, mask.L)
	for i := 0; i < mask.B; i++ {
		o, m := out.Row(i), mask.Row(i)
		for t := range o {
			o[t] = scalar[i] * m[t]
		}
	}
	return out
}

// GRPOAdvantage returns the GRPO outcome advantage (Shao et al. 2024, DeepSeekMath), shape
// (B, L); verl returns it as both advantages and returns:
//
//	normByStd:  a_i = (s_i − μ_g)/(σ_g + ε)        (GRPO)
//	otherwise:  a_i = s_i − μ_g                     (Dr.GRPO, Liu et al. 2025, arXiv 2503.20783)
//	adv_{i,t} = a_i · m_{i,t}
//
// s_i is OutcomeScores (unmasked), g the group of response i (index[i]; ids need not be
// contiguous), μ_g its mean and σ_g its unbiased (N−1) std. verl quirks reproduced: a singleton
// group has μ = 0, σ = 1, so it keeps its raw score (divided by 1+ε); a tied group has σ = 0 and
// gets exactly 0.
//
// Source: verl core_algos.compute_grpo_outcome_advantage. It panics if len(index) != B or the
// shapes differ.
func GRPOAdvantage(rewards, mask Matrix, index []int, eps float64, normByStd bool) Matrix {
	sameShape("GRPOAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	a := make([]float64, len(s)) // (B)
	for _, g := range groupsOf("GRPOAdvantage", index, rewards.B) {
		mean, std := 0.0, 1.0
		if len(g) > 1 {
			mean, std = meanStd(s, g)
		}
		for _, i := range g {
			if normByStd {
				a[i] = (s[i] - mean) / (std + eps)
			} else {
				a[i] = s[i] - mean
			}
		}
	}
	return broadcast(a, mask)
}

// GRPOVectorizedAdvantage is GRPOAdvantage as verl's vectorised variant computes it: the group
// statistics are taken in float32 from running sums,
//
//	μ_g = Σs/n,   var_g = (Σs² − (Σs)²/n)/max(n−1, 1),   σ_g = sqrt(max(var_g, ε)),
//
// so a tied group gets σ = sqrt(ε) = 1e-3 instead of 0 (still advantage 0), and singletons get
// μ = 0, σ = 1. The division (s_i − μ_g)/(σ_g + ε) is in float64 with σ_g + ε rounded to float32,
// as torch's type promotion does. Every float32 step is rounded explicitly, so the result
// matches torch bit for bit on CPU rather than only to float32 precision.
//
// Not used by the trainer, which runs GRPOAdvantage; reproduces verl's
// compute_grpo_vectorized_outcome_advantage for the golden cases (package golden/verl).
//
// Source: verl core_algos.compute_grpo_vectorized_outcome_advantage and its group_mean_std
// helper. It panics if len(index) != B or the shapes differ.
func GRPOVectorizedAdvantage(rewards, mask Matrix, index []int, eps float64, normByStd bool) Matrix {
	sameShape("GRPOVectorizedAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	eps32 := float32(eps)
	a := make([]float64, len(s)) // (B)
	for _, g := range groupsOf("GRPOVectorizedAdvantage", index, rewards.B) {
		var count, s1, s2 float32
		for _, i := range g { // index_add_ in row order
			x := float32(s[i])
			count++
			s1 += x
			s2 += float32(x * x)
		}
		cnt := max(count, 1)
		mean := s1 / cnt
		varNum := s2 - float32(s1*s1)/cnt
		v := varNum / max(count-1, 1)
		std := float32(math.Sqrt(float64(max(v, eps32))))
		if count <= 1 {
			mean, std = 0, 1
		}
		den := float64(std + eps32)
		for _, i := range g {
			if normByStd {
				a[i] = (s[i] - float64(mean)) / den
			} else {
				a[i] = s[i] - float64(mean)
			}
		}
	}
	return broadcast(a, mask)
}

// GRPOPassKAdvantage returns the pass@k GRPO advantage (Chen et al. 2025, arXiv 2503.19595),
// shape (B, L): in each group only the best response gets a non-zero advantage,
//
//	a_best = (s_max − s_second) [/ (σ_g + ε) when normByStd],   all others 0,
//
// broadcast times the mask. σ_g is the unbiased group std. Every group needs at least two
// members: it returns an error otherwise, as verl raises. On a tie for the best score the
// advantage is 0 wherever it is placed.
//
// Source: verl core_algos.compute_grpo_passk_outcome_advantage. It panics if len(index) != B or
// the shapes differ.
func GRPOPassKAdvantage(rewards, mask Matrix, index []int, eps float64, normByStd bool) (Matrix, error) {
	sameShape("GRPOPassKAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	a := make([]float64, len(s)) // (B)
	for _, g := range groupsOf("GRPOPassKAdvantage", index, rewards.B) {
		if len(g) < 2 {
			return Matrix{}, fmt.Errorf("rl.GRPOPassKAdvantage: pass@k needs at least 2 samples per group, group of response %d has %d", g[0], len(g))
		}
		best, second := g[0], g[1]
		if s[second] > s[best] {
			best, second = second, best
		}
		for _, i := range g[2:] {
			switch {
			case s[i] > s[best]:
				best, second = i, best
			case s[i] > s[second]:
				second = i
			}
		}
		adv := s[best] - s[second]
		if normByStd {
			_, std := meanStd(s, g)
			adv /= std + eps
		}
		a[best] = adv
	}
	return broadcast(a, mask), nil
}

// RLOOAdvantage returns the REINFORCE leave-one-out advantage (Ahmadian et al. 2024, arXiv
// 2402.14740), shape (B, L):
//
//	n > 1:  a_i = s_i·n/(n−1) − μ_g·n/(n−1)  = s_i − mean of the other n−1 samples
//	n = 1:  a_i = s_i                         (verl's loop version keeps the raw score)
//
// broadcast times the mask. Source: verl core_algos.compute_rloo_outcome_advantage. It panics if
// len(index) != B or the shapes differ.
func RLOOAdvantage(rewards, mask Matrix, index []int) Matrix {
	sameShape("RLOOAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	a := append([]float64(nil), s...) // (B)
	for _, g := range groupsOf("RLOOAdvantage", index, rewards.B) {
		if len(g) < 2 {
			continue
		}
		n := float64(len(g))
		mean, _ := meanStd(s, g)
		for _, i := range g {
			a[i] = s[i]*n/(n-1) - mean*n/(n-1)
		}
	}
	return broadcast(a, mask)
}

// RLOOVectorizedAdvantage is RLOOAdvantage as verl's vectorised variant computes it:
// a_i = (n·s_i − Σ_g s)/max(n−1, 1) for n > 1 and **0 for a singleton** (where the loop version
// keeps s_i).
//
// Not used by the trainer, which runs RLOOAdvantage; reproduces verl's
// compute_rloo_vectorized_outcome_advantage for the golden cases (package golden/verl).
//
// Source: verl core_algos.compute_rloo_vectorized_outcome_advantage. It panics if
// len(index) != B or the shapes differ.
func RLOOVectorizedAdvantage(rewards, mask Matrix, index []int) Matrix {
	sameShape("RLOOVectorizedAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	a := make([]float64, len(s)) // (B)
	for _, g := range groupsOf("RLOOVectorizedAdvantage", index, rewards.B) {
		if len(g) < 2 {
			continue
		}
		n, sum := float64(len(g)), 0.0
		for _, i := range g {
			sum += s[i]
		}
		for _, i := range g {
			a[i] = (n*s[i] - sum) / (n - 1)
		}
	}
	return broadcast(a, mask)
}

// OPOAdvantage returns the optimal-baseline advantage of OPO (Hao et al. 2025, arXiv
// 2505.23585), shape (B, L): the baseline is the length-weighted group mean
//
//	b_g = Σ_j len_j·s_j / Σ_j len_j   (len_j = Σ_t m_j,t: tool tokens do not count),
//
// 0 for a singleton; a_i = s_i − b_g, broadcast times the mask. A group whose responses are all
// fully masked gives NaN, as in verl. Source: verl core_algos.compute_opo_outcome_advantage. It
// panics if len(index) != B or the shapes differ.
func OPOAdvantage(rewards, mask Matrix, index []int) Matrix {
	sameShape("OPOAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	lens := rowCounts(mask)
	a := append([]float64(nil), s...) // (B)
	for _, g := range groupsOf("OPOAdvantage", index, rewards.B) {
		if len(g) < 2 {
			continue
		}
		// b_g about the first member (as meanStd): exactly the common score of a tied group.
		s0, num, den := s[g[0]], 0.0, 0.0
		for _, i := range g {
			num += lens[i] * (s[i] - s0)
			den += lens[i]
		}
		b := s0 + num/den
		for _, i := range g {
			a[i] = s[i] - b
		}
	}
	return broadcast(a, mask)
}

// GPGAdvantage returns the Group Policy Gradient advantage (Chu et al. 2025, arXiv 2504.02546),
// shape (B, L):
//
//	α = B / max(#{i : s_i ≠ 0}, 1),   a_i = α·(s_i − μ_g)/fNorm   (μ = 0 for a singleton),
//
// broadcast times the mask. verl's alpha argument is ignored (overwritten by α), so this
// function has none; the group std verl computes is never used.
//
// Source: verl core_algos.compute_gpg_outcome_advantage. It panics if len(index) != B or the
// shapes differ.
func GPGAdvantage(rewards, mask Matrix, index []int, fNorm float64) Matrix {
	sameShape("GPGAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	nonzero := 0
	for _, x := range s {
		if x != 0 {
			nonzero++
		}
	}
	alpha := float64(rewards.B) / float64(max(nonzero, 1))
	a := make([]float64, len(s)) // (B)
	for _, g := range groupsOf("GPGAdvantage", index, rewards.B) {
		mean := 0.0
		if len(g) > 1 {
			mean, _ = meanStd(s, g)
		}
		for _, i := range g {
			a[i] = alpha * (s[i] - mean) / fNorm
		}
	}
	return broadcast(a, mask)
}

// ReinforcePPBaselineAdvantage returns the REINFORCE++-baseline advantage (Hu 2025, arXiv
// 2501.03262), shape (B, L):
//
//	a_i = s_i − μ_g  (μ = 0 for a singleton: the raw score is kept),
//	adv = MaskedWhiten(a_i·m, m) · m       (token-level batch statistics, unbiased variance).
//
// It returns an error when the batch has fewer than two valid tokens. Source: verl
// core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage. It panics if
// len(index) != B or the shapes differ.
func ReinforcePPBaselineAdvantage(rewards, mask Matrix, index []int) (Matrix, error) {
	sameShape("ReinforcePPBaselineAdvantage", rewards, mask)
	s := OutcomeScores(rewards)
	a := append([]float64(nil), s...) // (B)
	for _, g := range groupsOf("ReinforcePPBaselineAdvantage", index, rewards.B) {
		if len(g) < 2 {
			continue
		}
		mean, _ := meanStd(s, g)
		for _, i := range g {
			a[i] = s[i] - mean
		}
	}
	adv, err := MaskedWhiten(broadcast(a, mask), mask, true)
	if err != nil {
		return Matrix{}, fmt.Errorf("rl.ReinforcePPBaselineAdvantage: %w", err)
	}
	for k, m := range mask.Data {
		adv.Data[k] *= m
	}
	return adv, nil
}
