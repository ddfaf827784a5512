package experiment

import (
	"slices"
	"strconv"
	"time"

	"agentr1/rl/trainer"
)

// Rates are the seconds a unit of work takes on the reference machine (2 cores, AVX2) at the
// default policy size (hidden 128, 4 layers); Estimate scales them to a plan's policy.
type Rates struct {
	Prepare      float64 // worlds, index, demonstrations, tokenizer: once per seed and process
	SFTStep      float64 // one SFT step of 8 demonstrations
	CopyStep     float64 // one copy step of the warm start (pipeline.SFTConfig.CopySteps, CopyEvery)
	RLRow        float64 // one trajectory of an RL step: rollout and update
	EvalQuestion float64 // one greedy multi-turn evaluation episode
}

// DefaultRates are measured on the default run (2,400 SFT steps in about 11.5 minutes) and on
// `agentr1 experiment` at its defaults (a 40-step GRPO run of 80 trajectories a step with its
// evaluation of 200 questions in under 3 minutes, the SFT base's evaluation of 200 questions
// in 5 s); an estimate only needs them within tens of percent. A copy step's 64 short rows take
// about twice a demonstration step's time (0.23 s against 0.11 s on a Zen 5 with avx512).
var DefaultRates = Rates{Prepare: 5, SFTStep: 0.29, CopyStep: 0.58, RLRow: 0.051, EvalQuestion: 0.02}

// criticFactor is the extra cost of a PPO step (critic forward, backward and update): a 40-step
// PPO run takes about 2.2 times as long as GRPO's.
const criticFactor = 2.2

// Unit is one piece of work of a plan: the SFT of a seed, or one method at one seed.
type Unit struct {
	Seed   uint64  // the seed the unit runs with (pipeline.Config.Seed)
	Method *Method // nil for the SFT of the seed
}

// Name is the unit's name in progress lines: "seed 1 · SFT", "seed 2 · GRPO".
func (u Unit) Name() string {
	label := "SFT"
	if u.Method != nil {
		label = u.Method.Label
	}
	return "seed " + strconv.FormatUint(u.Seed, 10) + " · " + label
}

// ID is the unit's name on the command line and in the claims folder, its folder in the run
// directory with the method's name: "seed-1/sft", "seed-2/grpo".
func (u Unit) ID() string {
	name := "sft"
	if u.Method != nil {
		name = u.Method.Name
	}
	return "seed-" + strconv.FormatUint(u.Seed, 10) + "/" + name
}

// Units lists the plan's units in the order Run does them: seed by seed, the SFT first, then
// every method.
func (p *Plan) Units() []Unit {
	var out []Unit
	for _, s := range p.Seeds {
		if p.SFTSeed(s) == s {
			out = append(out, Unit{Seed: s})
		}
		for i := range p.Methods {
			out = append(out, Unit{Seed: s, Method: &p.Methods[i]})
		}
	}
	return out
}

// UnitsSFTFirst lists the plan's units with every SFT unit first, then the others in Units'
// order: the order to hand units to parallel processes (`agentr1 experiment --list`), so that
// the bases every other unit waits for start first.
func (p *Plan) UnitsSFTFirst() []Unit {
	units := p.Units()
	sft := slices.DeleteFunc(slices.Clone(units), func(u Unit) bool { return u.Method != nil })
	rest := slices.DeleteFunc(units, func(u Unit) bool { return u.Method == nil })
	return append(sft, rest...)
}

// Estimate is the expected time of unit u at rates r. It counts the setup (Prepare) in every
// SFT unit.
func (p *Plan) Estimate(u Unit, r Rates) time.Duration {
	c := p.Config
	scale := float64(c.Model.Hidden*c.Model.Hidden*c.Model.Layers) / (128 * 128 * 4)
	evalQs := float64(c.HeldOut + c.EvalQuestions)
	var s float64
	switch {
	case u.Method == nil:
		s = r.Prepare + (float64(c.SFT.Steps)*r.SFTStep*float64(c.SFT.Batch)/8+float64(c.SFT.TotalSteps()-c.SFT.Steps)*r.CopyStep)*scale
	case u.Method.Kind == KindBase:
		s = evalQs * r.EvalQuestion * scale
	case u.Method.Kind == KindNaiveRAG:
		s = evalQs * r.EvalQuestion * scale / 2 // one turn
	default:
		rl := u.Method.RL
		step := float64(rl.Prompts*rl.N) * r.RLRow * scale
		if rl.Algorithm.NeedsCritic() {
			step *= criticFactor
		}
		if rl.Algorithm == trainer.ReMax {
			step *= 1.2 // the greedy baseline rollout
		}
		s = float64(rl.Steps)*step + evalQs*r.EvalQuestion*scale
	}
	return time.Duration(s * float64(time.Second))
}

// Total is the expected time of the units at rates r.
func (p *Plan) Total(units []Unit, r Rates) time.Duration {
	var d time.Duration
	for _, u := range units {
		d += p.Estimate(u, r)
	}
	return d
}

// ETA predicts the time left from the units done so far in this process: the estimate of the
// remaining units, scaled by how long the finished ones took against their estimates.
type ETA struct {
	plan               *Plan
	rates              Rates
	measured, expected time.Duration
}

// NewETA returns a predictor for plan at rates r.
func NewETA(p *Plan, r Rates) *ETA { return &ETA{plan: p, rates: r} }

// Done records that unit u took d.
func (e *ETA) Done(u Unit, d time.Duration) {
	e.measured += d
	e.expected += e.plan.Estimate(u, e.rates)
}

// Left is the predicted time of the units remaining.
func (e *ETA) Left(remaining []Unit) time.Duration {
	left := e.plan.Total(remaining, e.rates)
	if e.expected > 0 {
		left = time.Duration(float64(left) * float64(e.measured) / float64(e.expected))
	}
	return left
}
