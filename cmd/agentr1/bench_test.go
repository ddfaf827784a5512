package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"agentr1/model"
)

// tinyBenchFlags make a bench run take a fraction of a second on any model.
var tinyBenchFlags = []string{"--prefill", "24", "--prefill-batch", "2", "--batch", "3", "--prompt", "8", "--gen", "4", "--reps", "2"}

// TestBench runs bench on a tiny model folder and checks that every figure is printed once,
// as `name value unit` with a value that parses (a number, the kernel set's name, the
// arithmetic, or n/a for the peak memory where /proc is not there), and that the lengths are
// the flags'; then bench --compute bf16 on the folder saved in BF16, and its refusal of the F32
// folder.
func TestBench(t *testing.T) {
	dir := t.TempDir()
	m, err := model.New(model.Config{
		VocabSize: 300, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 2, NumAttentionHeads: 2,
		NumKeyValueHeads: 1, RMSNormEps: 1e-6, RopeTheta: 10000, TieWordEmbeddings: true,
		MaxPositionEmbeddings: 64, InitializerRange: 0.02,
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	got := checkBenchOutput(t, append([]string{"bench", "--model", dir, "--threads", "1"}, tinyBenchFlags...))
	for name, value := range map[string]string{"threads": "1", "params": strconv.Itoa(m.NumParams()), "prefill_batch": "2",
		"prefill_len": "24", "decode_batch": "3", "decode_prompt": "8", "decode_gen": "4", "reps": "2", "compute": "f32"} {
		if got[name] != value {
			t.Errorf("%s = %q, want %q", name, got[name], value)
		}
	}

	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"bench", "--model", dir, "--compute", "bf16"}, tinyBenchFlags...), &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "is F32: bf16 compute") {
		t.Errorf("bench --compute bf16 of an F32 folder: exit %d, stderr %q; want an error naming the F32 tensor", code, stderr.String())
	}
	bf16Dir := t.TempDir()
	if err := m.SaveAs(bf16Dir, model.BF16); err != nil {
		t.Fatal(err)
	}
	got = checkBenchOutput(t, append([]string{"bench", "--model", bf16Dir, "--compute", "bf16"}, tinyBenchFlags...))
	if got["compute"] != "bf16" {
		t.Errorf("bench --compute bf16: compute = %q", got["compute"])
	}
}

// checkBenchOutput runs the command line args, checks that it prints every figure once, in
// form, and returns the figures' values by name.
func checkBenchOutput(t *testing.T, args []string) map[string]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("%q exited %d: %s", args, code, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("bench wrote on stderr: %s", stderr.String())
	}
	want := map[string]string{ // name -> unit
		"kernels": "-", "threads": "-", "params": "-", "load_time": "s",
		"prefill_batch": "rows", "prefill_len": "tokens", "prefill": "tokens/s", "prefill_cpu": "tokens/cpu-s",
		"decode_batch": "rows", "decode_prompt": "tokens", "decode_gen": "tokens", "decode": "tokens/s", "decode_cpu": "tokens/cpu-s",
		"reps": "-", "peak_rss": "MiB", "compute": "-",
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Errorf("line %q: want `name value unit`", line)
			continue
		}
		name, value, unit := f[0], f[1], f[2]
		if u, ok := want[name]; !ok || u != unit {
			t.Errorf("line %q: unknown figure or unit (want unit %q)", line, u)
		}
		if _, dup := got[name]; dup {
			t.Errorf("line %q: %s printed twice", line, name)
		}
		got[name] = value
		v, err := strconv.ParseFloat(value, 64)
		switch {
		case name == "kernels":
			if value != "generic" && value != "avx2" && value != "avx512" {
				t.Errorf("line %q: unknown kernel set", line)
			}
		case name == "compute":
			if value != "f32" && value != "bf16" {
				t.Errorf("line %q: unknown arithmetic", line)
			}
		case name == "peak_rss" && value == "n/a":
			if _, err := os.Stat("/proc/self/status"); err == nil {
				t.Errorf("line %q: n/a although /proc/self/status exists", line)
			}
		case err != nil || !(v > 0):
			t.Errorf("line %q: value is not a positive number", line)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("figure %s not printed; output:\n%s", name, stdout.String())
		}
	}
	return got
}

// TestBenchErrors checks that bad command lines are refused with a message naming the flag,
// before any model is built.
func TestBenchErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"vocab_size": 300}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give one of --model DIR and --random SHAPE"},
		{[]string{"--model", dir, "--random", "default"}, "give one of --model DIR and --random SHAPE"},
		{[]string{"--random", "qwen9"}, `unknown shape "qwen9" (want one of default, qwen2.5-0.5b`},
		{[]string{"--random", "default", "--prefill", "5000"}, "--prefill 5000 exceeds the model's max_position_embeddings 4096"},
		{[]string{"--random", "default", "--gen", "0"}, "--gen 0, want >= 1"},
		{[]string{"--random", "default", "--reps", "0"}, "--reps 0"},
		{[]string{"--random", "default", "--compute", "fp16"}, `compute "fp16": want one of f32, bf16`},
		{[]string{"--model", dir}, "config.json"},
		{[]string{"--model", filepath.Join(dir, "missing")}, "missing"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"bench"}, tc.args...), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("bench %q: exit %d, stderr %q; want an error containing %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestVmHWM checks the reading of a status file's peak-memory line, and that a malformed one
// is an error naming the file.
func TestVmHWM(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       int64
		err        string
	}{
		{"ok", "Name:\tagentr1\nVmPeak:\t 9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\n", 2048, ""},
		{"missing", "Name:\tagentr1\n", 0, "no VmHWM line"},
		{"unit", "VmHWM:\t2 MB\n", 0, `VmHWM line "VmHWM:\t2 MB"`},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := vmHWM(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error %v, want one naming %s and containing %q", tc.name, err, path, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}
