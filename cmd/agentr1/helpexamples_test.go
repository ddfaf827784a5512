package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentr1/env"
	"agentr1/env/search"
	"agentr1/model"
	"agentr1/rl/trainer"
)

// helpExample is one example command line of a command's help.
type helpExample struct {
	line  string   // as the help prints it, without its note
	args  []string // the words after "agentr1"
	stdin string   // what `echo ... |` pipes into it
}

// helpExamples returns the example command lines of c's help: every line of its usage after
// the synopsis that runs agentr1 (after an optional "e.g."), with a line ending in a backslash
// joined to the next, a trailing "(note)" left out, and "echo TEXT |" taken as standard input.
// A shell redirection (2>FILE) is dropped: the test reads stderr itself.
func helpExamples(t *testing.T, c *command) []helpExample {
	t.Helper()
	lines := strings.Split(strings.ReplaceAll(c.usage, "\\\n", " "), "\n")
	var out []helpExample
	note := regexp.MustCompile(`\s{2,}\(.*\)\s*$`)
	for _, line := range lines[1:] {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "e.g."))
		line = strings.TrimSpace(note.ReplaceAllString(line, ""))
		ex := helpExample{line: line}
		if pipe, rest, ok := strings.Cut(line, " | "); ok && strings.HasPrefix(pipe, "echo ") {
			ex.stdin = strings.TrimPrefix(pipe, "echo ") + "\n"
			line = rest
		}
		if !strings.HasPrefix(line, "agentr1 ") {
			if strings.Contains(line, "agentr1 "+c.name+" ") {
				t.Errorf("%s: help line %q looks like an example but does not parse as one", c.name, line)
			}
			continue
		}
		for _, w := range shellWords(t, strings.TrimPrefix(line, "agentr1 ")) {
			if !strings.HasPrefix(w, "2>") {
				ex.args = append(ex.args, w)
			}
		}
		out = append(out, ex)
	}
	return out
}

// shellWords splits s into words as a shell does for the quoting help examples use: spaces
// separate words, and single or double quotes group.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// tinyTrainFlags make a train example run in a few seconds: one small world, a tiny policy,
// two SFT steps (and four copy steps, two first and two among them) and one RL step, a few
// questions evaluated. Appended, they override the example's own values.
var tinyTrainFlags = []string{"--workers", "2", "--worlds", "1", "--vocab-size", "300",
	"--train-world.questions", "60", "--eval-world.questions", "10", "--held-out", "3", "--eval-questions", "3",
	"--demos", "8", "--sft.steps", "2", "--sft.batch", "2", "--sft.copy-steps", "2", "--sft.copy-every", "1",
	"--model.hidden", "16", "--model.layers", "1", "--model.heads", "2", "--model.kv-heads", "1", "--model.intermediate", "32",
	"--rl.steps", "1", "--rl.prompts", "2", "--rl.n", "2", "--rl.max-turns", "2", "--rl.max-turn-tokens", "12", "--rl.max-len", "400",
	"--eval-batch", "4"}

// tinyRealFlags do the same for a train example on real data (no world, no SFT).
var tinyRealFlags = []string{"--workers", "2", "--held-out", "2", "--rl.steps", "1", "--rl.prompts", "2", "--rl.n", "2",
	"--rl.max-turns", "2", "--rl.max-turn-tokens", "12", "--rl.max-len", "2048", "--eval-batch", "4"}

// tinyExperimentFlags run an experiment example on the tiny preset with one seed, one RL step.
var tinyExperimentFlags = []string{"--preset", "tiny", "--seeds", "1", "--rl.steps", "1", "--eval-every", "0", "--workers", "2"}

