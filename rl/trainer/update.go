package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/tensor"
)

// updateStats accumulates the per-mini-batch metrics of an update.
type updateStats struct {
	n, nCritic                                     int
	loss, pg, ent, approxKL, ppoKL, clip, gradNorm float64
	valueLoss, critGrad                            float64
	skipped                                        int    // optimiser steps skipped by the numeric guard
	skipReason                                     string // what was not finite, for the first skip
}

// skip records an optimiser step the numeric guard refused.
func (st *updateStats) skip(reason string) {
	if st.skipped == 0 {
		st.skipReason = reason
	}
	st.skipped++
}

// nonFinite returns the name of the first parameter whose gradient holds a NaN or an
// infinity, or "" when every gradient is finite.
func nonFinite(params []*model.Param) string {
	for _, p := range params {
		for _, g := range p.Grad {
			if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
				return p.Name
			}
		}
	}
	return ""
}

// update runs Epochs passes over the step's rows in MiniBatches mini-batches (miniBatches: of
// similar lengths by default, or in row order as verl). Each mini-batch takes one policy
// optimiser step (unless policy is false: the critic warm-up) and, for PPO, one critic step.
func (t *Trainer) update(d *stepData, policy bool, m *StepMetrics) error {
	c := &t.Config
	b := d.col.Batch
	sched := Schedule{Peak: c.LR, Warmup: c.WarmupSteps, Total: c.Steps, Decay: c.Decay, MinRatio: c.MinLRRatio}
	critSched := sched
	critSched.Peak = c.CriticLR
	t.Opt.LR = sched.LR(t.StepsDone)
	t.CritOpt.LR = critSched.LR(t.StepsDone)
	m.LR = Num(t.Opt.LR)
	if t.Critic != nil {
		m.CriticLR = Num(t.CritOpt.LR)
	}
	d.teaches = make([]bool, b.B)
	idle := 0
	for r := range d.teaches {
		d.teaches[r] = rowTeaches(d, r)
		if !d.teaches[r] {
			idle++
		}
	}
	m.ZeroAdvRate = Num(float64(idle) / float64(max(b.B, 1)))
	var st updateStats
	rng := t.stepRand(t.StepsDone, purposeShuffle)
	size := (b.B + c.MiniBatches - 1) / c.MiniBatches
	for epoch := 0; epoch < c.Epochs; epoch++ {
		for k, rows := range t.miniBatches(b, size, rng) {
			v := NewView(b, rows)
			if policy {
				if err := t.policyMiniBatch(d, v, &st, epoch, k); err != nil {
					return err
				}
			}
			if t.Critic != nil {
				if err := t.criticMiniBatch(d, v, &st); err != nil {
					return err
				}
			}
		}
	}
	if st.n > 0 {
		n := float64(st.n)
		m.Loss, m.PGLoss, m.Entropy = Num(st.loss/n), Num(st.pg/n), Num(st.ent/n)
		m.ApproxKL, m.PPOKL, m.ClipFrac, m.GradNorm = Num(st.approxKL/n), Num(st.ppoKL/n), Num(st.clip/n), Num(st.gradNorm/n)
	}
	m.SkippedUpdates, m.SkipReason = st.skipped, st.skipReason
	if st.skipped > 0 {
		t.NonFiniteRun++
	} else {
		t.NonFiniteRun = 0
	}
	if st.nCritic > 0 {
		n := float64(st.nCritic)
		m.ValueLoss, m.CriticGrad = Num(st.valueLoss/n), Num(st.critGrad/n)
		m.ExplainedVar = Num(rl.ExplainedVariance(d.values, d.returns, d.lossMask))
	}
	return nil
}

// miniBatches cuts the step's rows into mini-batches of at most size rows, in the order
// MiniBatchOrder names: by length (lengthGroups: sorted, so each pads little; only ties and the
// mini-batches' order are shuffled; DESIGN.md gives the reason) or in row order, the step's
// groups kept whole, as verl (rowGroups).
func (t *Trainer) miniBatches(b *mdp.Batch, size int, rng *rand.Rand) [][]int {
	if t.Config.MiniBatchOrder == MiniBatchesByRow {
		return rowGroups(b.B, size)
	}
	return lengthGroups(b, size, rng)
}

