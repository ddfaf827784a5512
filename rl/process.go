package rl

// GRPO as verl computes it (GRPOAdvantage) gives every token of a response the same advantage,
// from the response's summed reward. With process rewards that sum mixes turns: a response
// that searched well and then answered wrong is paid for its searches on its answer's tokens
// too. DeepSeekMath's process supervision (Shao et al. 2024, arXiv 2402.03300, §4.1.3) credits
// each step with the rewards from that step on instead. Here a step is a turn.

// turnStep is one turn of a response: the positions [start, end) of the mask's agent tokens it
// covers, and its reward.
type turnStep struct {
	start, end int
	reward     float64
}

// turnSteps splits one response row into its turns: each maximal run of positions where mask
// is non-zero is a turn. A turn's reward is the sum of the rewards from its first position to
// the next turn's first (a reward placed on a tool response after a turn counts with the
// turn); rewards before the first turn count with it. A row without agent tokens has no turns.
func turnSteps(rewards, mask []float64) []turnStep {
	var steps []turnStep
	for t := 0; t < len(mask); t++ {
		if mask[t] == 0 || (t > 0 && mask[t-1] != 0) {
			continue
		}
		end := t + 1
		for end < len(mask) && mask[end] != 0 {
			end++
		}
		steps = append(steps, turnStep{start: t, end: end})
	}
	for k := range steps {
		from, to := steps[k].start, len(rewards)
		if k == 0 {
			from = 0
		}
		if k+1 < len(steps) {
			to = steps[k+1].start
		}
		for _, r := range rewards[from:to] {
			steps[k].reward += r
		}
	}
	return steps
}

// GRPOProcessAdvantage returns GRPO's advantage under process supervision (Shao et al. 2024,
// DeepSeekMath §4.1.3), shape (B, L), with each turn of a response a step (turnSteps). The
// rewards of every step of every response in a group are normalised together, and a token's
// advantage is the sum of the normalised rewards of its own turn and the turns after it:
//
//	r̃_{i,j} = (r_{i,j} − mean(R_g)) / (std(R_g) + ε),   R_g = {r_{i,j}: i in group g, every turn j}
//	adv_{i,t} = Σ_{j: turn j ends at or after t} r̃_{i,j} · m_{i,t}
//
// std is the unbiased one, as GRPOAdvantage's; a group with fewer than two step rewards is
// normalised by mean 0 and std 1, as GRPOAdvantage treats a group of one. A response with one
// turn, or a mask with no gaps (the advantage mask off), gets a single step: its summed reward
// normalised against the group's, which is GRPOAdvantage when every response has one step.
// The answer turn is then paid for its outcome alone, and a tool-calling turn for its own
// process reward and everything after it. It panics if len(index) != B or the shapes differ.
func GRPOProcessAdvantage(rewards, mask Matrix, index []int, eps float64) Matrix {
	sameShape("GRPOProcessAdvantage", rewards, mask)
	steps := make([][]turnStep, rewards.B) // per response, its turns
	for i := range steps {
		steps[i] = turnSteps(rewards.Row(i), mask.Row(i))
	}
	out := NewMatrix(rewards.B, rewards.L)
	for _, g := range groupsOf("GRPOProcessAdvantage", index, rewards.B) {
		var all []float64 // R_g: every step reward of the group
		for _, i := range g {
			for _, s := range steps[i] {
				all = append(all, s.reward)
			}
		}
		mean, std := 0.0, 1.0
		if len(all) > 1 {
			members := make([]int, len(all))
			for k := range members {
				members[k] = k
			}
			mean, std = meanStd(all, members)
		}
		for _, i := range g {
			o, m := out.Row(i), mask.Row(i)
			fromHere := 0.0 // Σ of the normalised rewards of turn k and the turns after it
			for k := len(steps[i]) - 1; k >= 0; k-- {
				s := steps[i][k]
				fromHere += (s.reward - mean) / (std + eps)
				for t := s.start; t < s.end; t++ {
					o[t] = fromHere * m[t]
				}
			}
		}
	}
	return out
}
