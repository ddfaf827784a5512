package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"agentr1/report"
	"agentr1/rl/pipeline"
)

// TestReportOfACopiedRun trains a tiny run, copies its folder elsewhere and removes the
// original, then views the copy: config.json names the run's own folders relative to it, and
// the page's headline table shows eval.json's figures for each set, before and after RL, the
// gain and the baselines, in that order.
func TestReportOfACopiedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short training")
	}
	dir := t.TempDir()
	orig := filepath.Join(dir, "run")
	args := append(tinyRunArgs(orig), "--rl.steps", "4", "--eval-every", "2", "--checkpoint-every", "4")
	var out bytes.Buffer
	if code := run(args, &out, &out); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, out.String())
	}
	// Steps count from 1 everywhere: the console, metrics.jsonl and samples.jsonl (eval.json
	// below); every sample carries its question's gold answers.
	if !strings.Contains(out.String(), "rl step   1/4 ") || !strings.Contains(out.String(), "rl step   4/4 ") {
		t.Errorf("console: RL step lines do not run 1/4 .. 4/4:\n%s", out.String())
	}
	var steps []int
	for _, m := range rlSteps(t, filepath.Join(orig, report.MetricsFile)) {
		steps = append(steps, int(m["step"].(float64)))
	}
	if fmt.Sprint(steps) != "[1 2 3 4]" {
		t.Errorf("metrics.jsonl: RL steps %v, want [1 2 3 4]", steps)
	}
	samples, err := report.ReadSamples(filepath.Join(orig, report.SamplesFile))
	if err != nil || len(samples) == 0 {
		t.Fatalf("samples.jsonl: %d samples (%v)", len(samples), err)
	}
	seen := map[int]bool{}
	for _, s := range samples {
		seen[s.Step] = true
		if len(s.Gold) == 0 || s.Reward != s.OutcomeReward+s.ProcessReward {
			t.Errorf("sample of step %d: gold %q, reward %v = outcome %v + process %v; want the gold answers and the sum", s.Step, s.Gold, s.Reward, s.OutcomeReward, s.ProcessReward)
		}
	}
	if !seen[1] || !seen[4] || seen[0] {
		t.Errorf("samples.jsonl steps %v, want the first (1) and the last (4)", seen)
	}

	copied := filepath.Join(dir, "moved", "run")
	if err := os.CopyFS(copied, os.DirFS(orig)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(orig); err != nil {
		t.Fatal(err)
	}

	var cfg pipeline.Config
	if err := loadConfigFile(filepath.Join(copied, report.ConfigFile), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.CheckpointDir != "checkpoints" || cfg.BasePolicy != "sft-base" {
		t.Errorf("config.json: CheckpointDir %q, BasePolicy %q; want them relative to the run", cfg.CheckpointDir, cfg.BasePolicy)
	}
	if err := readRunConfig(copied, &cfg); err != nil || cfg.BasePolicy != filepath.Join(copied, "sft-base") {
		t.Errorf("readRunConfig: BasePolicy %q (%v), want it inside the copy", cfg.BasePolicy, err)
	}

	pagePath := filepath.Join(dir, "page.html")
	out.Reset()
	if code := run([]string{"view", copied, "--out", pagePath}, &out, &out); code != 0 {
		t.Fatalf("view of the copy: exit %d\n%s", code, out.String())
	}
	raw, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	var ev evalFile
	evRaw, err := os.ReadFile(filepath.Join(copied, report.EvalFile))
	if err == nil {
		err = json.Unmarshal(evRaw, &ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	if ev.RLSteps != 4 || len(ev.Sets) != 2 || len(ev.DuringRL) != 2 {
		t.Fatalf("eval.json: %d RL steps, %d sets, %d evaluations during RL; want 4, 2 (held-out, unseen) and 2 (step 2)", ev.RLSteps, len(ev.Sets), len(ev.DuringRL))
	}
	for _, m := range ev.DuringRL {
		if m.Step != 2 {
			t.Errorf("eval.json: %s during RL at step %d, want 2", m.Name, m.Step)
		}
	}

	// The headline table: per set, an EM row (n first) and an F1 row.
	start := strings.Index(page, `<table class="headline">`)
	if start < 0 {
		t.Fatalf("the page has no headline table")
	}
	table := page[start : start+strings.Index(page[start:], "</table>")]
	cell := regexp.MustCompile(`<td[^>]*class="num[^"]*"[^>]*>([^<]*)</td>`)
	var got []string
	for _, m := range cell.FindAllStringSubmatch(table, -1) {
		got = append(got, html.UnescapeString(m[1]))
	}
	f3 := func(m *pipeline.EvalMetrics, em bool) string {
		if em {
			return fmt.Sprintf("%.3f", float64(m.EM))
		}
		return fmt.Sprintf("%.3f", float64(m.F1))
	}
	var want []string
	for _, name := range []string{"heldout", "unseen"} {
		s := ev.Sets[name]
		if s == nil || s.BeforeRL == nil || s.AfterRL == nil || s.Baselines.ClosedBook == nil {
			t.Fatalf("eval.json lacks figures of set %s: %s", name, evRaw)
		}
		if !strings.Contains(table, ">"+map[string]string{"heldout": "held-out", "unseen": "unseen"}[name]+"<") {
			t.Errorf("headline table does not name set %s", name)
		}
		want = append(want, fmt.Sprint(s.AfterRL.N))
		for _, em := range []bool{true, false} {
			d := float64(s.AfterRL.F1 - s.BeforeRL.F1)
			if em {
				d = float64(*s.EMGain)
			}
			gain := fmt.Sprintf("%+.3f", d)
			if d < 0.0005 && d > -0.0005 {
				gain = "+0.000"
			}
			want = append(want, f3(s.BeforeRL, em), f3(s.AfterRL, em), gain,
				f3(s.Baselines.BaseToolCall, em), f3(s.Baselines.NaiveRAG, em), f3(s.Baselines.ClosedBook, em))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("headline table cells\n got %q\nwant %q (from eval.json)", got, want)
	}
	for _, want := range []string{"<title>moved/run · agentr1 report</title>", "held-out: EM gain over the SFT base", "unseen: EM gain over the SFT base",
		`<div class="label">RL steps</div><div class="value">4</div>`, "EM during RL"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