// TestHelpExamples runs every example of every command's help, in a scratch folder that holds
// what the examples name: testdata, pretrained checkpoints at ~/models/..., a generated-world
// run at runs/X, a retriever for --retriever; long jobs get tiny settings appended. An
// example fails the test if it exits non-zero or writes anything on stderr but an INFO log
// line: a warning on a command's own example is a bug in the command or in its help.
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every help example")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(work, "testdata")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tmp", "models", "runs"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, _, pretrained := realDataFixture(t, work)
	for _, name := range []string{"Qwen2.5-3B-Instruct", "Qwen2.5-0.5B-Instruct"} {
		if err := os.Symlink(pretrained, filepath.Join(work, "models", name)); err != nil {
			t.Fatal(err)
		}
	}
	worldRun, _ := worldRunFixture(t, tinyWorldConfig())
	if err := os.Symlink(filepath.Join(worldRun, "final"), filepath.Join(worldRun, "sft-base")); err != nil {
		t.Fatal(err)
	}
	writePolicyCheckpoint(t, filepath.Join(worldRun, "final"), filepath.Join(worldRun, "checkpoints", "step-000060.ckpt"))
	if err := os.Symlink(worldRun, filepath.Join(work, "runs", "X")); err != nil {
		t.Fatal(err)
	}
	ix, err := search.Build([]env.Passage{{ID: "p1", Title: "Maria Golovin", Text: "Maria Golovin is an opera by Gian Carlo Menotti."}}, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	retriever := httptest.NewServer(search.NewHandler(ix, search.DefaultLimits()))
	defer retriever.Close()
	t.Chdir(work)

	// Names in the examples that stand for things the scratch folder has under other names.
	replace := strings.NewReplacer("~/", work+"/", "/tmp/", work+"/tmp/",
		"http://127.0.0.1:8000/retrieve", retriever.URL+"/retrieve",
		"runs/20260101-120000", "runs/ppo-2") // view runs a run train's examples made
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	// train's examples run before view's, which reads one of their runs.
	sort.SliceStable(names, func(i, j int) bool { return names[j] == "view" && names[i] != "view" })
	ran := 0
	for _, name := range names {
		c := commands[name]
		for _, ex := range helpExamples(t, c) {
			args := make([]string, len(ex.args))
			for i, a := range ex.args {
				args[i] = replace.Replace(a)
			}
			switch {
			case name == "serve":
				runServeExample(t, c, args)
				ran++
				continue
			case name == "train" && !strings.Contains(ex.line, "--resume"):
				if strings.Contains(ex.line, "--data") {
					args = append(args, tinyRealFlags...)
				} else {
					args = append(args, tinyTrainFlags...)
				}
				if !strings.Contains(ex.line, "--out") {
					// runs/<timestamp> is per second: two quick examples could share one.
					args = append(args, "--out", fmt.Sprintf("runs/example-%d", ran))
				}
			case name == "experiment":
				args = append(args, tinyExperimentFlags...)
			case name == "eval":
				args = append(args, "--n", "2")
			case name == "bench":
				// A real-size shape would take gigabytes and minutes: the default run's
				// policy stands in for it.
				for i, a := range args {
					if strings.HasPrefix(a, "qwen") {
						args[i] = "default"
					}
				}
				args = append(args, tinyBenchFlags...)
			}
			start := time.Now()
			stdout, stderr := runExample(t, args, ex.stdin)
			t.Logf("%s (%.1fs)", ex.line, time.Since(start).Seconds())
			if bad := notInfo(stderr); bad != "" {
				t.Errorf("help example %q (run as %q) wrote on stderr:\n%s\nstdout:\n%s", ex.line, args, bad, stdout)
			}
			ran++
		}
	}
	if ran < 20 {
		t.Errorf("ran %d help examples; the parser must have missed some", ran)
	}
}

// runExample runs one command line in this process with stdin piped in, returning its output;
// a non-zero exit is reported in the stderr it returns.
func runExample(t *testing.T, args []string, stdin string) (stdout, stderr string) {
	t.Helper()
	oldChat, oldStdin := chatInput, os.Stdin
	defer func() { chatInput, os.Stdin = oldChat, oldStdin }()
	chatInput = strings.NewReader(stdin)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	io.WriteString(w, stdin)
	w.Close()
	os.Stdin = r
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		fmt.Fprintf(&errb, "exit status %d\n", code)
	}
	return out.String(), errb.String()
}

// notInfo returns the lines of stderr that are not log/slog INFO records (text or JSON).
func notInfo(stderr string) string {
	var bad []string
	for _, line := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if line == "" || strings.Contains(line, " level=INFO ") || strings.Contains(line, `"level":"INFO"`) {
			continue
		}
		bad = append(bad, line)
	}
	return strings.Join(bad, "\n")
}

// runServeExample starts `agentr1 serve search ...` as a subprocess on a free port, sends it
// the request of the help's curl example, and stops it with SIGINT as a user's Ctrl-C would.
func runServeExample(t *testing.T, c *command, args []string) {
	t.Helper()
	for i, a := range args {
		if a == "--addr" && i+1 < len(args) {
			args[i+1] = "127.0.0.1:0" // the example's port may be in use
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AGENTR1_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		logged.WriteString(lines.Text() + "\n")
		if m := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("serve example %q never said where it listens:\n%s", args, logged.String())
	}
	body := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(c.usage)
	if body == nil {
		t.Fatalf("serve: no curl example with -d '...' in its help")
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(body[1]))
	if err != nil {
		t.Errorf("serve example: the curl example's request: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("serve example: the curl example's request: %s", resp.Status)
	}
	cmd.Process.Signal(syscall.SIGINT)
	for lines.Scan() {
		logged.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve example %q: %v", args, err)
	}
	if bad := notInfo(logged.String()); bad != "" {
		t.Errorf("serve example %q wrote on stderr:\n%s", args, bad)
	}
}

// writePolicyCheckpoint writes the policy folder dir's parameters as a run's checkpoint file at
// path, as a run saves its policy at a step.
func writePolicyCheckpoint(t *testing.T, dir, path string) {
	t.Helper()
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &trainer.CheckpointFile{Step: 60, Tensors: trainer.AppendParams(nil, "policy/", m.Params)}
	if err := trainer.WriteCheckpointFile(path, f); err != nil {
		t.Fatal(err)
	}
}