// policyMiniBatch takes one policy optimiser step on the rows of v:
//
//	L = policyLoss(logp, old, A) − EntropyCoef·Agg(H) + β·KLLoss(logp, ref)   (KL loss when chosen)
//
// then dL/dlogp and dL/dH go through the model's backward pass, the gradient is clipped to
// GradClip and AdamW steps. The loss is aggregated with the denominators of the whole
// mini-batch (verl agg_loss's batch_num_tokens, global_batch_size, loss_scale_factor), so the
// rows that teach nothing can be left out of the forward and backward passes (teachingRows)
// without changing the loss or its gradient. epoch and k (the mini-batch's place in it) name
// the mini-batch for OnPolicyLoss.
func (t *Trainer) policyMiniBatch(d *stepData, v *View, st *updateStats, epoch, k int) error {
	fullMask := v.Gather(d.lossMask.Data) // (B, L) of the whole mini-batch
	if rl.MaskedSum(fullMask, fullMask) == 0 {
		return nil // no trainable token (every row cut before generating): nothing to learn
	}
	agg := aggDenominators(fullMask, t.Config.MaxLen)
	mask := fullMask // (B, L) of the rows trained on
	miniBatchRows := v.rows
	if tv := t.teachingRows(d, v); tv != v {
		v, mask = tv, tv.Gather(d.lossMask.Data)
	}
	p, err := t.miniBatchLoss(d, v, mask, agg)
	if err != nil {
		return err
	}
	if t.OnPolicyLoss != nil {
		t.OnPolicyLoss(&PolicyTrace{Epoch: epoch, MiniBatch: k, MiniBatchRows: miniBatchRows, Rows: v.rows,
			LogProbs: p.logp, OldLogProbs: p.old, Advantages: p.adv, Mask: mask, Agg: agg, Loss: p.pl, GradLogProb: p.dlogp})
	}
	gn, stepped := t.stepPolicy(v, p, st)
	if stepped {
		st.addPolicy(p, mask, agg, gn)
	}
	return nil
}

// policyTerms is a mini-batch's policy loss, its gradients and what they were computed from,
// over the rows trained on.
type policyTerms struct {
	logp, old, adv, ent rl.Matrix     // (B, L): log-probs now and at sampling, advantages, entropies
	pl                  rl.PolicyLoss // the algorithm's policy loss alone (policyLoss)
	entLoss             float64       // Agg(H), whether or not the entropy bonus is on
	loss                float64       // pl.Loss − EntropyCoef·Agg(H) + β·KL loss
	dlogp               rl.Matrix     // (B, L) dL/dlogp
	dent                []float32     // (B, T) dL/dH; nil without an entropy bonus
}

// miniBatchLoss runs the policy forward on the rows of v and computes the loss of
// policyMiniBatch over mask (B, L), aggregated with the mini-batch's denominators agg, with its
// gradients dL/dlogp and, with an entropy bonus, dL/dH.
func (t *Trainer) miniBatchLoss(d *stepData, v *View, mask rl.Matrix, agg rl.AggOptions) (*policyTerms, error) {
	c := &t.Config
	logpT, entT := t.Policy.Forward(t.ws, v.Tokens, v.Attn, v.B, v.T) // (B, T) each
	p := &policyTerms{
		logp: v.ResponseColumns(logpT), // (B, L)
		ent:  v.ResponseColumns(entT),  // (B, L)
		old:  v.Gather(d.oldLogp.Data),
		adv:  v.Gather(d.advantages.Data),
	}
	pl, err := t.policyLoss(p.logp, p.old, p.adv, mask, agg)
	if err != nil {
		return nil, err
	}
	p.pl, p.loss = pl, pl.Loss
	p.dlogp = pl.GradLogProb // (B, L)
	if t.OnPolicyLoss != nil {
		p.dlogp = pl.GradLogProb.Clone() // the KL term below adds to dlogp; pl stays the PPO loss's
	}
	entLoss, entGrad, err := rl.AggLoss(p.ent, mask, c.AggMode, agg)
	if err != nil {
		return nil, err
	}
	p.entLoss = entLoss
	if c.EntropyCoef != 0 {
		p.loss -= c.EntropyCoef * entLoss
		for k := range entGrad.Data {
			entGrad.Data[k] *= -c.EntropyCoef
		}
		p.dent = v.TokenGrad(entGrad)
	}
	if c.KLMode() == KLAsLoss {
		ref := v.Gather(d.refLogp.Data)
		kl, klGrad, err := rl.KLLoss(p.logp, ref, mask, c.KLEstimator, c.AggMode, agg)
		if err != nil {
			return nil, err
		}
		p.loss += d.klBeta * kl
		for k := range p.dlogp.Data {
			p.dlogp.Data[k] += d.klBeta * klGrad.Data[k]
		}
	}
	return p, nil
}

