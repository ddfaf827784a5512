package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentr1/internal/atomicfile"
	"agentr1/internal/jsonl"
	"agentr1/model"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// File names in the run directory.
const (
	PlanFile        = "plan.json"
	ResultFile      = "result.json"
	ResultsJSONFile = "results.json"
	ResultsMDFile   = "results.md"
	metricsFile     = "metrics.jsonl"
	evalsFile       = "evals.jsonl"
)

// UnitResult is a finished unit's figures: one evaluation per evaluation set.
type UnitResult struct {
	Method string                  `json:"method"` // Method.Name
	Seed   uint64                  `json:"seed"`   // the unit's seed
	Evals  []*pipeline.EvalMetrics `json:"evals"`  // named "<method>/<set>" for a baseline, "rl/<set>" for an RL run
	// Curve is every evaluation of an RL run that evaluated during training (--eval-every):
	// the periodic ones and the final, in step order, each set's figures without the per-type
	// groups (Evals has those of the final). It is read back from the unit's evals.jsonl, so a
	// resumed run keeps the points before its interruption; an evaluation the interruption cut
	// short is not redone, and its step is missing.
	Curve   []*pipeline.EvalMetrics `json:"curve,omitempty"`
	RLSteps int                     `json:"rl_steps,omitempty"` // RL steps done (0 for a baseline)
	Seconds float64                 `json:"seconds"`            // wall time of the process that finished the unit
}

// Eval returns the evaluation of set ("heldout", "unseen"), or nil.
func (r *UnitResult) Eval(set string) *pipeline.EvalMetrics {
	for _, m := range r.Evals {
		if m.Set() == set {
			return m
		}
	}
	return nil
}

// Event is what Run and RunUnit report as they go.
type Event struct {
	Kind     string        // "start", "skip", "busy", "done" (a unit), or "record" (a pipeline log record of the unit)
	Unit     Unit          // the unit
	Index    int           // 1-based position of the unit in the plan
	Total    int           // units in the plan
	Estimate time.Duration // "start": the unit's expected time
	Took     time.Duration // "done": the unit's time
	Left     time.Duration // "start", "done": the predicted time of the units after this one
	Result   *UnitResult   // "done", "skip"
	Err      error         // "busy": who holds the unit's claim
	// "record": the pipeline's log record (pipeline.Logger's kind and record).
	RecordKind string
	Record     any // the record itself
}

// Options configure Run and RunUnit.
type Options struct {
	Dir     string      // the run directory
	Rates   Rates       // for the estimates (zero: DefaultRates)
	OnEvent func(Event) // may be nil

	// Several processes sharing Dir (claim.go):
	Wait       time.Duration // how long a unit waits for the SFT base it starts from (0: it fails at once)
	StaleAfter time.Duration // a claim with no heartbeat for this long is taken over (0: DefaultStaleAfter)
	TakeOver   bool          // take over the claim of a unit whatever its age (its holder is known to be dead)
	poll       time.Duration // how often a waiting unit looks for its SFT base (0: 2 s)
}

// Open prepares dir for plan p: a new directory gets p's plan.json; a directory holding an
// experiment continues it with its stored plan (the settings it started with, even if the
// defaults have changed since) when it was started with the same request, and is refused
// otherwise. The worker count is not part of the request's identity: it changes only the
// speed, never the bits, so a process (or a host with other cores) continues the experiment
// with p's own. Processes that open one new directory at once write the same plan.json.
func Open(dir string, p *Plan) (*Plan, error) {
	path := filepath.Join(dir, PlanFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := p.Validate(); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("experiment: %w", err)
		}
		return p, writeJSON(path, p)
	}
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	var stored Plan
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("experiment: %s: %w", path, err)
	}
	if !sameExperiment(stored.Request, p.Request) {
		return nil, fmt.Errorf("experiment: %s holds an experiment started with %+v, not %+v: run it again with the same flags to resume, or choose another --out", dir, stored.Request, p.Request)
	}
	if err := stored.Validate(); err != nil {
		return nil, fmt.Errorf("experiment: %s: %w", path, err)
	}
	stored.Request.Workers, stored.Config.Workers = p.Request.Workers, p.Config.Workers
	return &stored, nil
}

// sameExperiment reports whether requests a and b ask for the same experiment: the same in
// everything but the worker count.
func sameExperiment(a, b Request) bool {
	a.Workers, b.Workers = 0, 0
	return reflect.DeepEqual(a, b)
}

