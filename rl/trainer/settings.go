package trainer

import "fmt"

// The settings below are names in config.json and on the command line, and typed values in
// the code: each type lists its values as constants, parses (and so checks) a name with its
// Parse function, and reads and writes JSON and flags through UnmarshalText / MarshalText, so
// a misspelt value is refused where it is read, naming the accepted ones, and a config.json
// written before the types existed still loads.

// setFromText parses b with parse and stores the value in dst: the UnmarshalText of every
// setting type, so each type's Parse is the one place its names are checked.
func setFromText[T any](dst *T, b []byte, parse func(string) (T, error)) error {
	v, err := parse(string(b))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// KLPlacement says where the KL penalty to the reference policy enters the objective.
type KLPlacement string

const (
	// KLAuto places the KL where the paper's scripts do for the algorithm
	// (Algorithm.DefaultKLPlacement).
	KLAuto KLPlacement = "auto"
	// KLInReward subtracts β·KLRewardEstimator (k1 by default) from the reward of every token
	// of the loss mask (verl use_kl_in_reward, apply_kl_penalty). The step does the subtraction
	// itself; it does not call rl.KLInReward, verl's k1-only, unmasked compute_rewards.
	KLInReward KLPlacement = "reward"
	// KLAsLoss adds β·KLEstimator, aggregated like the policy loss, to the loss (verl
	// use_kl_loss).
	KLAsLoss KLPlacement = "loss"
	// KLOff turns the penalty off (and with it the reference model's forward pass).
	KLOff KLPlacement = "none"
)

// ParseKLPlacement returns the placement named s; "" is KLAuto, as it was before the type.
func ParseKLPlacement(s string) (KLPlacement, error) {
	switch p := KLPlacement(s); p {
	case KLAuto, KLInReward, KLAsLoss, KLOff:
		return p, nil
	case "":
		return KLAuto, nil
	}
	return "", fmt.Errorf("unknown KL placement %q (want %s, %s, %s or %s)", s, KLInReward, KLAsLoss, KLAuto, KLOff)
}

// String returns the placement's name.
func (p KLPlacement) String() string { return string(p) }

// MarshalText writes the placement's name.
func (p KLPlacement) MarshalText() ([]byte, error) { return []byte(p), nil }

// UnmarshalText parses a placement's name (ParseKLPlacement).
func (p *KLPlacement) UnmarshalText(b []byte) error { return setFromText(p, b, ParseKLPlacement) }

// KLController says how the KL coefficient β moves during a run.
type KLController string

const (
	// KLFixed keeps β = KLCoef (verl FixedKLController).
	KLFixed KLController = "fixed"
	// KLAdaptive steers β towards a target KL (verl AdaptiveKLController; Ziegler et al. 2019,
	// arXiv 1909.08593): see AdaptiveKLUpdate.
	KLAdaptive KLController = "adaptive"
)

// ParseKLController returns the controller named s; "" is KLFixed, as before the setting.
func ParseKLController(s string) (KLController, error) {
	switch k := KLController(s); k {
	case KLFixed, KLAdaptive:
		return k, nil
	case "":
		return KLFixed, nil
	}
	return "", fmt.Errorf("unknown KL controller %q (want %s or %s)", s, KLFixed, KLAdaptive)
}

// String returns the controller's name.
func (k KLController) String() string { return string(k) }

// MarshalText writes the controller's name.
func (k KLController) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText parses a controller's name (ParseKLController).
func (k *KLController) UnmarshalText(b []byte) error { return setFromText(k, b, ParseKLController) }

// OldLogProbSource says where the "old" log-probs of the PPO ratio come from.
type OldLogProbSource string

const (
	// OldLogProbsRecompute runs the policy over the step's batch before the update, as verl
	// does.
	OldLogProbsRecompute OldLogProbSource = "recompute"
	// OldLogProbsSampled takes the log-probs the rollout sampled with: the same numbers
	// (token-in, token-out, both at the rollout's temperature) without the extra forward pass.
	OldLogProbsSampled OldLogProbSource = "sampled"
)

// ParseOldLogProbSource returns the source named s.
func ParseOldLogProbSource(s string) (OldLogProbSource, error) {
	switch o := OldLogProbSource(s); o {
	case OldLogProbsRecompute, OldLogProbsSampled:
		return o, nil
	}
	return "", fmt.Errorf("unknown old log-prob source %q (want %s or %s)", s, OldLogProbsRecompute, OldLogProbsSampled)
}

// String returns the source's name.
func (o OldLogProbSource) String() string { return string(o) }

// MarshalText writes the source's name.
func (o OldLogProbSource) MarshalText() ([]byte, error) { return []byte(o), nil }

// UnmarshalText parses a source's name (ParseOldLogProbSource).
func (o *OldLogProbSource) UnmarshalText(b []byte) error {
	return setFromText(o, b, ParseOldLogProbSource)
}

// MiniBatchOrder is how the update cuts a step's rows into its MiniBatches mini-batches.
type MiniBatchOrder string

const (
	// MiniBatchesByLength sorts the rows by prompt + response length first, so each
	// mini-batch pads little (ties and the order of the mini-batches shuffled).
	MiniBatchesByLength MiniBatchOrder = "length"
	// MiniBatchesByRow cuts them in the batch's row order, whole groups together, as verl's
	// dp_actor.update_policy does (batch.split(ppo_mini_batch_size)).
	MiniBatchesByRow MiniBatchOrder = "rows"
)

// ParseMiniBatchOrder returns the order named s; "" (a config.json written before the
// setting existed) is length, what those runs did.
func ParseMiniBatchOrder(s string) (MiniBatchOrder, error) {
	switch o := MiniBatchOrder(s); o {
	case MiniBatchesByLength, MiniBatchesByRow:
		return o, nil
	case "":
		return MiniBatchesByLength, nil
	}
	return "", fmt.Errorf("unknown mini-batch order %q (want %s or %s)", s, MiniBatchesByLength, MiniBatchesByRow)
}

// String returns the order's name.
func (o MiniBatchOrder) String() string { return string(o) }

// MarshalText writes the order's name.
func (o MiniBatchOrder) MarshalText() ([]byte, error) { return []byte(o), nil }

// UnmarshalText parses an order's name (ParseMiniBatchOrder).
func (o *MiniBatchOrder) UnmarshalText(b []byte) error {
	return setFromText(o, b, ParseMiniBatchOrder)
}

// LRDecay is the shape of a learning-rate schedule after its warm-up (Schedule.LR).
type LRDecay string

const (
	DecayCosine   LRDecay = "cosine"   // half a cosine from the peak down to the floor
	DecayLinear   LRDecay = "linear"   // a straight line from the peak down to the floor
	DecayConstant LRDecay = "constant" // the peak throughout
)

// ParseLRDecay returns the decay named s.
func ParseLRDecay(s string) (LRDecay, error) {
	switch d := LRDecay(s); d {
	case DecayCosine, DecayLinear, DecayConstant:
		return d, nil
	}
	return "", fmt.Errorf("unknown learning-rate decay %q (want %s, %s or %s)", s, DecayCosine, DecayLinear, DecayConstant)
}

// String returns the decay's name.
func (d LRDecay) String() string { return string(d) }

// MarshalText writes the decay's name.
func (d LRDecay) MarshalText() ([]byte, error) { return []byte(d), nil }

// UnmarshalText parses a decay's name (ParseLRDecay).
func (d *LRDecay) UnmarshalText(b []byte) error { return setFromText(d, b, ParseLRDecay) }
