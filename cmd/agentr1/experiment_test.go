package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentr1/rl/experiment"
	"agentr1/rl/pipeline"
)

// TestExperimentInterruptResume runs `agentr1 experiment --preset tiny` uninterrupted, then as a
// subprocess interrupted with SIGINT (Ctrl-C) after its first units, then the same command again:
// it must exit 130 saying how to continue, skip the finished units when run again, and end
// with the uninterrupted run's results.json (wall-clock times aside) and a results.md table.
func TestExperimentInterruptResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny experiment twice")
	}
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"experiment", "--preset", "tiny", "--seeds", "1", "--workers", "2", "--out", out}
	}
	whole, stopped := filepath.Join(dir, "whole"), filepath.Join(dir, "stopped")
	var out bytes.Buffer
	if code := run(args(whole), &out, &out); code != 0 {
		t.Fatalf("uninterrupted experiment: exit %d\n%s", code, out.String())
	}

	cmd, sub := startMain(t, args(stopped))
	marker := filepath.Join(stopped, "seed-1", "base-tool-call", experiment.ResultFile)
	waitUntil(t, cmd, sub, marker, func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(sub.String(), "continue with: agentr1 experiment") {
		t.Fatalf("exit %d, want 130 and how to continue:\n%s", code, sub.String())
	}
	if _, err := os.Stat(filepath.Join(stopped, "seed-1", "grpo-no-loss-mask", experiment.ResultFile)); err == nil {
		t.Fatalf("the experiment finished before the interrupt; the test cannot tell:\n%s", sub.String())
	}

	out.Reset()
	if code := run(args(stopped), &out, &out); code != 0 {
		t.Fatalf("resumed experiment: exit %d\n%s", code, out.String())
	}
	for _, s := range []string{"seed 1 · SFT: done before, skipped", "seed 1 · Base Tool Call (SFT base): done before, skipped", "| GRPO w/o loss mask | 1 |"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("resumed output lacks %q:\n%s", s, out.String())
		}
	}
	methods := func(dir string) []byte {
		b, _ := json.Marshal(untimedResults(t, dir).Methods)
		return b
	}
	if g, w := methods(stopped), methods(whole); !bytes.Equal(g, w) {
		t.Errorf("results.json after resume differs from the uninterrupted run:\n%s\n%s", g, w)
	}
}

