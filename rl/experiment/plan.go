package experiment

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"agentr1/env/world"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// Kind is what a method's unit does with the SFT base.
type Kind string

// The kinds of methods.
const (
	KindBase     Kind = "base-tool-call" // evaluate the SFT base with its search tool (Base Tool Call)
	KindNaiveRAG Kind = "naive-rag"      // evaluate the SFT base retrieving once with the question (Naive RAG)
	KindRL       Kind = "rl"             // train the SFT base by RL, then evaluate
)

// Method is one row of the table.
type Method struct {
	Name     string `json:"name"`               // directory and results.json key: "grpo", "ppo-no-adv-mask"
	Label    string `json:"label"`              // row label in results.md: "GRPO", "PPO w/o advantage mask"
	Kind     Kind   `json:"kind"`               // KindBase, KindNaiveRAG or KindRL
	Ablation bool   `json:"ablation,omitempty"` // listed under the ablations
	// Extra marks a method run only when named (--methods): verl's further objectives, which
	// are not rows of the paper's table.
	Extra bool              `json:"extra,omitempty"`
	RL    *trainer.RLConfig `json:"rl,omitempty"` // the RL settings (KindRL)
}

// Request is what the user asked for; a run directory resumes only the same request.
type Request struct {
	Preset    string   `json:"preset"`              // one of Presets
	Quick     bool     `json:"quick"`               // paper-mini only: fewer RL steps, smaller evaluation sets, one shared SFT base
	Seeds     int      `json:"seeds"`               // how many seeds each method runs (at least 1)
	Workers   int      `json:"workers"`             // Config.Workers of every unit (0: all cores)
	Methods   []string `json:"methods,omitempty"`   // the rows to run, by Method.Name (none: every row)
	Overrides []string `json:"overrides,omitempty"` // "--name=value" settings given on the command line
}

// Flags is the request as the experiment command's flags (the output directory and worker
// count aside): "--preset paper-mini --quick --methods grpo,ppo --rl.steps=40".
func (r Request) Flags() string {
	parts := []string{"--preset " + r.Preset}
	if r.Quick {
		parts = append(parts, "--quick")
	}
	if len(r.Methods) > 0 {
		parts = append(parts, "--methods "+strings.Join(r.Methods, ","))
	}
	return strings.Join(append(parts, r.Overrides...), " ")
}

// Plan is an experiment: the request, the shared settings and the methods. Seed s of the plan
// runs Config with Config.Seed = Seeds[s].
type Plan struct {
	Request Request         `json:"request"` // what the plan was made from
	Seeds   []uint64        `json:"seeds"`   // the run seeds, one per Request.Seeds
	Config  pipeline.Config `json:"config"`  // shared settings; Seed, BasePolicy and CheckpointDir are set per unit
	Methods []Method        `json:"methods"` // the table's rows to run, in order
	// SharedSFT: one setup and SFT base, those of the first seed, serve every seed; the
	// seeds then differ in their RL runs only (rollout sampling, mini-batch order). --quick
	// spends its hour this way: one full warm start instead of three short ones, which
	// would leave the RL methods nothing to improve.
	SharedSFT bool `json:"shared_sft,omitempty"`
}

// Presets lists the presets NewPlan knows.
var Presets = []string{"paper-mini", "tiny"}

