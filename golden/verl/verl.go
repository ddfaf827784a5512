// Package verl checks package rl against verl: it registers rl's functions under the names of
// verl's core_algos and torch_functional functions, for the cases of
// testdata/golden/verl/core_algos.json (recorded from volcengine/verl; see
// testdata/golden/verl/README.md). It is golden-case glue, not part of the algorithm: it reads
// a case's tensors and parameters, calls package rl, and hands the results back to package
// golden to compare. The trainer never imports it; `agentr1 golden` and this package's tests do.
package verl

import (
	"fmt"

	"agentr1/golden"
	"agentr1/rl"
)

// Register adds rl's implementations of verl's core_algos / torch_functional functions to r,
// under verl's function names, for testdata/golden/verl/core_algos.json. Outputs named grad_*
// are the gradients the golden generator took with torch autograd; each is compared as an
// output. REINFORCE++ is registered with rl.ReturnsResetAtMask, verl's semantics.
//
// Every name goes in the "verl" namespace (golden.VerlNamespace): verl's masked_mean is not
// PyTorch's masked_mean of torch_ops.json, which package golden/torchops registers.
func Register(r *golden.Registry) {
	add := func(fn string, f golden.Func) { r.Add(golden.Qualified(golden.VerlNamespace, fn), f) }
	add("masked_sum", goldenMaskedSum)
	add("masked_mean", goldenMaskedMean)
	add("masked_var", goldenMaskedVar)
	add("masked_whiten", goldenMaskedWhiten)
	add("compute_gae_advantage_return", goldenGAE)
	add("compute_grpo_outcome_advantage", goldenGroup(func(c *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		eps, norm, err := grpoParams(c)
		return rl.GRPOAdvantage(rw, m, idx, eps, norm), err
	}))
	add("compute_grpo_vectorized_outcome_advantage", goldenGroup(func(c *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		eps, norm, err := grpoParams(c)
		return rl.GRPOVectorizedAdvantage(rw, m, idx, eps, norm), err
	}))
	add("compute_grpo_passk_outcome_advantage", goldenGroup(func(c *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		eps, norm, err := grpoParams(c)
		if err != nil {
			return rl.Matrix{}, err
		}
		return rl.GRPOPassKAdvantage(rw, m, idx, eps, norm)
	}))
	add("compute_rloo_outcome_advantage", goldenGroup(func(_ *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		return rl.RLOOAdvantage(rw, m, idx), nil
	}))
	add("compute_rloo_vectorized_outcome_advantage", goldenGroup(func(_ *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		return rl.RLOOVectorizedAdvantage(rw, m, idx), nil
	}))
	add("compute_opo_outcome_advantage", goldenGroup(func(_ *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		return rl.OPOAdvantage(rw, m, idx), nil
	}))
	add("compute_gpg_outcome_advantage", goldenGroup(func(c *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		fNorm, err := c.Float("f_norm", 1)
		return rl.GPGAdvantage(rw, m, idx, fNorm), err
	}))
	add("compute_reinforce_plus_plus_baseline_outcome_advantage", goldenGroup(func(_ *golden.Case, rw, m rl.Matrix, idx []int) (rl.Matrix, error) {
		return rl.ReinforcePPBaselineAdvantage(rw, m, idx)
	}))
	add("compute_reinforce_plus_plus_outcome_advantage", goldenReinforcePP)
	add("compute_remax_outcome_advantage", goldenReMax)
	add("kl_penalty", goldenKLPenalty)
	add("compute_rewards", goldenComputeRewards)
	add("agg_loss", goldenAggLoss)
	add("compute_policy_loss", goldenPolicyLoss)
	add("compute_policy_loss_gspo", goldenGSPO)
	add("compute_policy_loss_gpg", goldenGPGLoss)
	add("compute_value_loss", goldenValueLoss)
	add("entropy_from_logits", goldenEntropy)
	add("compute_entropy_loss", goldenEntropyLoss)
	add("logprobs_from_logits", goldenLogProbs)
}

// ---- reading cases ----

// matrices returns the named (B, L) inputs of c as Matrices.
func matrices(c *golden.Case, names ...string) ([]rl.Matrix, error) {
	vs, err := c.InputList(names...)
	if err != nil {
		return nil, err
	}
	out := make([]rl.Matrix, len(vs))
	for k, v := range vs {
		if len(v.Shape) != 2 {
			return nil, fmt.Errorf("case %s: input %q has shape %v, want (B, L)", c.Name, names[k], v.Shape)
		}
		out[k] = rl.MatrixOf(v.Shape[0], v.Shape[1], v.Data)
		if k > 0 && (out[k].B != out[0].B || out[k].L != out[0].L) {
			return nil, fmt.Errorf("case %s: input %q has shape %v, %q has %v", c.Name, names[k], v.Shape, names[0], vs[0].Shape)
		}
	}
	return out, nil
}