// TestExperimentUnitsConcurrent runs a tiny plan (two seeds, each with its SFT base) once in
// one process and once through deploy/parallel.sh: every unit its own process, two at a time
// (xargs -P 2), the units of each seed waiting for its SFT base, and one unit's claim left
// stale by a "dead" process. The merged results.json must equal the one-process run's
// (wall-clock times aside), with the stale claim taken over and no claim left.
func TestExperimentUnitsConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny experiment twice")
	}
	for _, tool := range []string{"sh", "xargs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("deploy/parallel.sh needs %s: %v", tool, err)
		}
	}
	dir := t.TempDir()
	flags := func(out string) []string {
		return []string{"--preset", "tiny", "--seeds", "2", "--methods", "base-tool-call,grpo,rloo", "--workers", "1", "--out", out}
	}
	whole, units := filepath.Join(dir, "whole"), filepath.Join(dir, "units")
	var out bytes.Buffer
	if code := run(append([]string{"experiment"}, flags(whole)...), &out, &out); code != 0 {
		t.Fatalf("one-process experiment: exit %d\n%s", code, out.String())
	}

	out.Reset()
	if code := run(append([]string{"experiment", "--list"}, flags(units)...), &out, &out); code != 0 ||
		out.String() != "seed-1/sft\nseed-2/sft\nseed-1/base-tool-call\nseed-1/grpo\nseed-1/rloo\nseed-2/base-tool-call\nseed-2/grpo\nseed-2/rloo\n" {
		t.Fatalf("--list: exit %d\n%s", code, out.String())
	}
	stale := filepath.Join(units, "claims", "seed-2~grpo.claim")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte(`{"host":"gone","pid":1,"since":"2020-01-01T00:00:00Z","token":"dead"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	os.Chtimes(stale, long, long)

	cmd := exec.Command("sh", append([]string{filepath.Join("..", "..", "deploy", "parallel.sh")}, flags(units)...)...)
	cmd.Env = append(os.Environ(), "AGENTR1_TEST_MAIN=1", "AGENTR1="+os.Args[0], "JOBS=2", "WAIT=2m")
	sub, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/parallel.sh: %v\n%s", err, sub)
	}
	if n := strings.Count(string(sub), "(estimate "); n != 8 {
		t.Errorf("%d units started, want each of the 8 once:\n%s", n, sub)
	}
	if left, _ := os.ReadDir(filepath.Join(units, "claims")); len(left) != 0 {
		t.Errorf("claims left after the run: %v", left)
	}
	results := func(dir string) []byte {
		b, _ := json.Marshal(untimedResults(t, dir))
		return b
	}
	if g, w := results(units), results(whole); !bytes.Equal(g, w) {
		t.Errorf("results.json of the units run in parallel differs from the one-process run:\n%s\n%s", g, w)
	}
}

// untimedResults reads an experiment's results.json with every run's wall-clock time set to
// 0: the one figure two runs of the same plan do not share.
func untimedResults(t *testing.T, dir string) *experiment.Results {
	t.Helper()
	res, err := experiment.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Methods {
		for _, r := range m.Runs {
			r.Seconds = 0
		}
	}
	return res
}

// TestExperimentUsage checks the experiment's refusals: unknown preset, a setting the
// experiment decides itself, and a run directory of another request.
func TestExperimentUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown preset", []string{"--preset", "huge"}, 2, "unknown preset"},
		{"fixed setting", []string{"--preset", "tiny", "--seed", "4"}, 2, "--seed is set by the experiment"},
		{"bad setting", []string{"--preset", "tiny", "--rl.steps", "-1"}, 2, "Steps"},
		{"no seeds", []string{"--preset", "tiny", "--seeds", "0"}, 2, "seeds"},
		{"unknown method", []string{"--preset", "tiny", "--methods", "grpo,gpro"}, 2, `unknown method "gpro"`},
		{"missing SFT base", []string{"--preset", "tiny", "--unit", "seed-1/grpo"}, 1, "starts from the SFT base of unit seed-1/sft, which has not finished"},
		{"stale time", []string{"--preset", "tiny", "--unit", "seed-1/sft", "--stale-after", "0s"}, 2, "a stale time of at least 1s"},
		{"unknown unit", []string{"--preset", "tiny", "--unit", "seed-1/grpo-x"}, 2, `--unit "seed-1/grpo-x" is not a unit of this plan`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"experiment", "--out", filepath.Join(dir, tc.name)}, tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q", tc.name, code, stderr.String(), tc.code, tc.want)
		}
	}
	var stdout bytes.Buffer
	if code := run([]string{"experiment", "--preset", "paper-mini", "--quick", "--dry-run"}, &stdout, &stdout); code != 0 ||
		!strings.Contains(stdout.String(), "24 RL runs of 20 steps") || !strings.Contains(stdout.String(), "total") {
		t.Errorf("--dry-run: exit %d\n%s", code, stdout.String())
	}
}

// TestExperimentOverrides checks that --<setting> flags reach the shared settings and every RL
// method, and are recorded in the request (a resumed experiment must be given the same).
func TestExperimentOverrides(t *testing.T) {
	_, plan, err := parseExperimentArgs([]string{"--preset", "tiny", "--seeds", "2", "--rl.steps", "3", "--rl.lr", "0.5", "--sft.steps", "9"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Config.SFT.Steps != 9 || plan.Config.RL.Steps != 3 || len(plan.Seeds) != 2 {
		t.Errorf("shared settings: sft.steps %d rl.steps %d seeds %v", plan.Config.SFT.Steps, plan.Config.RL.Steps, plan.Seeds)
	}
	for _, m := range plan.Methods {
		if m.RL != nil && (m.RL.Steps != 3 || m.RL.LR != 0.5) {
			t.Errorf("%s: steps %d lr %g, want 3 and 0.5", m.Name, m.RL.Steps, m.RL.LR)
		}
	}
	want := []string{"--rl.lr=0.5", "--rl.steps=3", "--sft.steps=9"}
	if got := plan.Request.Overrides; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("recorded overrides %v, want %v", got, want)
	}

	if plan.Config.TrainWorld.Numeric != 0 || plan.Config.EvalWorld.Numeric != 0 {
		t.Errorf("search alone: numeric shares %v, %v, want none", plan.Config.TrainWorld.Numeric, plan.Config.EvalWorld.Numeric)
	}
	// --tools with the calculator: numeric questions where the shares are not given, as train.
	_, plan, err = parseExperimentArgs([]string{"--preset", "tiny", "--tools", "search,calculator", "--eval-world.numeric", "0.5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Config.TrainWorld.Numeric != pipeline.NumericShare || plan.Config.EvalWorld.Numeric != 0.5 {
		t.Errorf("--tools search,calculator --eval-world.numeric 0.5: shares %v, %v, want %v, 0.5",
			plan.Config.TrainWorld.Numeric, plan.Config.EvalWorld.Numeric, pipeline.NumericShare)
	}
	// The preset keeps its RL steps: the task's RL settings are each method's and preset's.
	_, tiny, err := parseExperimentArgs([]string{"--preset", "tiny"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.Config.RL.Steps, tiny.Config.RL.Steps; got != want {
		t.Errorf("--tools search,calculator: RL steps %d, want the preset's %d", got, want)
	}

	// --methods: a comma-separated subset, recorded in the request; without it, every row.
	_, plan, err = parseExperimentArgs([]string{"--preset", "tiny", "--methods", "grpo, ppo-no-adv-mask,"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Methods) != 2 || plan.Methods[0].Name != "grpo" || plan.Methods[1].Name != "ppo-no-adv-mask" ||
		strings.Join(plan.Request.Methods, " ") != "grpo ppo-no-adv-mask" {
		t.Errorf("--methods grpo,ppo-no-adv-mask: methods %v, request %v", plan.Methods, plan.Request.Methods)
	}
	_, plan, err = parseExperimentArgs([]string{"--preset", "tiny"}, &bytes.Buffer{})
	if err != nil || len(plan.Methods) != 10 || plan.Request.Methods != nil {
		t.Errorf("no --methods: %v, %d methods, request %v; want all 10, none recorded", err, len(plan.Methods), plan.Request.Methods)
	}
}

// TestExperimentHelpDefaults checks that `agentr1 help experiment` lists every setting at the
// default the experiment runs: its value in the plan parseExperimentArgs builds for the default
// preset, followed by "; V with --quick" where the --quick plan's differs. eval-every, rl.steps,
// held-out and eval-questions, whose train defaults the experiment overrides, must be listed.
func TestExperimentHelpDefaults(t *testing.T) {
	var help bytes.Buffer
	if code := run([]string{"help", "experiment"}, &help, &help); code != 0 {
		t.Fatalf("help experiment: exit %d\n%s", code, help.String())
	}
	shown := map[string]string{} // flag name -> the default its help prints ("": none)
	usage := map[string]string{} // flag name -> its help text
	lines := strings.Split(help.String(), "\n")
	for i, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "  -") {
			continue
		}
		name, text := strings.TrimPrefix(strings.Fields(l)[0], "-"), lines[i+1]
		usage[name] = text
		if j := strings.LastIndex(text, " (default "); j >= 0 && strings.HasSuffix(text, ")") {
			shown[name] = text[j+len(" (default ") : len(text)-1]
		} else {
			shown[name] = ""
		}
	}
	applied := func(args ...string) map[string]string {
		_, plan, err := parseExperimentArgs(args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		fs := flag.NewFlagSet("plan", flag.ContinueOnError)
		values := map[string]string{}
		for _, name := range bindConfig(fs, &plan.Config, "", trainUsage, trainFixedFields) {
			values[name] = fs.Lookup(name).Value.String()
		}
		return values
	}
	full, quick := applied(), applied("--quick")
	for _, name := range []string{"eval-every", "rl.steps", "held-out", "eval-questions"} {
		if _, ok := shown[name]; !ok {
			t.Errorf("help experiment does not list --%s", name)
		}
	}
	for _, name := range experimentFixed {
		if _, ok := shown[name]; ok && !strings.Contains(usage[name], "set by the experiment for each run (refused here)") {
			t.Errorf("help experiment offers --%s, which the experiment refuses, without saying so", name)
		}
		delete(full, name)
	}
	for name, want := range full {
		if quick[name] != want {
			want += "; " + quick[name] + " with --quick"
		}
		if got, ok := shown[name]; ok && got != want {
			t.Errorf("help experiment: --%s (default %s); the experiment runs %s", name, got, want)
		}
	}
}

// TestExperimentHelpBudget checks the time budgets `agentr1 help experiment` states against
// those --dry-run prints for the default preset: about 10 hours, and an hour with --quick.
func TestExperimentHelpBudget(t *testing.T) {
	var help bytes.Buffer
	run([]string{"help", "experiment"}, &help, &help)
	if !strings.Contains(strings.Join(strings.Fields(help.String()), " "), "about 10 hours on 2 cores, an hour with --quick") {
		t.Fatalf("help experiment no longer states the budgets this test checks:\n%s", help.String())
	}
	for _, tc := range []struct {
		args     []string
		low, top time.Duration // "about": within 15% of the stated time
	}{
		{nil, 510 * time.Minute, 690 * time.Minute},
		{[]string{"--quick"}, 51 * time.Minute, 69 * time.Minute},
	} {
		_, plan, err := parseExperimentArgs(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var total time.Duration
		for _, u := range plan.Units() {
			total += plan.Estimate(u, experiment.DefaultRates)
		}
		if total < tc.low || total > tc.top {
			t.Errorf("experiment %v: --dry-run budgets %s, help says within %s..%s", tc.args, formatDuration(total), formatDuration(tc.low), formatDuration(tc.top))
		}
	}
}
