package rl

import "fmt"

// GAERecursion writes the generalised advantage estimates of one dense row of consecutive agent
// tokens (Schulman et al. 2016, eq. 16), scanning t = n−1 … 0 with A_n = 0 and V_n = 0:
//
//	δ_t = r_t + γ·V_{t+1} − V_t,   A_t = δ_t + γλ·A_{t+1}.
//
// Not used by the trainer, which runs GAE (GAERawAdvantages: the loop of verl's
// compute_gae_advantage_return); with SqueezeScatter it is the paper's view of the advantage
// mask, to which TestSqueezeGAEEqualsVerlSkip holds GAERawAdvantages bit for bit.
//
// adv, rewards and values have the same length n. It panics otherwise.
func GAERecursion(adv, rewards, values []float64, gamma, lam float64) {
	if len(rewards) != len(adv) || len(values) != len(adv) {
		panic(fmt.Sprintf("rl.GAERecursion: lengths adv %d, rewards %d, values %d", len(adv), len(rewards), len(values)))
	}
	nextValue, lastAdv := 0.0, 0.0
	for t := len(adv) - 1; t >= 0; t-- {
		delta := rewards[t] + gamma*nextValue - values[t]
		lastAdv = delta + gamma*lam*lastAdv
		nextValue = values[t]
		adv[t] = lastAdv
	}
}

// GAERawAdvantages returns the GAE advantages before whitening, shape (B, L), skipping masked
// positions as verl does: at a masked position both carries (the next value and the running
// advantage) pass through unchanged, so rewards and values there never reach a valid token, the
// last valid token before a tool span bootstraps from the first valid token after it, and
// discounting counts valid-token steps. A masked position holds the raw advantage of the next
// valid token to its right (0 after the last one). This equals SqueezeScatter with
// GAERecursion and FillNextAgentToken, bit for bit (Agent-R1's advantage mask).
//
// Source: verl core_algos.compute_gae_advantage_return (the loop before masked_whiten).
// It panics if the shapes differ.
func GAERawAdvantages(rewards, values, mask Matrix, gamma, lam float64) Matrix {
	sameShape("GAERawAdvantages", rewards, values, mask)
	adv := NewMatrix(rewards.B, rewards.L)
	for i := 0; i < rewards.B; i++ {
		r, v, m, a := rewards.Row(i), values.Row(i), mask.Row(i), adv.Row(i)
		nextValue, lastAdv := 0.0, 0.0
		for t := rewards.L - 1; t >= 0; t-- {
			if m[t] != 0 {
				delta := r[t] + gamma*nextValue - v[t]
				lastAdv = delta + gamma*lam*lastAdv
				nextValue = v[t]
			}
			a[t] = lastAdv
		}
	}
	return adv
}

// GAE returns verl's GAE advantages and returns, both (B, L):
//
//	returns = rawAdv + V             at every position (masked ones included, garbage V and all),
//	advantages = MaskedWhiten(rawAdv, m)   not re-masked: padding gets −μ/σ, not 0.
//
// rawAdv is GAERawAdvantages (masked positions skipped, see there). Losses mask the masked
// positions later. It returns an error when the batch has fewer than two valid tokens (verl's
// masked_var raises).
//
// Source: verl core_algos.compute_gae_advantage_return. It panics if the shapes differ.
func GAE(rewards, values, mask Matrix, gamma, lam float64) (advantages, returns Matrix, err error) {
	raw := GAERawAdvantages(rewards, values, mask, gamma, lam)
	returns = NewMatrix(raw.B, raw.L)
	for k := range raw.Data {
		returns.Data[k] = raw.Data[k] + values.Data[k]
	}
	advantages, err = MaskedWhiten(raw, mask, true)
	if err != nil {
		return Matrix{}, Matrix{}, fmt.Errorf("rl.GAE: %w", err)
	}
	return advantages, returns, nil
}
