package trainer

import "agentr1/mdp"

// sftWeights returns the per-token weights of the SFT loss over b's response side (b.B, b.L):
// 1 on the agent's tokens (the action mask), contextWeight on the observation tokens between
// turns and 0 on padding. With contextWeight 0 this is the action mask, the paper's masked
// loss; above 0 the warm start is also a language model of the tool responses, which a policy
// trained from scratch needs in order to learn to read them (copying a name out of a retrieved
// passage is next-token prediction on that passage's own text first).
func sftWeights(b *mdp.Batch, contextWeight float64) []float64 {
	w := make([]float64, len(b.ActionMask)) // (B, L)
	for i := range b.B {
		for j := range b.ResponseLens[i] {
			k := i*b.L + j
			if b.ActionMask[k] > 0 {
				w[k] = b.ActionMask[k]
			} else {
				w[k] = contextWeight
			}
		}
	}
	return w
}
