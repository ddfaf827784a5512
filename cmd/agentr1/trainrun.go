package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentr1/internal/jsonl"
	"agentr1/model"
	"agentr1/report"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

// trainRun turns the trainer's records into what a person and the report read: progress bars
// for SFT, a one-line summary per RL step and evaluation lines on stdout, log lines (setup,
// warnings, errors) through log/slog, metrics.jsonl, and at the end eval.json,
// report.html and a short summary.
type trainRun struct {
	args    *trainArgs
	stdout  io.Writer
	logger  *slog.Logger
	metrics *os.File
	sftBar  *progress
	start   time.Time
	evals   []*pipeline.EvalMetrics
	logErr  error
	tok     *tokenizer.Tokenizer // the run's tokenizer, from the "setup" record
	rlStart time.Time            // when the first RL step of this process began
	rlFrom  int                  // RL steps done before it (a resumed run)
	times   phaseTimes           // where this process's time went, for the summary
}

func newTrainRun(a *trainArgs, stdout io.Writer, logger *slog.Logger) (*trainRun, error) {
	f, err := os.OpenFile(filepath.Join(a.out, report.MetricsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &trainRun{args: a, stdout: stdout, logger: logger, metrics: f, start: time.Now()}, nil
}

func (r *trainRun) close() { r.metrics.Close() }

// rlETA is the time the RL phase has left after step v, at the mean rate of the steps this
// process ran (a resumed run counts from the step it resumed after); the evaluations between
// steps are in the rate.
func (r *trainRun) rlETA(v trainer.StepMetrics) string {
	done := v.Step // steps count from 1: after step s, s are done
	if r.rlStart.IsZero() {
		r.rlStart = time.Now().Add(-time.Duration(float64(v.TimeTotal) * float64(time.Second)))
		r.rlFrom = v.Step - 1
	}
	left := r.args.cfg.RL.Steps - done
	if left <= 0 {
		return "0s"
	}
	per := time.Since(r.rlStart) / time.Duration(done-r.rlFrom)
	return formatDuration(per * time.Duration(left))
}

// log is the pipeline.Logger of the run.
func (r *trainRun) log(kind string, rec any) {
	r.times.add(rec)
	switch v := rec.(type) {
	case *pipeline.RunState:
		if err := r.runState(kind, v); err != nil && r.logErr == nil {
			r.logErr = err
			r.logger.Error("resume: the output files not restored", "err", err)
		}
	case *pipeline.Setup:
		r.tok = v.Tokenizer
	case *trainer.StepBatch:
		if r.tok != nil && r.keepSamples(v.Step) {
			path := filepath.Join(r.args.out, report.SamplesFile)
			if err := report.WriteSamples(path, reportSamples(v, r.tok)); err != nil && r.logErr == nil {
				r.logErr = err
				r.logger.Error("samples not written", "err", err)
			}
		}
	case string:
		switch kind {
		case "checkpoint":
			// Below the default level: a checkpoint line at every save would break the progress
			// bar; an interrupted run prints where it saved, and the run folder lists them.
			r.logger.Debug("checkpoint saved", "path", v)
		case "warn":
			r.logger.Warn(v)
		default:
			r.logger.Info(v)
		}
	case pipeline.SFTMetrics:
		r.writeMetric(v)
		if r.sftBar == nil {
			r.sftBar = newProgress(r.stdout, "sft", r.args.cfg.SFT.TotalSteps(), "steps")
			// A resumed SFT starts past step 1: the rate counts this process's steps, from
			// the start of the first one.
			r.sftBar.from = v.Step - 1
			r.sftBar.start = time.Now().Add(-time.Duration(float64(v.TimeTotal) * float64(time.Second)))
		}
		r.sftBar.update(v.Step, fmt.Sprintf("loss %.3f", float64(v.Loss)))
	case trainer.StepMetrics:
		r.writeMetric(v)
		fmt.Fprintf(r.stdout, "%s step %3d/%d  reward %+.3f±%.3f  em %.3f  fmt %.2f  turns %.2f  len %4.0f  ent %.3f  kl %.4f  clip %.3f  gnorm %.2f  %5.0f tok/s  %.1fs  ETA %s\n",
			v.Phase, v.Step, r.args.cfg.RL.Steps, float64(v.RewardMean), float64(v.RewardStd), float64(v.EM), float64(v.FormatRate),
			float64(v.Turns), float64(v.ResponseLen), float64(v.Entropy), float64(v.ApproxKL), float64(v.ClipFrac),
			float64(v.GradNorm), float64(v.TokensPerSec), float64(v.TimeTotal), r.rlETA(v))
	case *pipeline.EvalMetrics:
		r.evals = append(r.evals, v)
		printEvalLine(r.stdout, v)
	default:
		r.logger.Info(kind, "record", fmt.Sprint(rec))
	}
}

// outputState is how far the run's output had got at a checkpoint (pipeline.RunState): the
// sizes of the files it appends to and the evaluations logged so far. A run resumed from the
// checkpoint cuts the files back to those sizes (dropping what the stopped process logged
// after it, which the resumed one logs again) and takes the evaluations up, so that its
// files end as an uninterrupted run's.
type outputState struct {
	MetricsSize int64                   `json:"metrics_size"`
	SamplesSize int64                   `json:"samples_size"`
	Evals       []*pipeline.EvalMetrics `json:"evals"`
}

// runState saves the output state into rs ("save") or restores it from rs ("resume").
func (r *trainRun) runState(kind string, rs *pipeline.RunState) error {
	files := []string{r.metrics.Name(), filepath.Join(r.args.out, report.SamplesFile)}
	switch kind {
	case "save":
		sizes, err := jsonl.Sizes(files...)
		if err != nil {
			return err
		}
		rs.State, err = json.Marshal(outputState{MetricsSize: sizes[0], SamplesSize: sizes[1], Evals: r.evals})
		return err
	case "resume":
		var st outputState // an empty State, the run's start, leaves it zero
		if len(rs.State) == 0 {
			r.logger.Warn("no checkpoint to resume from: the run starts over", "checkpoints", r.args.cfg.CheckpointDir)
		} else if err := json.Unmarshal(rs.State, &st); err != nil {
			return fmt.Errorf("checkpoint's output state: %w", err)
		}
		if err := jsonl.CutBack(files, []int64{st.MetricsSize, st.SamplesSize}); err != nil {
			return err
		}
		r.evals = st.Evals
	}
	return nil
}

// printEvalLine prints one evaluation's figures as a human line.
func printEvalLine(w io.Writer, v *pipeline.EvalMetrics) {
	fmt.Fprintf(w, "eval %-22s step %3d  EM %.3f  F1 %.3f  format %.2f  turns %.2f  searches %.2f  (n=%d)\n",
		v.Name, v.Step, float64(v.EM), float64(v.F1), float64(v.FormatRate), float64(v.Turns), float64(v.Searches), v.N)
}

// keepSamples reports whether step's trajectories go into samples.jsonl: the first two steps,
// every fifth and the last, so the report can compare early and late behaviour.
func (r *trainRun) keepSamples(step int) bool {
	return step <= 2 || step%5 == 0 || step >= r.args.cfg.RL.Steps
}

func (r *trainRun) writeMetric(v any) {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = r.metrics.Write(append(b, '\n'))
	}
	if err != nil && r.logErr == nil {
		r.logErr = fmt.Errorf("write %s: %w", r.metrics.Name(), err)
		r.logger.Error("metrics not written", "err", r.logErr)
	}
}

// finish evaluates the baselines with the SFT base, writes eval.json and report.html, and
// prints the summary.
func (r *trainRun) finish(ctx context.Context, res *pipeline.Result) error {
	out := r.args.out
	// The final policy and the run's tokenizer, as a Hugging Face folder that `agentr1 eval
	// --model`, transformers and verl read, stored as --save-dtype says (the SFT base was
	// saved so by SFTBase).
	final := filepath.Join(out, "final")
	base := r.args.cfg.BasePolicy // the SFT base; for real data the pretrained model
	from := ""                    // a pretrained folder whose side files final/ copies
	if !pipeline.IsWorldData(r.args.cfg.Data) {
		base, from = r.args.cfg.InitModel, r.args.cfg.InitModel
	}
	dtype, err := pipeline.SaveDtypeOf(r.args.cfg)
	if err != nil {
		return err
	}
	if err := pipeline.SaveModelFolder(final, res.Policy, res.Setup.Tokenizer, dtype, from); err != nil {
		return err
	}
	res.ReleaseTraining() // the run is over: room for the starting policy beside the trained one
	baselines := []*pipeline.EvalMetrics{}
	if basePolicy, err := model.Load(base); err == nil {
		fmt.Fprintf(r.stdout, "evaluating the baselines with %s ...\n", base)
		if baselines, err = pipeline.Baselines(ctx, res.Setup, basePolicy); err != nil {
			return err
		}
		for _, b := range baselines {
			r.log("eval", b)
		}
	} else {
		r.logger.Warn("baselines skipped: no starting policy", "path", base, "err", err)
	}
	start := "SFT base"
	if !pipeline.IsWorldData(r.args.cfg.Data) {
		start = "pretrained model"
	}
	ev := newEvalFile(res.Trainer.StepsDone, start, tensor.KernelName(), res.SFTEval, res.Final, baselines, r.evals)
	if err := writeJSONFile(filepath.Join(out, report.EvalFile), ev); err != nil {
		return err
	}
	reportPath := filepath.Join(out, "report.html")
	if err := report.WriteHTML(out, reportPath, report.Options{Yardstick: defaultRunYardstick(r.args.cfg, ev.Kernels)}); err != nil {
		return err
	}
	r.printSummary(ev, res, reportPath)
	return r.logErr
}

// printAnswerSources writes where the name answers of the policy before and after RL stand
// in their episodes, on each set: read (or named by the question) rather than invented. A
// starting policy that invents most of them is a broken warm start: it returns that warning
// (pipeline.BrokenWarmStart), or "", for the summary to repeat, since it explains a small gain.
func printAnswerSources(w io.Writer, sets []string, ev *evalFile, before string) string {
	count := func(m *pipeline.EvalMetrics) string {
		if m == nil || m.Answers == nil {
			return "n/a"
		}
		a := m.Answers
		return fmt.Sprintf("%d of %d", a.Names-a.Invented, a.Names)
	}
	var cells []string
	var starts []*pipeline.EvalMetrics
	for _, s := range sets {
		e := ev.Sets[s]
		cells = append(cells, fmt.Sprintf("%s %s -> %s", s, count(e.BeforeRL), count(e.AfterRL)))
		if e.BeforeRL != nil {
			starts = append(starts, e.BeforeRL)
		}
	}
	fmt.Fprintf(w, "name answers found earlier in their episodes, not invented (%s -> after RL): %s\n", before, strings.Join(cells, ", "))
	if len(starts) < len(sets) {
		return ""
	}
	return pipeline.BrokenWarmStart(starts)
}

// printWarnings repeats warnings at the run's end, each text once.
func printWarnings(w io.Writer, warnings []string) {
	var said []string
	for _, msg := range warnings {
		if !slices.Contains(said, msg) {
			fmt.Fprintf(w, "warning: %s\n", msg)
			said = append(said, msg)
		}
	}
}

// printSummary closes the run's output: one row per evaluation set with EM (F1) before RL,
// after it and of each baseline; on the generated world, the gains beside the default run's
// seed-to-seed spread; then the warnings about the warm start again, where the time went and
// where the report and the files are.
func (r *trainRun) printSummary(ev *evalFile, res *pipeline.Result, reportPath string) {
	w := r.stdout
	warnings := slices.Clone(res.WarmStart) // logged before RL, a screen or more above
	fmt.Fprintf(w, "\n== agentr1 train: %s, %d RL steps, %s ==\n", r.args.cfg.RL.Algorithm, ev.RLSteps, formatDuration(time.Since(r.start)))
	before := "SFT base"
	if !pipeline.IsWorldData(r.args.cfg.Data) {
		before = "pretrained"
	}
	cell := func(m *pipeline.EvalMetrics) string {
		if m == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.3f (%.3f)", float64(m.EM), float64(m.F1))
	}
	row := func(first string, cells []string) {
		line := fmt.Sprintf("%-9s", first)
		for _, c := range cells {
			line += fmt.Sprintf("  %-15s", c)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	row("EM (F1)", []string{before, "after RL", "Base Tool Call", "Naive RAG", "closed book"})
	for _, fin := range res.Final {
		s := ev.Sets[fin.Set()]
		b := s.Baselines
		var cells []string
		for _, m := range []*pipeline.EvalMetrics{s.BeforeRL, s.AfterRL, b.BaseToolCall, b.NaiveRAG, b.ClosedBook} {
			cells = append(cells, cell(m))
		}
		row(fin.Set(), cells)
	}
	if len(r.args.cfg.Tools) > 1 {
		for _, fin := range res.Final {
			name := fin.Set()
			printByType(w, name, ev.Sets[name], r.args.cfg.Tools)
		}
	}
	if pipeline.IsWorldData(r.args.cfg.Data) {
		var sets []string
		gains := map[string]float64{}
		for _, fin := range res.Final {
			name := fin.Set()
			sets = append(sets, name)
			gains[name] = math.NaN()
			if g := ev.Sets[name].EMGain; g != nil {
				gains[name] = 100 * float64(*g)
			}
		}
		fmt.Fprintln(w)
		printGains(w, sets, gains, r.args.cfg, ev.Kernels)
		if msg := printAnswerSources(w, sets, ev, before); msg != "" {
			warnings = append(warnings, msg)
		}
	}
	printWarnings(w, warnings)
	files := "config.json, metrics.jsonl, eval.json, checkpoints/, sft-base/, final/"
	if !pipeline.IsWorldData(r.args.cfg.Data) {
		files = "config.json, metrics.jsonl, eval.json, checkpoints/, final/"
	}
	fmt.Fprintln(w, r.times.line(time.Since(r.start), string(r.args.cfg.RL.Algorithm)))
	fmt.Fprintf(w, "report: %s\nrun directory: %s (%s)\n", reportPath, r.args.out, files)
}