// Run works through the plan's units in opt.Dir (prepared by Open), skipping finished ones and
// those another process holds (Event "busy"), and rewrites results.json and results.md after
// each. When ctx is cancelled, the unit under way stops at its next step boundary with its
// state saved, and the error wraps ctx.Err(); running again continues.
func Run(ctx context.Context, p *Plan, opt Options) (*Results, error) {
	r := newRunner(p, opt)
	defer pipeline.SetParallelism(p.Config)()
	units := p.Units()
	eta := NewETA(p, r.opt.Rates)
	for i, u := range units {
		err := r.do(ctx, u, i, units[i+1:], eta)
		if errors.Is(err, ErrBusy) {
			r.opt.OnEvent(Event{Kind: "busy", Unit: u, Index: i + 1, Total: len(units), Err: err})
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return r.writeResults()
}

// RunUnit runs the one unit of the plan whose ID is id in opt.Dir (prepared by Open), as Run
// would, and merges the tables from every unit finished so far by any process. A finished unit
// is skipped; one whose claim another live process holds is an error wrapping ErrBusy; one
// whose SFT base has not been saved waits up to opt.Wait for it, then fails naming the unit
// that makes it.
func RunUnit(ctx context.Context, p *Plan, id string, opt Options) (*Results, error) {
	units := p.Units()
	i := slices.IndexFunc(units, func(u Unit) bool { return u.ID() == id })
	if i < 0 {
		ids := make([]string, len(units))
		for j, u := range units {
			ids[j] = u.ID()
		}
		return nil, fmt.Errorf("experiment: no unit %q in the plan: want one of %s", id, strings.Join(ids, ", "))
	}
	r := newRunner(p, opt)
	defer pipeline.SetParallelism(p.Config)()
	if err := r.do(ctx, units[i], i, nil, NewETA(p, r.opt.Rates)); err != nil {
		return nil, err
	}
	return r.writeResults()
}

// do runs unit u (at 0-based position i of the plan, rest the units after it) unless it is
// finished: it waits for the SFT base u starts from, claims u, runs it while the claim's
// heartbeat goes on, writes its result.json, merges the tables and releases the claim.
func (r *runner) do(ctx context.Context, u Unit, i int, rest []Unit, eta *ETA) error {
	total := len(r.plan.Units())
	skip := func() (bool, error) {
		res, done, err := r.finished(u)
		if done {
			r.opt.OnEvent(Event{Kind: "skip", Unit: u, Index: i + 1, Total: total, Result: res})
		}
		return done, err
	}
	if done, err := skip(); done || err != nil {
		return err
	}
	if err := r.waitForBase(ctx, u); err != nil {
		return err
	}
	c, err := acquireClaim(r.opt.Dir, u.ID(), r.opt.StaleAfter, r.opt.TakeOver)
	if err != nil {
		return err
	}
	defer c.release()
	// Another process may have finished u between the check above and the claim.
	if done, err := skip(); done || err != nil {
		return err
	}
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go c.heartbeat(uctx, max(r.opt.StaleAfter/5, time.Millisecond), cancel)

	r.opt.OnEvent(Event{Kind: "start", Unit: u, Index: i + 1, Total: total, Estimate: r.plan.Estimate(u, r.opt.Rates), Left: eta.Left(rest)})
	start := time.Now()
	res, err := r.run(uctx, u)
	if err != nil {
		if cause := context.Cause(uctx); errors.Is(cause, errClaimLost) {
			err = cause
		}
		return fmt.Errorf("%s: %w", u.Name(), err)
	}
	took := time.Since(start)
	eta.Done(u, took)
	if res != nil {
		res.Seconds = took.Seconds()
		if err := writeJSON(filepath.Join(r.unitDir(u), ResultFile), res); err != nil {
			return err
		}
	}
	if _, err := r.writeResults(); err != nil {
		return err
	}
	r.opt.OnEvent(Event{Kind: "done", Unit: u, Index: i + 1, Total: total, Took: took, Left: eta.Left(rest), Result: res})
	return nil
}

// waitForBase returns once the SFT base that unit u starts from is saved (at once for an SFT
// unit), polling for up to opt.Wait; after that it fails, naming the unit that makes the base
// and who, if anyone, holds it.
func (r *runner) waitForBase(ctx context.Context, u Unit) error {
	if u.Method == nil {
		return nil
	}
	weights := filepath.Join(r.baseDir(u.Seed), model.WeightsFile)
	sft := Unit{Seed: r.plan.SFTSeed(u.Seed)}
	deadline := time.Now().Add(r.opt.Wait)
	for {
		if _, err := os.Stat(weights); err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for %s: %w", u.Name(), sft.ID(), ctx.Err())
		case <-time.After(min(r.opt.poll, time.Until(deadline))):
		}
	}
	holder := "no process holds it"
	if top, ok, err := currentClaim(r.opt.Dir, sft.ID()); err == nil && ok {
		holder = fmt.Sprintf("claimed by %s, heartbeat %s ago", top.rec, top.age.Round(time.Second))
	}
	return fmt.Errorf("experiment: unit %s starts from the SFT base of unit %s, which has not finished after waiting %s (%s): run unit %s first, or let this one wait for it longer (--wait)",
		u.ID(), sft.ID(), r.opt.Wait, holder, sft.ID())
}

// runner is Run's state: the plan, the options and the current seed's setup (prepared once
// per process, on the seed's first unfinished unit).
type runner struct {
	plan   *Plan
	opt    Options
	setups map[uint64]*pipeline.Setup
}

// newRunner returns the runner of plan p with opt's defaults filled in.
func newRunner(p *Plan, opt Options) *runner {
	if opt.Rates == (Rates{}) {
		opt.Rates = DefaultRates
	}
	if opt.OnEvent == nil {
		opt.OnEvent = func(Event) {}
	}
	if opt.StaleAfter <= 0 {
		opt.StaleAfter = DefaultStaleAfter
	}
	if opt.poll <= 0 {
		opt.poll = 2 * time.Second
	}
	return &runner{plan: p, opt: opt, setups: map[uint64]*pipeline.Setup{}}
}

func (r *runner) seedDir(seed uint64) string {
	return filepath.Join(r.opt.Dir, "seed-"+strconv.FormatUint(seed, 10))
}

// baseDir is the SFT base the runs of seed start from (Plan.SFTSeed's).
func (r *runner) baseDir(seed uint64) string {
	return filepath.Join(r.seedDir(r.plan.SFTSeed(seed)), "sft-base")
}

// unitDir is where unit u keeps its files: the seed's folder for its SFT, else a folder per method.
func (r *runner) unitDir(u Unit) string {
	if u.Method == nil {
		return r.seedDir(u.Seed)
	}
	return filepath.Join(r.seedDir(u.Seed), u.Method.Name)
}

// checkpointDir is where unit u keeps its checkpoints (an SFT's in its seed's folder).
func (r *runner) checkpointDir(u Unit) string { return filepath.Join(r.unitDir(u), "checkpoints") }

// finished reports whether u is done: its result.json exists (for an SFT, the saved SFT base).
func (r *runner) finished(u Unit) (*UnitResult, bool, error) {
	if u.Method == nil {
		_, err := os.Stat(filepath.Join(r.baseDir(u.Seed), model.WeightsFile))
		return nil, err == nil, nil
	}
	path := filepath.Join(r.unitDir(u), ResultFile)
	res, err := readResult(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// A result that is not this unit's ("null", "{}", or a file copied from another unit's
	// folder) would count the unit as done and put no figures, or another's, in its row.
	if res.Method != u.Method.Name || res.Seed != u.Seed {
		return nil, false, fmt.Errorf("experiment: %s: method %q and seed %d, want the unit's %q and %d", path, res.Method, res.Seed, u.Method.Name, u.Seed)
	}
	return res, true, nil
}

func readResult(path string) (*UnitResult, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res UnitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("experiment: %s: %w", path, err)
	}
	return &res, nil
}

// setup returns the setup of seed's runs (Plan.SFTSeed's), preparing it on first use.
func (r *runner) setup(ctx context.Context, seed uint64) (*pipeline.Setup, error) {
	seed = r.plan.SFTSeed(seed)
	if s := r.setups[seed]; s != nil {
		return s, nil
	}
	clear(r.setups) // units go seed by seed: the previous seed's setup is done with
	s, err := pipeline.Prepare(ctx, r.plan.SeedConfig(seed))
	if err != nil {
		return nil, err
	}
	r.setups[seed] = s
	return s, nil
}

// run does unit u and returns its figures (nil for an SFT).
func (r *runner) run(ctx context.Context, u Unit) (*UnitResult, error) {
	dir := r.unitDir(u)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	setup, err := r.setup(ctx, u.Seed)
	if err != nil {
		return nil, err
	}
	if u.Method != nil && u.Method.Kind != KindRL {
		// A baseline unit keeps no checkpoint, so it always starts over: what a run of it that
		// was stopped before its result had logged goes, as an RL unit starting over drops it.
		if err := jsonl.CutBack(r.recordFiles(u), []int64{0, 0}); err != nil {
			return nil, fmt.Errorf("experiment: %w", err)
		}
	}
	log, closeLog, err := r.logger(u)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	cfg := r.plan.SeedConfig(u.Seed)
	if u.Method == nil {
		return nil, r.sft(ctx, u, cfg, setup, log)
	}
	policy, err := model.Load(r.baseDir(u.Seed))
	if err != nil {
		return nil, fmt.Errorf("the SFT base of seed %d: %w", u.Seed, err)
	}
	res := &UnitResult{Method: u.Method.Name, Seed: u.Seed}
	ec := pipeline.EvalConfigFrom(cfg.RL, cfg.EvalBatch)
	ec.Workers = cfg.Workers
	switch u.Method.Kind {
	case KindBase:
		res.Evals, err = pipeline.EvaluateSets(ctx, policy, setup, ec, u.Method.Name, 0, log)
	case KindNaiveRAG:
		res.Evals, err = naiveRAG(ctx, cfg, setup, policy, ec, u.Method.Name, log)
	case KindRL:
		cfg.RL = *u.Method.RL
		cfg.CheckpointDir = r.checkpointDir(u)
		var out *pipeline.Result
		out, err = pipeline.RunFrom(ctx, cfg, pipeline.Start{Setup: setup, Policy: policy, Resume: true}, log)
		if err == nil {
			res.Evals, res.RLSteps = out.Final, out.Trainer.StepsDone
			err = pruneCheckpoints(cfg.CheckpointDir)
		}
		if err == nil {
			warn := func(msg string) {
				r.opt.OnEvent(Event{Kind: "record", Unit: u, RecordKind: "warn", Record: msg})
			}
			res.Curve, err = readCurve(filepath.Join(dir, evalsFile), warn)
		}
	default:
		err = fmt.Errorf("method %s: unknown kind %q", u.Method.Name, u.Method.Kind)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// sft trains seed's SFT base (continuing from its SFT checkpoint if one was saved) and saves
// it with the tokenizer.
func (r *runner) sft(ctx context.Context, u Unit, cfg pipeline.Config, setup *pipeline.Setup, log pipeline.Logger) error {
	cfg.BasePolicy = r.baseDir(u.Seed)
	cfg.CheckpointDir = r.checkpointDir(u)
	policy, err := pipeline.NewPolicy(cfg.Model, setup.Tokenizer, 2*pipeline.MaxRow(cfg, setup), cfg.Seed)
	if err != nil {
		return err
	}
	return pipeline.SFTBase(ctx, cfg, setup, policy, true, log)
}

// naiveRAG evaluates policy on every evaluation set as the Naive RAG baseline: the question
// retrieved once, one turn to answer (pipeline.NaiveRAGProblems).
func naiveRAG(ctx context.Context, cfg pipeline.Config, setup *pipeline.Setup, policy *model.Model, ec pipeline.EvalConfig, name string, log pipeline.Logger) ([]*pipeline.EvalMetrics, error) {
	ec.MaxTurns = 1
	var out []*pipeline.EvalMetrics
	for _, set := range setup.EvalSets {
		probs, err := pipeline.NaiveRAGProblems(ctx, set.Questions, cfg.QAConfig(), set.Tools, setup.Tokenizer, cfg.RL.MaxObsTokens)
		if err != nil {
			return nil, err
		}
		m, _, err := pipeline.Evaluate(ctx, policy, setup.Tokenizer, setup.Specials, probs, ec, name+"/"+set.Name)
		if err != nil {
			return nil, err
		}
		log("eval", m)
		out = append(out, m)
	}
	return out, nil
}

// recordFiles are unit u's record files: its metrics.jsonl and its evals.jsonl.
func (r *runner) recordFiles(u Unit) []string {
	return []string{filepath.Join(r.unitDir(u), metricsFile), filepath.Join(r.unitDir(u), evalsFile)}
}

// logger returns the pipeline.Logger of unit u: SFT and RL step records are appended to the
// unit's metrics.jsonl and evaluations to its evals.jsonl; every record is passed on as an
// Event.
func (r *runner) logger(u Unit) (pipeline.Logger, func(), error) {
	files := r.recordFiles(u)
	metrics, err := os.OpenFile(files[0], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("experiment: %w", err)
	}
	evals, err := os.OpenFile(files[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		metrics.Close()
		return nil, nil, fmt.Errorf("experiment: %w", err)
	}
	var werr error
	write := func(f *os.File, rec any) {
		b, err := json.Marshal(rec)
		if err == nil {
			_, err = f.Write(append(b, '\n'))
		}
		if err != nil && werr == nil {
			werr = err
			r.opt.OnEvent(Event{Kind: "record", Unit: u, RecordKind: "warn", Record: fmt.Sprintf("write %s: %v", f.Name(), err)})
		}
	}
	log := func(kind string, rec any) {
		switch v := rec.(type) {
		case *pipeline.RunState:
			if err := filesState(kind, v, files); err != nil && werr == nil {
				werr = err
				r.opt.OnEvent(Event{Kind: "record", Unit: u, RecordKind: "warn", Record: fmt.Sprintf("%s: %v", kind, err)})
			}
		case pipeline.SFTMetrics, trainer.StepMetrics:
			write(metrics, rec)
		case *pipeline.EvalMetrics:
			write(evals, rec)
		}
		r.opt.OnEvent(Event{Kind: "record", Unit: u, RecordKind: kind, Record: rec})
	}
	return log, func() { metrics.Close(); evals.Close() }, nil
}

// filesState saves into rs how far a unit's record files had got ("save", before a
// checkpoint), or cuts them back to it ("resume" from that checkpoint), so that records the
// stopped process logged after its last checkpoint, a torn last line among them, are not
// left beside the ones the resumed unit logs again. An empty State is the unit's start: the
// files are emptied. (A checkpoint written before units saved their files' sizes holds no
// State, and the pipeline logs no "resume" for it: its files are left as they are.)
func filesState(kind string, rs *pipeline.RunState, files []string) error {
	switch kind {
	case "save":
		sizes, err := jsonl.Sizes(files...)
		if err != nil {
			return err
		}
		rs.State, err = json.Marshal(sizes)
		return err
	case "resume":
		sizes := make([]int64, len(files)) // the unit's start
		if len(rs.State) > 0 {
			if err := json.Unmarshal(rs.State, &sizes); err != nil {
				return fmt.Errorf("the checkpoint's sizes of the unit's files: %w", err)
			}
		}
		return jsonl.CutBack(files, sizes)
	}
	return nil
}

// readCurve reads the RL evaluations ("rl/<set>") of a unit's evals.jsonl in step order, the
// last record of each set and step winning (a resumed run may have logged one set of an
// evaluation it then cut short), without their per-type groups. It returns nil unless the run
// evaluated at more than one step: an evaluation at the end only is the unit's Evals already.
// A torn last line (a process killed mid-write) is skipped and warn told, as agentr1 view
// does (jsonl.Scan); a damaged line before it is an error naming the file and the line.
func readCurve(path string, warn func(string)) ([]*pipeline.EvalMetrics, error) {
	type key struct {
		name string
		step int
	}
	last := map[key]*pipeline.EvalMetrics{}
	err := jsonl.Scan(path, warn, func(_ int, line []byte) error {
		var m pipeline.EvalMetrics
		if err := json.Unmarshal(line, &m); err != nil {
			return err
		}
		if strings.HasPrefix(m.Name, "rl/") {
			m.Groups = nil
			last[key{m.Name, m.Step}] = &m
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	steps := map[int]bool{}
	curve := make([]*pipeline.EvalMetrics, 0, len(last))
	for _, m := range last {
		curve = append(curve, m)
		steps[m.Step] = true
	}
	if len(steps) < 2 {
		return nil, nil
	}
	slices.SortFunc(curve, func(a, b *pipeline.EvalMetrics) int {
		if a.Step != b.Step {
			return a.Step - b.Step
		}
		return strings.Compare(a.Name, b.Name)
	})
	return curve, nil
}

// pruneCheckpoints keeps only the latest RL checkpoint of a finished run (it holds the final
// policy); the others only served to resume.
func pruneCheckpoints(dir string) error {
	latest, err := trainer.LatestCheckpoint(dir)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); p != latest && filepath.Ext(p) == ".ckpt" {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("experiment: %w", err)
			}
		}
	}
	return nil
}

// writeJSON writes v as indented JSON to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("experiment: %s: %w", path, err)
	}
	if err := atomicfile.WriteBytes(path, append(b, '\n')); err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	return nil
}
