package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

//go:embed page.html.tmpl
var pageSource string

// pageTemplate is the page. html/template escapes every string that reaches it according to
// its context, which matters here: questions, answers, tokens and tool results are text the
// agent or the environment wrote.
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"signed": signed,
	"value":  formatValue,
	"role":   func(m map[string]int, r string) int { return m[r] },
}).Parse(pageSource))

// fileNotes says what each run file holds, for the note about missing ones.
var fileNotes = map[string]string{
	ConfigFile:  "the settings of the run",
	MetricsFile: "one line of metrics per RL step (training curves)",
	SamplesFile: "sampled trajectories with masks, advantages and rewards",
	EvalFile:    "evaluation before and after training and the baselines (written when training ends)",
}

// page is everything the template draws.
type page struct {
	Title, Dir    string
	Missing       []settingRow // file name and what it would have shown
	Cards         []card
	Charts        []chartView
	AbsentCharts  []string
	MetricRows    int
	MetricSummary []metricSummary
	Eval          *evalView
	Config        []settingRow
	HasSamples    bool
	Steps         []stepView
	Available     string // the steps that have samples, e.g. "0, 5, 10 … 100 (21 steps)"
	NotFound      string // requested steps with no samples
	MaxSamples    int
	HeatCSS       template.CSS
	Legend        []legendStop
	Scale         string
}

// card is one figure of the summary strip at the top.
type card struct{ Label, Value, Sub string }

// stepView is one step's shown trajectories.
type stepView struct {
	Step    int
	Total   int
	Samples []sampleView
}

// Render writes the report page of the run directory runDir to w. Missing run files leave
// their section out and are listed in a note; a malformed file is an error naming it (and the
// line, for the JSONL files).
func Render(w io.Writer, runDir string, opt Options) error {
	r, err := loadRun(runDir, opt)
	if err != nil {
		return err
	}
	p := buildPage(r, opt)
	if err := pageTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("report: render %s: %w", runDir, err)
	}
	return nil
}

// WriteHTML renders the report of runDir to the file outPath, replacing it only once the page
// is complete.
func WriteHTML(runDir, outPath string, opt Options) error {
	var buf bytes.Buffer
	if err := Render(&buf, runDir, opt); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(outPath), ".report-*.html")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("report: write %s: %w", outPath, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", outPath, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp.Name(), outPath); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func buildPage(r *run, opt Options) *page {
	p := &page{Title: opt.Title, Dir: r.Dir, HeatCSS: heatCSS()}
	if p.Title == "" {
		p.Title = "agentr1 run " + filepath.Base(filepath.Clean(r.Dir))
	}
	for _, name := range r.Missing {
		p.Missing = append(p.Missing, settingRow{Key: name, Value: fileNotes[name]})
	}
	p.Config = flattenConfig(r.Config)
	p.Eval = buildEval(r.Eval)
	if r.Metrics != nil {
		p.MetricRows = len(r.Metrics.Rows)
		p.Charts, p.AbsentCharts = buildCharts(r.Metrics)
		p.MetricSummary = summarizeMetrics(r.Metrics)
	}
	if ix := r.Samples; ix != nil {
		p.HasSamples = true
		p.MaxSamples = ix.Max
		p.Available = stepList(ix.Available)
		if len(ix.NotFound) > 0 {
			p.NotFound = stepList(ix.NotFound)
		}
		scale := advantageScale(ix.Shown)
		p.Scale = signed(scale)
		p.Legend = heatLegend(scale)
		for _, st := range ix.Shown {
			sv := stepView{Step: st.Step, Total: st.Total}
			for _, s := range st.Samples {
				sv.Samples = append(sv.Samples, viewSample(s, scale))
			}
			p.Steps = append(p.Steps, sv)
		}
	}
	p.Cards = summaryCards(r)
	return p
}

// summaryCards picks the headline figures: steps run, reward and EM from the first to the
// last step, and EM before and after training from eval.json.
func summaryCards(r *run) []card {
	var cards []card
	if m := r.Metrics; m != nil && len(m.Rows) > 0 {
		first, last := m.Rows[0], m.Rows[len(m.Rows)-1]
		steps := strconv.Itoa(len(m.Rows))
		if s, ok := last["step"]; ok {
			steps = formatValue(s)
		}
		cards = append(cards, card{Label: "RL steps", Value: steps, Sub: strconv.Itoa(len(m.Rows)) + " lines in " + MetricsFile})
		for _, k := range []string{"reward_mean", "em"} {
			a, ok1 := finite(first, k)
			b, ok2 := finite(last, k)
			if ok1 && ok2 {
				cards = append(cards, card{Label: k + " (train)", Value: formatValue(roundSig(b, 3)),
					Sub: "first step " + formatValue(roundSig(a, 3))})
			}
		}
	}
	if r.Eval != nil {
		base, final := r.Eval.get("base").get("em"), r.Eval.get("final").get("em")
		if final != nil && final.Kind == 'n' {
			c := card{Label: "EM (eval, final)", Value: formatValue(roundSig(final.Num, 3))}
			if base != nil && base.Kind == 'n' {
				c.Sub = "before training " + formatValue(roundSig(base.Num, 3))
			}
			cards = append(cards, c)
		}
	}
	return cards
}

// stepList prints steps compactly: all of them up to 12, else the first five, "…", the last
// five, and the count.
func stepList(steps []int) string {
	str := func(s []int) string {
		parts := make([]string, len(s))
		for i, v := range s {
			parts[i] = strconv.Itoa(v)
		}
		return strings.Join(parts, ", ")
	}
	if len(steps) <= 12 {
		return str(steps)
	}
	return fmt.Sprintf("%s … %s (%d steps)", str(steps[:5]), str(steps[len(steps)-5:]), len(steps))
}