// logitsInput returns input "logits" of c, shape (B, L, V).
func logitsInput(c *golden.Case) (rl.Logits, error) {
	v, err := c.Input("logits")
	if err != nil {
		return rl.Logits{}, err
	}
	if len(v.Shape) != 3 || v.Shape[2] == 0 {
		return rl.Logits{}, fmt.Errorf("case %s: logits have shape %v, want (B, L, V)", c.Name, v.Shape)
	}
	return rl.Logits{B: v.Shape[0], L: v.Shape[1], V: v.Shape[2], Data: v.Data}, nil
}

// aggParams reads loss_agg_mode and verl agg_loss's optional global-batch arguments.
func aggParams(c *golden.Case) (rl.AggMode, rl.AggOptions, error) {
	s, err := c.String("loss_agg_mode", string(rl.TokenMean))
	if err != nil {
		return "", rl.AggOptions{}, err
	}
	mode, err := rl.ParseAggMode(s)
	if err != nil {
		return "", rl.AggOptions{}, fmt.Errorf("case %s: %w", c.Name, err)
	}
	var opt rl.AggOptions
	if opt.DPSize, err = c.Int("dp_size", 1); err != nil {
		return "", rl.AggOptions{}, err
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{
		{"batch_num_tokens", &opt.BatchNumTokens},
		{"global_batch_size", &opt.GlobalBatchSize},
		{"loss_scale_factor", &opt.LossScaleFactor},
	} {
		if *f.dst, err = c.Float(f.name, 0); err != nil {
			return "", rl.AggOptions{}, err
		}
	}
	return mode, opt, nil
}

func grpoParams(c *golden.Case) (eps float64, norm bool, err error) {
	if eps, err = c.Float("epsilon", 1e-6); err != nil {
		return 0, false, err
	}
	norm, err = c.Bool("norm_adv_by_std_in_grpo", true)
	return eps, norm, err
}

// ---- building results ----

func tensor(m rl.Matrix) *golden.Value { return golden.Tensor([]int{m.B, m.L}, m.Data) }

func outputs(kv ...any) *golden.Result {
	res := &golden.Result{Outputs: map[string]*golden.Value{}}
	for k := 0; k < len(kv); k += 2 {
		name := kv[k].(string)
		switch v := kv[k+1].(type) {
		case rl.Matrix:
			res.Outputs[name] = tensor(v)
		case float64:
			res.Outputs[name] = golden.Scalar(v)
		case *golden.Value:
			res.Outputs[name] = v
		default:
			panic(fmt.Sprintf("verl.outputs: %s has type %T", name, v))
		}
	}
	return res
}

// ---- the functions ----

func goldenMaskedSum(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "values", "mask")
	if err != nil {
		return nil, err
	}
	if ax := c.Params["axis"]; ax != nil {
		return nil, fmt.Errorf("case %s: masked_sum axis %v not supported here", c.Name, ax)
	}
	return outputs("result", rl.MaskedSum(in[0], in[1])), nil
}

func goldenMaskedMean(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "values", "mask")
	if err != nil {
		return nil, err
	}
	if c.Params["axis"] == nil {
		return outputs("result", rl.MaskedMean(in[0], in[1])), nil
	}
	ax, err := c.Int("axis", 0)
	if err != nil {
		return nil, err
	}
	if ax != -1 && ax != 1 {
		return nil, fmt.Errorf("case %s: masked_mean axis %d, want None or -1", c.Name, ax)
	}
	rows := rl.MaskedRowMeans(in[0], in[1])
	return outputs("result", golden.Tensor([]int{len(rows)}, rows)), nil
}

func goldenMaskedVar(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "values", "mask")
	if err != nil {
		return nil, err
	}
	unbiased, err := c.Bool("unbiased", true)
	if err != nil {
		return nil, err
	}
	v, err := rl.MaskedVar(in[0], in[1], unbiased)
	if err != nil {
		return nil, err
	}
	return outputs("result", v), nil
}

func goldenMaskedWhiten(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "values", "mask")
	if err != nil {
		return nil, err
	}
	shift, err := c.Bool("shift_mean", true)
	if err != nil {
		return nil, err
	}
	w, err := rl.MaskedWhiten(in[0], in[1], shift)
	if err != nil {
		return nil, err
	}
	return outputs("result", w), nil
}