// stepPolicy takes the policy optimiser step of p's gradients: the model's backward pass from
// dL/dlogp and dL/dH, the gradient clipped to GradClip, and AdamW's step. It returns the
// gradient norm before clipping, and false when the numeric guard skipped the step.
func (t *Trainer) stepPolicy(v *View, p *policyTerms, st *updateStats) (gradNorm float64, stepped bool) {
	// Numeric guard: a non-finite loss or gradient skips this optimiser step (the parameters
	// and AdamW moments stay as they were) and is reported; Run stops the run after
	// MaxNonFiniteSteps such steps in a row.
	if math.IsNaN(p.loss) || math.IsInf(p.loss, 0) {
		st.skip(fmt.Sprintf("policy loss %v (pg %v, entropy %v)", p.loss, p.pl.Loss, p.entLoss))
		return 0, false
	}
	gradT := v.TokenGrad(p.dlogp) // (B, T)
	if t.onBackward != nil {
		t.onBackward(v, gradT)
	}
	t.Policy.ZeroGrad()
	t.Policy.Backward(t.ws, gradT, p.dent)
	if name := nonFinite(t.Policy.Params); name != "" {
		st.skip("gradient of " + name)
		return 0, false
	}
	gn := tensor.ClipGradNorm(t.Policy.ParamGrads(), t.Config.GradClip)
	t.Opt.Update(t.Policy.WritableParams(), t.Policy.ParamGrads())
	return gn, true
}

// addPolicy adds a policy optimiser step's metrics: p's loss terms over the rows trained on
// (mask, (B, L)), with the mini-batch's denominators agg, and the gradient norm gn.
func (st *updateStats) addPolicy(p *policyTerms, mask rl.Matrix, agg rl.AggOptions, gn float64) {
	st.n++
	st.loss += p.loss
	st.pg += p.pl.Loss
	st.ent += rl.MaskedMean(p.ent, mask)
	st.approxKL += rl.ApproxKL(p.logp, p.old, mask) // CleanRL's approx_kl: the k3 estimate of KL(old ‖ new)
	st.ppoKL += p.pl.PPOKL
	st.clip += p.pl.ClipFrac * rl.MaskedSum(mask, mask) / agg.BatchNumTokens // left-out rows are never clipped (A = 0)
	st.gradNorm += gn
}

// policyLoss returns the algorithm's policy loss (Algorithm.PolicyLoss) of a mini-batch's rows,
// (B, L) each, aggregated with the mini-batch's denominators agg:
//
//	ppo-clip  PPOClipLoss: per-token ratio, clipped to [1−ClipLow, 1+ClipHigh], dual clip ClipC
//	gspo      GSPOLoss: the response's geometric-mean ratio, clipped to [1−ClipLow, 1+ClipHigh],
//	          always seq-mean-token-mean (verl forces it)
//	gpg       GPGLoss: −A·logp, no ratio and no clip (old is not read)
//
// Source: verl core_algos.get_policy_loss_fn's "vanilla", "gspo" and "gpg" modes.
func (t *Trainer) policyLoss(logp, old, adv, mask rl.Matrix, agg rl.AggOptions) (rl.PolicyLoss, error) {
	c := &t.Config
	switch c.Algorithm.PolicyLoss() {
	case LossGSPO:
		return rl.GSPOLoss(logp, old, adv, mask, c.ClipLow, c.ClipHigh, agg), nil
	case LossGPG:
		return rl.GPGLoss(logp, adv, mask, c.AggMode, agg)
	}
	return rl.PPOClipLoss(logp, old, adv, mask, rl.PPOClip{Low: c.ClipLow, High: c.ClipHigh, C: c.ClipC}, c.AggMode, agg)
}

