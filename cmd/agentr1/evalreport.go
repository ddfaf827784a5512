package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"agentr1/env"
	"agentr1/report"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// evalFile is eval.json: every evaluation of a run, each under the name of the set it was
// run on and the policy it evaluated, so that a reader (and the report page) finds the
// held-out figures after RL at sets.heldout.after_rl whatever order the evaluations ran in.
//
//	{"rl_steps": 40, "starting_policy": "SFT base", "kernels": "avx2",
//	 "sets": {"heldout": {"about": ..., "before_rl": {...}, "after_rl": {...}, "em_gain": 0.25,
//	                      "baselines": {"base_tool_call": {...}, "naive_rag": {...}, "closed_book": {...}}},
//	          "unseen": {...}},
//	 "during_rl": [{"name": "rl/heldout", "step": 20, ...}, ...]}
//
// Steps count updates: an evaluation at step s saw the policy after s RL steps (0: before RL).
type evalFile struct {
	RLSteps        int    `json:"rl_steps"`        // RL steps (updates) run; after_rl evaluated the policy after the last
	StartingPolicy string `json:"starting_policy"` // what before_rl and the baselines evaluated: "SFT base" or "pretrained model"
	// Kernels is the tensor kernel set the run computed with (tensor.KernelName): each set
	// rounds float32 products its own way, so runs on two sets are different draws. Empty in
	// runs written before it was recorded.
	Kernels string              `json:"kernels,omitempty"`
	Sets    map[string]*setEval `json:"sets"` // by set name: "heldout", "unseen"
	// DuringRL are the evaluations between the start and the end of RL (every EvalEvery
	// steps), in the order they ran; each names its set ("rl/heldout") and step.
	DuringRL []*pipeline.EvalMetrics `json:"during_rl"`
}

// setEval is one evaluation set's figures: the policy before and after RL, and the paper's
// baselines run with the starting policy.
type setEval struct {
	About    string                `json:"about"`               // what the set's questions are
	BeforeRL *pipeline.EvalMetrics `json:"before_rl,omitempty"` // the starting policy (absent when a resumed run skipped it)
	AfterRL  *pipeline.EvalMetrics `json:"after_rl,omitempty"`  // the policy after the last RL step
	// EMGain is after_rl.em − before_rl.em, the run's headline figure (absent without both).
	EMGain    *trainer.Num `json:"em_gain,omitempty"`
	Baselines baselines    `json:"baselines"`
}

// baselines are the paper's baselines on one set (docs/PAPER.md section 6), each run with the
// starting policy; absent ones were not run.
type baselines struct {
	BaseToolCall *pipeline.EvalMetrics `json:"base_tool_call,omitempty"` // the starting policy with the search tool, as is
	NaiveRAG     *pipeline.EvalMetrics `json:"naive_rag,omitempty"`      // one search with the question, then the answer
	ClosedBook   *pipeline.EvalMetrics `json:"closed_book,omitempty"`    // the answer without searching
}

// setAbout says what each evaluation set holds.
var setAbout = map[string]string{
	"heldout": "held-out questions: asked of no demonstration and no RL step",
	"unseen":  "questions about a world never trained on: every name is new, so only search can answer",
}

// newEvalFile lays out a run's evaluations as eval.json: before (the starting policy's, named
// "<start phase>/<set>") and after (the final "rl/<set>") RL, the baselines
// ("base-tool-call/<set>", "naive-rag/<set>", "closed-book/<set>"), and every other "rl/..."
// evaluation in logged (the periodic ones) under during_rl.
func newEvalFile(rlSteps int, startingPolicy, kernels string, before, after, baselineEvals, logged []*pipeline.EvalMetrics) *evalFile {
	ev := &evalFile{RLSteps: rlSteps, StartingPolicy: startingPolicy, Kernels: kernels, Sets: map[string]*setEval{}, DuringRL: []*pipeline.EvalMetrics{}}
	set := func(m *pipeline.EvalMetrics) *setEval {
		name := m.Set()
		if ev.Sets[name] == nil {
			ev.Sets[name] = &setEval{About: setAbout[name]}
		}
		return ev.Sets[name]
	}
	for _, m := range before {
		set(m).BeforeRL = m
	}
	for _, m := range after {
		set(m).AfterRL = m
	}
	for _, m := range baselineEvals {
		s := set(m)
		switch {
		case strings.HasPrefix(m.Name, "base-tool-call/"):
			s.Baselines.BaseToolCall = m
		case strings.HasPrefix(m.Name, "naive-rag/"):
			s.Baselines.NaiveRAG = m
		case strings.HasPrefix(m.Name, "closed-book/"):
			s.Baselines.ClosedBook = m
		}
	}
	for _, s := range ev.Sets {
		if s.BeforeRL != nil && s.AfterRL != nil {
			gain := s.AfterRL.EM - s.BeforeRL.EM
			s.EMGain = &gain
		}
	}
	final := map[*pipeline.EvalMetrics]bool{}
	for _, m := range after {
		final[m] = true
	}
	for _, m := range logged {
		if strings.HasPrefix(m.Name, "rl/") && !final[m] {
			ev.DuringRL = append(ev.DuringRL, m)
		}
	}
	return ev
}

// printByType prints one set's EM, each tool's use rate and the answers invented (of those
// other than yes or no, the ones written nowhere earlier in the episode: pipeline.AnswerSources)
// by question type, before and after RL, for a run offered several tools: whether the agent
// learned which questions need which tool (the calculator on the numeric types, and not on the
// others), and which types it stopped reading for, shows only type by type. A set without both
// evaluations prints nothing.
func printByType(w io.Writer, name string, s *setEval, tools env.ToolNames) {
	if s == nil || s.BeforeRL == nil || s.AfterRL == nil {
		return
	}
	header := fmt.Sprintf("%-24s %4s  %-15s", name+" by type", "n", "EM before/after")
	for _, tool := range tools {
		header += fmt.Sprintf("  %-15s", tool+" use")
	}
	header += "  answers invented"
	fmt.Fprintln(w, strings.TrimRight(header, " "))
	for _, key := range slices.Sorted(maps.Keys(s.AfterRL.Groups)) {
		typ, ok := strings.CutPrefix(key, "type=")
		before, after := s.BeforeRL.Groups[key], s.AfterRL.Groups[key]
		if !ok || before == nil {
			continue
		}
		line := fmt.Sprintf("  %-22s %4d  %.3f → %.3f  ", typ, after.N, float64(before.EM), float64(after.EM))
		for _, tool := range tools {
			line += fmt.Sprintf("  %.2f → %.2f   ", toolUse(before, tool), toolUse(after, tool))
		}
		if before.Answers != nil && after.Answers != nil {
			line += fmt.Sprintf("  %d/%d → %d/%d", before.Answers.Invented, before.Answers.Names, after.Answers.Invented, after.Answers.Names)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// toolUse is the fraction of m's episodes that called tool (0 when none did).
func toolUse(m *pipeline.EvalMetrics, tool string) float64 {
	if t := m.Tools[tool]; t != nil {
		return float64(t.UseRate)
	}
	return 0
}

// evalFileKernels returns the kernel set recorded in the eval.json of runDir ("" when the file
// is missing, unreadable or does not record one).
func evalFileKernels(runDir string) string {
	raw, err := os.ReadFile(filepath.Join(runDir, report.EvalFile))
	if err != nil {
		return ""
	}
	var ev struct {
		Kernels string `json:"kernels"`
	}
	if json.Unmarshal(raw, &ev) != nil {
		return ""
	}
	return ev.Kernels
}