func goldenGAE(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "token_level_rewards", "values", "response_mask")
	if err != nil {
		return nil, err
	}
	gamma, err := c.Float("gamma", 1)
	if err != nil {
		return nil, err
	}
	lam, err := c.Float("lam", 1)
	if err != nil {
		return nil, err
	}
	adv, ret, err := rl.GAE(in[0], in[1], in[2], gamma, lam)
	if err != nil {
		return nil, err
	}
	raw := rl.GAERawAdvantages(in[0], in[1], in[2], gamma, lam)
	return outputs("advantages", adv, "returns", ret, "derived_raw_advantages_before_whiten", raw), nil
}

// goldenGroup adapts a group (outcome) estimator: inputs token_level_rewards, response_mask,
// index; outputs advantages == returns.
func goldenGroup(f func(c *golden.Case, rewards, mask rl.Matrix, index []int) (rl.Matrix, error)) golden.Func {
	return func(c *golden.Case) (*golden.Result, error) {
		in, err := matrices(c, "token_level_rewards", "response_mask")
		if err != nil {
			return nil, err
		}
		iv, err := c.Input("index")
		if err != nil {
			return nil, err
		}
		if len(iv.Data) != in[0].B {
			return nil, fmt.Errorf("case %s: %d group ids for %d responses", c.Name, len(iv.Data), in[0].B)
		}
		adv, err := f(c, in[0], in[1], iv.IntData())
		if err != nil {
			return nil, err
		}
		return outputs("advantages", adv, "returns", adv), nil
	}
}

func goldenReinforcePP(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "token_level_rewards", "response_mask")
	if err != nil {
		return nil, err
	}
	gamma, err := c.Float("gamma", 1)
	if err != nil {
		return nil, err
	}
	adv, ret, err := rl.ReinforcePlusPlus(in[0], in[1], gamma, rl.ReturnsResetAtMask)
	if err != nil {
		return nil, err
	}
	return outputs("advantages", adv, "returns", ret), nil
}

func goldenReMax(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "token_level_rewards", "response_mask")
	if err != nil {
		return nil, err
	}
	b, err := c.Input("reward_baselines")
	if err != nil {
		return nil, err
	}
	if len(b.Data) != in[0].B {
		return nil, fmt.Errorf("case %s: %d baselines for %d responses", c.Name, len(b.Data), in[0].B)
	}
	adv, ret := rl.ReMaxAdvantage(in[0], in[1], b.Data)
	return outputs("advantages", adv, "returns", ret), nil
}

func goldenKLPenalty(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "logprob", "ref_logprob", "mask_for_grad")
	if err != nil {
		return nil, err
	}
	name, err := c.String("kl_penalty", "kl")
	if err != nil {
		return nil, err
	}
	est, err := rl.ParseKLEstimator(name)
	if err != nil {
		return nil, err
	}
	kl, d := rl.KLPenalty(in[0], in[1], est)
	// grad of Σ kl·mask_for_grad.
	for k, m := range in[2].Data {
		d.Data[k] *= m
	}
	return outputs("kl", kl, "grad_masked_sum_wrt_logprob", d), nil
}

func goldenComputeRewards(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "token_level_scores", "old_log_prob", "ref_log_prob")
	if err != nil {
		return nil, err
	}
	beta, err := c.Float("kl_ratio", 0)
	if err != nil {
		return nil, err
	}
	return outputs("result", rl.KLInReward(in[0], in[1], in[2], beta)), nil
}

func goldenAggLoss(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "loss_mat", "loss_mask")
	if err != nil {
		return nil, err
	}
	mode, opt, err := aggParams(c)
	if err != nil {
		return nil, err
	}
	loss, grad, err := rl.AggLoss(in[0], in[1], mode, opt)
	if err != nil {
		return nil, err
	}
	return outputs("loss", loss, "grad_wrt_loss_mat", grad), nil
}

func policyOutputs(p rl.PolicyLoss) *golden.Result {
	return outputs("pg_loss", p.Loss, "grad_pg_loss_wrt_log_prob", p.GradLogProb,
		"pg_clipfrac", p.ClipFrac, "pg_clipfrac_lower", p.ClipFracLower, "ppo_kl", p.PPOKL)
}