// aggDenominators returns the loss denominators of a mini-batch with loss mask (B, L): its
// token count (token-mean) and its rows holding a token (seq-mean modes), which are agg_loss's
// defaults for this mask, and the constant width (seq-mean-token-sum-norm, Dr.GRPO's
// normaliser): verl pads every response to the rollout's response_length and divides by that
// width, the same every step; ours is the trajectory bound MaxLen, where the mini-batch's own
// width would change with its longest response.
func aggDenominators(mask rl.Matrix, width int) rl.AggOptions {
	rows := 0.0
	for i := 0; i < mask.B; i++ {
		for _, m := range mask.Row(i) {
			if m != 0 {
				rows++
				break
			}
		}
	}
	return rl.AggOptions{BatchNumTokens: rl.MaskedSum(mask, mask), GlobalBatchSize: rows, LossScaleFactor: float64(width)}
}

// teachingRows returns v without the rows whose loss is identically zero: no loss-masked token
// has a non-zero advantage (a tied GRPO or RLOO group, a row cut before generating). With no
// entropy bonus and no KL loss such a row's policy loss (PPO's and GSPO's −A·ρ, GPG's −A·logp)
// and its gradient are exactly 0, so
// leaving it out of the forward and backward passes changes neither (the denominators stay the
// mini-batch's: aggDenominators). It returns v itself when every row teaches, when none does
// (the optimiser still steps: AdamW moves on its moments) or when a loss term reads every row.
func (t *Trainer) teachingRows(d *stepData, v *View) *View {
	c := &t.Config
	if c.EntropyCoef != 0 || c.KLMode() == KLAsLoss || t.keepIdleRows {
		return v
	}
	var kept []int
	for _, r := range v.rows {
		if d.teaches[r] {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(v.rows) || len(kept) == 0 {
		return v
	}
	return NewView(v.full, kept)
}

// rowTeaches reports whether row r of the step's batch has a loss-masked token with a non-zero
// advantage.
func rowTeaches(d *stepData, r int) bool {
	L := d.lossMask.L
	for k := r * L; k < (r+1)*L; k++ {
		if d.lossMask.Data[k] != 0 && d.advantages.Data[k] != 0 {
			return true
		}
	}
	return false
}

// criticMiniBatch takes one critic optimiser step on the rows of v with verl's clipped value
// loss against the step's returns, over the loss mask.
func (t *Trainer) criticMiniBatch(d *stepData, v *View, st *updateStats) error {
	c := &t.Config
	valsT := t.Critic.Forward(t.wsCritic, v.Tokens, v.Attn, v.B, v.T) // (B, T)
	vpreds := v.ResponseValues(valsT)                                 // (B, L)
	mask := v.Gather(d.lossMask.Data)
	if rl.MaskedSum(mask, mask) == 0 {
		return nil
	}
	vl, err := rl.ClippedValueLoss(vpreds, v.Gather(d.returns.Data), v.Gather(d.values.Data), mask, c.ValueClip, c.AggMode, rl.AggOptions{})
	if err != nil {
		return err
	}
	if math.IsNaN(vl.Loss) || math.IsInf(vl.Loss, 0) {
		st.skip(fmt.Sprintf("value loss %v", vl.Loss))
		return nil
	}
	t.Critic.ZeroGrad()
	t.Critic.Backward(t.wsCritic, v.ValueGrad(vl.GradVPreds))
	if name := nonFinite(t.Critic.Params); name != "" {
		st.skip("critic gradient of " + name)
		return nil
	}
	grads := t.Critic.ParamGrads()
	gn := tensor.ClipGradNorm(grads, c.GradClip)
	t.CritOpt.Update(t.Critic.WritableParams(), grads)
	st.nCritic++
	st.valueLoss += vl.Loss
	st.critGrad += gn
	return nil
}
