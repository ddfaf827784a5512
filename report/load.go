package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File names inside a run directory.
const (
	ConfigFile  = "config.json"
	MetricsFile = "metrics.jsonl"
	SamplesFile = "samples.jsonl"
	EvalFile    = "eval.json"
)

// metricRow is one line of metrics.jsonl: its numeric fields (non-numeric fields are dropped).
type metricRow map[string]float64

// metrics is metrics.jsonl: the rows in file order, the numeric field names in the order they
// first appear, and each row's "phase" ("sft", "critic-warmup", "rl"; "" when absent).
type metrics struct {
	Rows   []metricRow
	Fields []string
	Phase  []string // (rows,)
}

// phase is the rows of one training phase.
type phase struct {
	Name    string
	Metrics *metrics
}

// phases splits the rows by their phase, phases in order of first appearance; each part
// lists only the fields its rows have.
func (m *metrics) phases() []phase {
	var out []phase
	index := map[string]int{}
	for i, r := range m.Rows {
		name := m.Phase[i]
		k, ok := index[name]
		if !ok {
			k = len(out)
			index[name] = k
			out = append(out, phase{Name: name, Metrics: &metrics{}})
		}
		pm := out[k].Metrics
		pm.Rows = append(pm.Rows, r)
		pm.Phase = append(pm.Phase, name)
	}
	for _, p := range out {
		for _, f := range m.Fields {
			for _, r := range p.Metrics.Rows {
				if _, ok := r[f]; ok {
					p.Metrics.Fields = append(p.Metrics.Fields, f)
					break
				}
			}
		}
	}
	return out
}

// readMetrics reads metrics.jsonl. Each non-blank line must be a JSON object; its number
// fields become the row and a string "phase" its phase; everything else (other strings, nulls
// such as an undefined explained variance, nested objects) is ignored. A torn last line goes
// to warn (scanJSONL).
func readMetrics(path string, warn func(string)) (*metrics, error) {
	m := &metrics{}
	seen := map[string]bool{}
	err := scanJSONL(path, warn, func(line int, raw []byte) error {
		v, err := parseValue(raw)
		if err != nil {
			return err
		}
		if v.Kind != '{' {
			return fmt.Errorf("want a JSON object, got %s", kindName(v.Kind))
		}
		row := metricRow{}
		phase := ""
		for _, f := range v.Fields {
			if f.Key == "phase" && f.Val.Kind == 's' {
				phase = f.Val.Str
			}
			if f.Val.Kind != 'n' {
				continue
			}
			row[f.Key] = f.Val.Num
			if !seen[f.Key] {
				seen[f.Key] = true
				m.Fields = append(m.Fields, f.Key)
			}
		}
		m.Rows = append(m.Rows, row)
		m.Phase = append(m.Phase, phase)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// readJSONObject reads a file holding one JSON object (config.json, eval.json).
func readJSONObject(path string) (*value, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	v, err := parseValue(raw)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	if v.Kind != '{' {
		return nil, fmt.Errorf("report: %s: want a JSON object, got %s", path, kindName(v.Kind))
	}
	return v, nil
}

func kindName(k byte) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "a number"
	case 's':
		return "a string"
	case 'b':
		return "a boolean"
	default:
		return "null"
	}
}

// run is everything read from a run directory. A nil member means its file is missing.
type run struct {
	Dir     string
	Config  *value
	Metrics *metrics
	Eval    *value
	Samples *sampleIndex
	Missing []string // names of the files that were not there
}

// loadRun reads the run directory. Missing files are recorded, not errors; unreadable or
// malformed files are errors naming the file (and the line for JSONL files).
func loadRun(dir string, opt Options) (*run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: run directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("report: run directory %s is not a directory", dir)
	}
	r := &run{Dir: dir}
	missing := func(err error, name string) bool {
		if errors.Is(err, fs.ErrNotExist) {
			r.Missing = append(r.Missing, name)
			return true
		}
		return false
	}
	if r.Config, err = readJSONObject(filepath.Join(dir, ConfigFile)); err != nil && !missing(err, ConfigFile) {
		return nil, err
	}
	if r.Metrics, err = readMetrics(filepath.Join(dir, MetricsFile), opt.Warn); err != nil && !missing(err, MetricsFile) {
		return nil, err
	}
	if r.Samples, err = selectSamples(filepath.Join(dir, SamplesFile), opt); err != nil && !missing(err, SamplesFile) {
		return nil, err
	}
	if r.Eval, err = readJSONObject(filepath.Join(dir, EvalFile)); err != nil && !missing(err, EvalFile) {
		return nil, err
	}
	return r, nil
}
