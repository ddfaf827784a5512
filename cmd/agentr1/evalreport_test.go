package main

import (
	"bytes"
	"strings"
	"testing"

	"agentr1/env"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// TestPrintByType checks the per-type table of a run offered several tools: a row per question
// type with its EM, each tool's use and its invented answers before and after RL, a tool never
// called as 0, and no invented answers where the evaluations did not count them.
func TestPrintByType(t *testing.T) {
	metrics := func(em, calc float64) *pipeline.EvalMetrics {
		m := &pipeline.EvalMetrics{Groups: map[string]*pipeline.EvalMetrics{}}
		bridge := &pipeline.EvalMetrics{N: 30, EM: 0.1, Tools: map[string]*pipeline.ToolMetrics{"search": {UseRate: 1}}}
		numeric := &pipeline.EvalMetrics{N: 20, EM: trainer.Num(em), Tools: map[string]*pipeline.ToolMetrics{"search": {UseRate: 0.9}},
			Answers: &pipeline.AnswerSources{Episodes: 20, Names: 18, Invented: int(calc * 10)}}
		if calc > 0 {
			numeric.Tools["calculator"] = &pipeline.ToolMetrics{UseRate: trainer.Num(calc)}
		}
		m.Groups["dataset=world"] = &pipeline.EvalMetrics{N: 50}
		m.Groups["type=bridge"], m.Groups["type=year_difference"] = bridge, numeric
		return m
	}
	var out bytes.Buffer
	printByType(&out, "heldout", &setEval{BeforeRL: metrics(0.05, 0), AfterRL: metrics(0.4, 0.85)}, env.ToolNames{"search", "calculator"})
	want := []string{
		"heldout by type",
		"search use",
		"calculator use",
		"  bridge                   30  0.100 → 0.100    1.00 → 1.00     0.00 → 0.00\n",
		"answers invented",
		"  year_difference          20  0.050 → 0.400    0.90 → 0.90     0.00 → 0.85     0/18 → 8/18",
	}
	got := out.String()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the table lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "dataset") {
		t.Errorf("the table lists a dataset group:\n%s", got)
	}
	out.Reset()
	printByType(&out, "unseen", &setEval{AfterRL: metrics(0.4, 0.85)}, env.ToolNames{"search", "calculator"})
	if out.Len() != 0 {
		t.Errorf("a set without its evaluation before RL printed:\n%s", out.String())
	}
}