// NewPlan returns the plan of a preset, built from pipeline.DefaultConfig() so that the
// experiment runs the current default recipe, with the preset overriding only what it must:
//
//   - paper-mini: the defaults; evaluation only at the end of each RL run; checkpoints every
//     quarter of a run. With quick, a budget of about an hour on 2 cores: one
//     SFT base shared by the seeds (SharedSFT), 20 RL steps per run, 50 questions per
//     evaluation set.
//   - tiny: a world and a policy small enough for a test (seconds per unit).
//
// Seeds are DefaultConfig().Seed, +1, ... (seeds 1, 2, 3 for three). Workers sets
// Config.Workers (0: all cores). Methods, when given, keeps only the rows of those names, in
// the table's order; an unknown name is an error that lists the known ones.
func NewPlan(req Request) (*Plan, error) {
	if req.Seeds < 1 {
		return nil, fmt.Errorf("experiment: %d seeds, want at least 1", req.Seeds)
	}
	if req.Workers < 0 {
		return nil, fmt.Errorf("experiment: workers %d, want 0 (all cores) or more", req.Workers)
	}
	cfg := pipeline.DefaultConfig()
	cfg.Workers = req.Workers
	cfg.EvalEvery = 0
	switch req.Preset {
	case "paper-mini":
		if req.Quick {
			cfg.RL.Steps = 20
			cfg.HeldOut = min(cfg.HeldOut, 50)
			cfg.EvalQuestions = min(cfg.EvalQuestions, 50)
		}
	case "tiny":
		tiny := func(seed uint64, split world.Split) world.Config {
			return world.Config{Seed: seed, Split: split, Countries: 3, Cities: 6, People: 10, Companies: 4, Bands: 3, Distractors: 4, Questions: 24}
		}
		cfg.TrainWorld, cfg.EvalWorld = tiny(cfg.TrainWorld.Seed, world.Train), tiny(cfg.EvalWorld.Seed, world.Eval)
		cfg.Worlds = 1
		cfg.HeldOut, cfg.EvalQuestions, cfg.Demos = 3, 4, 12
		cfg.VocabSize = 400
		cfg.Model = pipeline.ModelConfig{Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 64, InitRange: 0.02}
		cfg.SFT.Steps, cfg.SFT.Batch = 6, 4
		cfg.SFT.CopySteps, cfg.SFT.CopyEvery = 2, 3 // the default's copy rows, first and among the demonstrations
		cfg.RL.Steps, cfg.RL.Prompts, cfg.RL.MaxTurns, cfg.RL.MaxTurnTokens, cfg.RL.MaxLen = 2, 2, 2, 12, 700
		cfg.EvalBatch = 4
	default:
		return nil, fmt.Errorf("experiment: unknown preset %q: want one of %v", req.Preset, Presets)
	}
	cfg.CheckpointEvery = max(1, cfg.RL.Steps/4)
	cfg.SFTCheckpointEvery = max(1, cfg.SFT.TotalSteps()/10)
	p := &Plan{Request: req, Config: cfg, SharedSFT: req.Preset == "paper-mini" && req.Quick}
	for s := range req.Seeds {
		p.Seeds = append(p.Seeds, cfg.Seed+uint64(s))
	}
	methods, err := selectMethods(paperMethods(cfg.RL), req.Methods)
	if err != nil {
		return nil, err
	}
	p.Methods = methods
	return p, nil
}

// MethodNames lists what Request.Methods may hold: the names of the table's rows, in its
// order, then those of the extra methods.
func MethodNames() []string {
	var names []string
	for _, m := range paperMethods(trainer.DefaultRLConfig(trainer.GRPO)) {
		names = append(names, m.Name)
	}
	return names
}

// selectMethods keeps the methods named in names (when names is empty, all of them but the
// extra ones), in the order of all.
func selectMethods(all []Method, names []string) ([]Method, error) {
	if len(names) == 0 {
		return slices.DeleteFunc(slices.Clone(all), func(m Method) bool { return m.Extra }), nil
	}
	known := make([]string, len(all))
	for i, m := range all {
		known[i] = m.Name
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("experiment: unknown method %q: want some of %s", n, strings.Join(known, ", "))
		}
	}
	var out []Method
	for _, m := range all {
		if slices.Contains(names, m.Name) {
			out = append(out, m)
		}
	}
	return out, nil
}

