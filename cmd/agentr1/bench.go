package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentr1/bench"
	"agentr1/model"
	"agentr1/tensor"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure a checkpoint's inference speed and memory: prefill and decoding tokens/s, load time, peak RSS",
		usage: "agentr1 bench (--model DIR | --random SHAPE) [--compute f32|bf16] [--prefill N] [--batch N] [--prompt N] [--gen N] [--reps N]\n" +
			"  e.g. agentr1 bench --model ~/models/Qwen2.5-0.5B-Instruct\n" +
			"       agentr1 bench --random qwen2.5-0.5b --reps 5\n" +
			"       agentr1 bench --random qwen2.5-0.5b --compute bf16\n" +
			"       agentr1 bench --random default --batch 16 --prompt 256 --gen 128\n" +
			"  Prints one figure a line as `name value unit`, after llama.cpp's llama-bench: prefill\n" +
			"  (--prefill-batch rows of --prefill tokens) and greedy KV-cache decoding (--batch rows,\n" +
			"  --prompt tokens each, --gen new tokens), the median of --reps repetitions after one\n" +
			"  untimed warm-up; prefill_cpu and decode_cpu divide by the process's CPU time instead\n" +
			"  of the wall clock, a rate other work on the machine does not lower; peak_rss is the\n" +
			"  process's VmHWM (n/a where /proc is not there).",
		flags: func(fs *flag.FlagSet) { declareBenchFlags(fs, &benchArgs{}) },
		run:   runBench,
	})
}

// benchArgs are the bench command's settings.
type benchArgs struct {
	model, random string
	compute       model.Compute
	work          bench.Workload
	reps, threads int
}

func declareBenchFlags(fs *flag.FlagSet, a *benchArgs) {
	w := bench.DefaultWorkload()
	var shapes []string
	for _, s := range bench.Shapes() {
		shapes = append(shapes, s.Name)
	}
	fs.StringVar(&a.model, "model", "", "checkpoint folder to load (config.json and safetensors; the tokenizer is not read)")
	fs.StringVar(&a.random, "random", "", "instead of --model, build random weights (BF16, as checkpoints are published) of a named shape in memory: "+strings.Join(shapes, ", "))
	fs.Var(&a.compute, "compute", computeHelp)
	fs.IntVar(&a.work.PrefillBatch, "prefill-batch", w.PrefillBatch, "prefill: prompts appended, one after another")
	fs.IntVar(&a.work.PrefillLen, "prefill", w.PrefillLen, "prefill: tokens per prompt")
	fs.IntVar(&a.work.DecodeBatch, "batch", w.DecodeBatch, "decoding: rows generated together")
	fs.IntVar(&a.work.DecodePrompt, "prompt", w.DecodePrompt, "decoding: prompt tokens per row (appended before the timing)")
	fs.IntVar(&a.work.DecodeNew, "gen", w.DecodeNew, "decoding: new tokens per row, greedy")
	fs.IntVar(&a.reps, "reps", 3, "timed repetitions of each; the median is printed")
	fs.IntVar(&a.threads, "threads", 0, "kernel worker goroutines (0: GOMAXPROCS, one per core)")
}

func runBench(args []string, stdout, stderr io.Writer) error {
	a := &benchArgs{}
	fs := newFlagSet(commands["bench"], stderr)
	declareBenchFlags(fs, a)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (a.model == "") == (a.random == "") {
		return fmt.Errorf("%w: give one of --model DIR and --random SHAPE", errUsage)
	}
	if a.reps < 1 || a.threads < 0 {
		return fmt.Errorf("%w: --reps %d, --threads %d: want reps >= 1, threads >= 0", errUsage, a.reps, a.threads)
	}
	if a.threads > 0 {
		defer tensor.SetWorkers(tensor.SetWorkers(a.threads))
	}

	// The shape is checked before anything large is allocated.
	var cfg model.Config
	var err error
	if a.random != "" {
		if cfg, err = bench.ShapeNamed(a.random); err != nil {
			return fmt.Errorf("%w: --random: %v", errUsage, err)
		}
	} else if cfg, err = model.LoadConfig(filepath.Join(a.model, "config.json")); err != nil {
		return err
	}
	if err := a.work.Check(cfg); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}

	start := time.Now()
	var m *model.Model
	if a.random != "" {
		m, err = model.NewForInferenceWith(cfg, 1, a.compute)
	} else {
		m, err = model.LoadForInferenceWith(a.model, a.compute)
	}
	if err != nil {
		return err
	}
	load := time.Since(start).Seconds()

	r := bench.NewRunner(m, a.work, 1)
	r.Warmup()
	var prefill, prefillCPU, decode, decodeCPU []float64
	for range a.reps {
		p, d := r.Prefill(), r.Decode()
		prefill, prefillCPU = append(prefill, p.Rate()), append(prefillCPU, p.CPURate())
		decode, decodeCPU = append(decode, d.Rate()), append(decodeCPU, d.CPURate())
	}

	w := a.work
	lines := []struct{ name, value, unit string }{
		{"kernels", tensor.KernelName(), "-"},
		{"compute", a.compute.String(), "-"},
		{"threads", strconv.Itoa(tensor.Workers()), "-"},
		{"params", strconv.Itoa(m.NumParams()), "-"},
		{"load_time", strconv.FormatFloat(load, 'g', 4, 64), "s"}, // 4 digits: a tiny model loads in under a millisecond
		{"prefill_batch", strconv.Itoa(w.PrefillBatch), "rows"},
		{"prefill_len", strconv.Itoa(w.PrefillLen), "tokens"},
		{"prefill", fmt.Sprintf("%.1f", bench.Median(prefill)), "tokens/s"},
		{"prefill_cpu", cpuRate(prefillCPU), "tokens/cpu-s"},
		{"decode_batch", strconv.Itoa(w.DecodeBatch), "rows"},
		{"decode_prompt", strconv.Itoa(w.DecodePrompt), "tokens"},
		{"decode_gen", strconv.Itoa(w.DecodeNew), "tokens"},
		{"decode", fmt.Sprintf("%.1f", bench.Median(decode)), "tokens/s"},
		{"decode_cpu", cpuRate(decodeCPU), "tokens/cpu-s"},
		{"reps", strconv.Itoa(a.reps), "-"},
		{"peak_rss", peakRSS(), "MiB"},
	}
	for _, l := range lines {
		fmt.Fprintf(stdout, "%s %s %s\n", l.name, l.value, l.unit)
	}
	return nil
}

// cpuRate formats the median of rates in tokens per CPU-second, or "n/a" where the CPU time
// was not measured (0).
func cpuRate(rates []float64) string {
	if m := bench.Median(rates); m > 0 {
		return fmt.Sprintf("%.1f", m)
	}
	return "n/a"
}

// peakRSS returns the process's peak resident memory in MiB, from the VmHWM line of
// /proc/self/status (Linux), or "n/a" where that is not there.
func peakRSS() string {
	kb, err := vmHWM("/proc/self/status")
	if err != nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(kb)/1024)
}

// vmHWM reads the "VmHWM:  N kB" line of a /proc/PID/status file.
func vmHWM(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("%s: VmHWM line %q, want \"VmHWM: N kB\"", path, sc.Text())
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(path + ": no VmHWM line")
}
