package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"agentr1/report"
	"agentr1/rl/pipeline"
)

// TestAtDefaults: a plain `agentr1 train` (any seed, output folder or evaluation interval) is
// the default run whose spread the summary quotes; a changed setting is not.
func TestAtDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--seed", "3", "--eval-every", "0", "--workers", "1", "--shards", "3", "--checkpoint-every", "7"}, true},
		{[]string{"--rl.steps", "10"}, false},
		{[]string{"--algo", "ppo"}, false},
		{[]string{"--sft.steps", "100"}, false},
	} {
		a, err := parseTrainArgs(append(c.args, "--out", dir), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := atDefaults(a.cfg); got != c.want {
			t.Errorf("atDefaults(%v) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestDefaultRunGainMatchesResults keeps the spread the summary quotes for each kernel set
// equal to the one docs/RESULTS.md reports for the default run on it.
func TestDefaultRunGainMatchesResults(t *testing.T) {
	doc, err := os.ReadFile("../../docs/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ") // a phrase may break across lines
	for kernels, gains := range defaultRunGains {
		re := regexp.MustCompile(`(?i)over seeds ` + regexp.QuoteMeta(defaultRunSeeds) + ` on ` + kernels +
			`: held-out \+(\d+) ± (\d+) points, unseen \+(\d+) ± (\d+) points`)
		m := re.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("docs/RESULTS.md: no line matching %q", re)
			continue
		}
		num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		want := map[string]report.Spread{"heldout": {Mean: num(m[1]), SD: num(m[2])}, "unseen": {Mean: num(m[3]), SD: num(m[4])}}
		for set, w := range want {
			g := gains[set]
			if math.Round(g.Mean) != w.Mean || math.Round(g.SD) != w.SD {
				t.Errorf("defaultRunGains[%s][%s] = %+v, docs/RESULTS.md says %+v", kernels, set, g, w)
			}
		}
	}
}

// TestPrintGains: the summary states each set's gain and the default run's spread on the
// run's kernel set (avx512's, as a guide, on a set not measured), and says when the run's
// settings are not the default's.
func TestPrintGains(t *testing.T) {
	dir := t.TempDir()
	a, err := parseTrainArgs([]string{"--out", dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	printGains(&buf, []string{"heldout", "unseen"}, map[string]float64{"heldout": 31, "unseen": math.NaN()}, a.cfg, "avx512")
	out := buf.String()
	for _, want := range []string{"heldout +31 points", "unseen n/a", "seeds " + defaultRunSeeds, "±", "strays from the mean"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	quoted := func(kernels, set string) string { return set + " " + defaultRunGains[kernels][set].String() }
	for kernels, want := range map[string][]string{
		"avx512":  {"the default run on avx512", quoted("avx512", "heldout"), quoted("avx512", "unseen"), "strays from the mean"},
		"avx2":    {"the default run on avx2", quoted("avx2", "heldout"), quoted("avx2", "unseen"), "strays from the mean"},
		"generic": {"the default run on avx512", quoted("avx512", "heldout"), "kernel set (generic) rounds differently"},
		"":        {"the default run on avx512", "kernel set is not recorded"},
	} {
		buf.Reset()
		printGains(&buf, []string{"heldout", "unseen"}, map[string]float64{"heldout": 1, "unseen": 2}, a.cfg, kernels)
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("kernels %q: summary lacks %q:\n%s", kernels, w, buf.String())
			}
		}
	}
	a.cfg.RL.Steps = 5
	buf.Reset()
	printGains(&buf, []string{"heldout", "unseen"}, map[string]float64{"heldout": 1, "unseen": 2}, a.cfg, "avx512")
	if !strings.Contains(buf.String(), "differ from the default") {
		t.Errorf("a non-default run's summary does not say so:\n%s", buf.String())
	}
}

// TestDefaultRunYardstick: the report page of a run on the generated world carries the default
// run's spread, marked as a guide when the settings differ; a run on other data carries none.
func TestDefaultRunYardstick(t *testing.T) {
	c := pipeline.DefaultConfig()
	y := defaultRunYardstick(c, "avx512")
	if y == nil || y.Source != "the default run on avx512, seeds "+defaultRunSeeds || y.Gains["unseen"] != defaultRunGains["avx512"]["unseen"] {
		t.Fatalf("at the defaults on avx512: %+v, want avx512's spread", y)
	}
	if y := defaultRunYardstick(c, "avx2"); y == nil || y.Source != "the default run on avx2, seeds "+defaultRunSeeds || y.Gains["unseen"] != defaultRunGains["avx2"]["unseen"] {
		t.Errorf("at the defaults on avx2: %+v, want avx2's spread", y)
	}
	if y := defaultRunYardstick(c, "generic"); y == nil || !strings.Contains(y.Source, "another kernel set") || y.Gains["unseen"] != defaultRunGains["avx512"]["unseen"] {
		t.Errorf("at the defaults on generic: %+v, want avx512's spread as a guide", y)
	}
	c.RL.Steps = 5
	if y := defaultRunYardstick(c, "avx512"); y == nil || !strings.Contains(y.Source, "other settings") {
		t.Errorf("with 5 RL steps: %+v, want the spread marked as a guide", y)
	}
	c.Data = "hotpotqa"
	if y := defaultRunYardstick(c, "avx512"); y != nil {
		t.Errorf("on hotpotqa: %+v, want none", y)
	}
}

// TestViewShowsYardstick: `agentr1 view` of a run at the defaults puts the default run's spread
// on the run's kernel set (eval.json's kernels) in the summary cards, as the page written at
// the end of training does; without the run's config.json the page goes without it.
func TestViewShowsYardstick(t *testing.T) {
	dir := t.TempDir()
	eval := `{"rl_steps": 240, "starting_policy": "SFT base", "kernels": "avx2", "sets": {"unseen": {
	 "before_rl": {"name": "sft/unseen", "n": 100, "em": 0.1}, "after_rl": {"name": "rl/unseen", "n": 100, "em": 0.24}}}}`
	if err := os.WriteFile(filepath.Join(dir, report.EvalFile), []byte(eval), 0o644); err != nil {
		t.Fatal(err)
	}
	view := func() string {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"view", dir}, &stdout, &stderr); code != 0 {
			t.Fatalf("view: exit %d: %s", code, stderr.String())
		}
		raw, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	want := "the default run on avx2, seeds " + defaultRunSeeds + ":"
	if strings.Contains(view(), want) {
		t.Errorf("without config.json the page shows %q", want)
	}
	if err := writeRunConfig(dir, pipeline.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if page := view(); !strings.Contains(page, want) {
		t.Errorf("a run at the defaults: the page lacks %q", want)
	}
}