// paperMethods are the rows of the paper's Table 2 and its ablations (§4.3), in its order,
// then the extra methods: the objectives verl added since (GSPO, OPO, GPG, GRPO with pass@k
// advantages), run when named.
func paperMethods(def trainer.RLConfig) []Method {
	rl := func(name, label string, algo trainer.Algorithm, ablation bool, edit func(*trainer.RLConfig)) Method {
		c := AlgorithmRL(def, algo)
		if edit != nil {
			edit(&c)
		}
		return Method{Name: name, Label: label, Kind: KindRL, Ablation: ablation, RL: &c}
	}
	return []Method{
		{Name: "base-tool-call", Label: "Base Tool Call (SFT base)", Kind: KindBase},
		{Name: "naive-rag", Label: "Naive RAG", Kind: KindNaiveRAG},
		rl("ppo", "PPO", trainer.PPO, false, nil),
		rl("grpo", "GRPO", trainer.GRPO, false, nil),
		rl("reinforce++", "REINFORCE++", trainer.ReinforcePP, false, nil),
		rl("reinforce++-baseline", "REINFORCE++ baseline", trainer.ReinforcePPBase, false, nil),
		rl("rloo", "RLOO", trainer.RLOO, false, nil),
		rl("ppo-no-adv-mask", "PPO w/o advantage mask", trainer.PPO, true, func(c *trainer.RLConfig) { c.NoAdvantageMask = true }),
		rl("ppo-no-masks", "PPO w/o both masks", trainer.PPO, true, func(c *trainer.RLConfig) { c.NoAdvantageMask, c.NoLossMask = true, true }),
		rl("grpo-no-loss-mask", "GRPO w/o loss mask", trainer.GRPO, true, func(c *trainer.RLConfig) { c.NoLossMask = true }),
		extra(rl("gspo", "GSPO", trainer.GSPO, false, nil)),
		extra(rl("opo", "OPO", trainer.OPO, false, nil)),
		extra(rl("gpg", "GPG", trainer.GPG, false, nil)),
		extra(rl("grpo-passk", "GRPO pass@k", trainer.GRPOPassK, false, nil)),
	}
}

// extra marks m as run only when named.
func extra(m Method) Method {
	m.Extra = true
	return m
}

// AlgorithmRL returns the RL settings of algo in a run whose settings are def: the algorithm's
// own defaults (trainer.DefaultRLConfig(algo)) plus every change def makes to the defaults of
// its own algorithm, except where algo's defaults differ from those (N and Prompts of
// REINFORCE++, the aggregation of Dr.GRPO): so a tuned recipe (a learning rate, a step count)
// reaches every algorithm while each keeps what is its own.
func AlgorithmRL(def trainer.RLConfig, algo trainer.Algorithm) trainer.RLConfig {
	if algo == def.Algorithm {
		return def
	}
	plain := trainer.DefaultRLConfig(def.Algorithm)
	out := trainer.DefaultRLConfig(algo)
	dv, pv, ov := reflect.ValueOf(def), reflect.ValueOf(plain), reflect.ValueOf(&out).Elem()
	for i := range dv.NumField() {
		tuned := !reflect.DeepEqual(dv.Field(i).Interface(), pv.Field(i).Interface())
		own := !reflect.DeepEqual(ov.Field(i).Interface(), pv.Field(i).Interface())
		if tuned && !own {
			ov.Field(i).Set(dv.Field(i))
		}
	}
	return out
}

// SFTSeed is the seed whose setup and SFT base the runs of seed serve: seed itself, or the
// first seed with SharedSFT.
func (p *Plan) SFTSeed(seed uint64) uint64 {
	if p.SharedSFT && len(p.Seeds) > 0 {
		return p.Seeds[0]
	}
	return seed
}

// SeedConfig is the plan's settings for seed s.
func (p *Plan) SeedConfig(seed uint64) pipeline.Config {
	c := p.Config
	c.Seed = seed
	return c
}

// Validate checks every setting of the plan: the shared settings and each method's RL.
func (p *Plan) Validate() error {
	if err := p.Config.Validate(); err != nil {
		return err
	}
	for _, m := range p.Methods {
		if m.Kind == KindRL {
			if m.RL == nil {
				return fmt.Errorf("experiment: method %s has no RL settings", m.Name)
			}
			if err := m.RL.Validate(); err != nil {
				return fmt.Errorf("experiment: method %s: %w", m.Name, err)
			}
		}
	}
	return nil
}