func goldenPolicyLoss(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "log_prob", "old_log_prob", "advantages", "response_mask")
	if err != nil {
		return nil, err
	}
	mode, opt, err := aggParams(c)
	if err != nil {
		return nil, err
	}
	ratio, err := c.Float("clip_ratio", 0.2)
	if err != nil {
		return nil, err
	}
	clip := rl.PPOClip{}
	if clip.Low, err = c.Float("clip_ratio_low", ratio); err != nil {
		return nil, err
	}
	if clip.High, err = c.Float("clip_ratio_high", ratio); err != nil {
		return nil, err
	}
	if clip.C, err = c.Float("clip_ratio_c", 3); err != nil {
		return nil, err
	}
	p, err := rl.PPOClipLoss(in[0], in[1], in[2], in[3], clip, mode, opt)
	if err != nil {
		return nil, err
	}
	return policyOutputs(p), nil
}

func goldenGSPO(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "log_prob", "old_log_prob", "advantages", "response_mask")
	if err != nil {
		return nil, err
	}
	low, err := c.Float("clip_ratio_low", 3e-4)
	if err != nil {
		return nil, err
	}
	high, err := c.Float("clip_ratio_high", 4e-4)
	if err != nil {
		return nil, err
	}
	return policyOutputs(rl.GSPOLoss(in[0], in[1], in[2], in[3], low, high, rl.AggOptions{})), nil
}

func goldenGPGLoss(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "log_prob", "advantages", "response_mask")
	if err != nil {
		return nil, err
	}
	mode, opt, err := aggParams(c)
	if err != nil {
		return nil, err
	}
	p, err := rl.GPGLoss(in[0], in[1], in[2], mode, opt)
	if err != nil {
		return nil, err
	}
	return outputs("pg_loss", p.Loss, "grad_pg_loss_wrt_log_prob", p.GradLogProb), nil
}

func goldenValueLoss(c *golden.Case) (*golden.Result, error) {
	in, err := matrices(c, "vpreds", "returns", "values", "response_mask")
	if err != nil {
		return nil, err
	}
	mode, opt, err := aggParams(c)
	if err != nil {
		return nil, err
	}
	clip, err := c.Float("cliprange_value", 0.5)
	if err != nil {
		return nil, err
	}
	v, err := rl.ClippedValueLoss(in[0], in[1], in[2], in[3], clip, mode, opt)
	if err != nil {
		return nil, err
	}
	return outputs("vf_loss", v.Loss, "grad_vf_loss_wrt_vpreds", v.GradVPreds, "vf_clipfrac", v.ClipFrac), nil
}

func goldenEntropy(c *golden.Case) (*golden.Result, error) {
	z, err := logitsInput(c)
	if err != nil {
		return nil, err
	}
	return outputs("entropy", rl.EntropyFromLogits(z)), nil
}

func goldenEntropyLoss(c *golden.Case) (*golden.Result, error) {
	z, err := logitsInput(c)
	if err != nil {
		return nil, err
	}
	in, err := matrices(c, "response_mask")
	if err != nil {
		return nil, err
	}
	mode, opt, err := aggParams(c)
	if err != nil {
		return nil, err
	}
	loss, d, err := rl.EntropyLoss(z, in[0], mode, opt)
	if err != nil {
		return nil, err
	}
	return outputs("entropy_loss", loss, "grad_entropy_loss_wrt_logits", golden.Tensor([]int{z.B, z.L, z.V}, d)), nil
}

func goldenLogProbs(c *golden.Case) (*golden.Result, error) {
	z, err := logitsInput(c)
	if err != nil {
		return nil, err
	}
	in, err := matrices(c, "response_mask")
	if err != nil {
		return nil, err
	}
	lv, err := c.Input("labels")
	if err != nil {
		return nil, err
	}
	labels := lv.IntData()
	if len(labels) != z.B*z.L {
		return nil, fmt.Errorf("case %s: %d labels for logits (%d, %d, %d)", c.Name, len(labels), z.B, z.L, z.V)
	}
	for k, y := range labels {
		if y < 0 || y >= z.V {
			return nil, fmt.Errorf("case %s: label %d at flat position %d outside [0, %d)", c.Name, y, k, z.V)
		}
	}
	mask := in[0]
	logp := rl.LogProbsFromLogits(z, labels)
	dLogp := rl.MaskedMeanBackward(mask, 1) // d masked_mean(logp, m)/d logp
	d := make([]float64, len(z.Data))       // (B, L, V)
	rl.LogProbsFromLogitsBackward(d, z, labels, dLogp)
	return outputs("logprobs", logp, "masked_mean_logprob", rl.MaskedMean(logp, mask),
		"grad_masked_mean_logprob_wrt_logits", golden.Tensor([]int{z.B, z.L, z.V}, d)), nil
}
