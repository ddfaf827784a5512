package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"agentr1/internal/atomicfile"
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
	Title, Dir   string
	Subtitle     string       // the run in a line: algorithm, steps, seed, data
	Missing      []settingRow // file name and what it would have shown
	Cards        []card
	Curves       []curveGroup // one per training phase, RL first
	Smoothed     bool         // some chart draws moving averages
	SmoothWeight float64      // their weight w
	Eval         *evalView
	Config       []settingRow
	HasSamples   bool
	Steps        []stepView
	Available    string // the steps that have samples, e.g. "0, 5, 10 … 100 (21 steps)"
	NotFound     string // requested steps with no samples
	MaxSamples   int
	HeatCSS      template.CSS
	Legend       []legendStop
	Scale        string
}

// curveGroup is the charts of one training phase.
type curveGroup struct {
	Phase   string // "" when metrics.jsonl names no phases
	Title   string // the phase as a heading
	Rows    int
	Charts  []chartView
	Absent  []string // required charts without data (RL phase only)
	Summary []metricSummary
}

// card is one figure of the summary strip at the top; Note, when set, is a second line under
// Sub.
type card struct{ Label, Value, Sub, Note string }

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
	if err := atomicfile.WriteBytes(outPath, buf.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// buildPage turns what was read from the run directory into what the template draws.
func buildPage(r *run, opt Options) *page {
	p := &page{Title: opt.Title, Dir: r.Dir, HeatCSS: heatCSS(), Subtitle: describeRun(r.Config)}
	if p.Title == "" {
		p.Title = runName(r.Dir) + " · agentr1 report"
	}
	for _, name := range r.Missing {
		p.Missing = append(p.Missing, settingRow{Key: name, Value: fileNotes[name]})
	}
	p.Config = flattenConfig(r.Config)
	p.Eval = buildEval(r.Eval)
	if r.Metrics != nil {
		phases := r.Metrics.phases()
		// RL first: it is what the run is about; warm-up phases follow in file order.
		slices.SortStableFunc(phases, func(a, b phase) int {
			return cmp.Compare(rank(a.Name), rank(b.Name))
		})
		for _, ph := range phases {
			g := curveGroup{Phase: ph.Name, Title: phaseTitles[ph.Name], Rows: len(ph.Metrics.Rows), Summary: summarizeMetrics(ph.Metrics)}
			if g.Title == "" {
				g.Title = "Phase " + ph.Name
			}
			g.Charts, g.Absent = buildCharts(ph.Metrics)
			if ph.Name != "" && ph.Name != "rl" {
				g.Absent = nil // reward, EM and KL are RL's curves
			}
			for _, c := range g.Charts {
				p.Smoothed = p.Smoothed || c.Smoothed
			}
			p.Curves = append(p.Curves, g)
		}
		p.SmoothWeight = smoothWeight
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
			for i, s := range st.Samples {
				v := viewSample(s, scale)
				v.Index = st.Index[i] + 1
				sv.Samples = append(sv.Samples, v)
			}
			p.Steps = append(p.Steps, sv)
		}
	}
	p.Cards = summaryCards(r, opt.Yardstick)
	return p
}

// runName names a run by its folder, with the parent's name when the folder's own says
// nothing ("run", "out"), so two runs' pages are told apart in a browser's tabs.
func runName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	name := filepath.Base(abs)
	switch strings.ToLower(name) {
	case "run", "out", "output", "runs", "result", "results":
		if parent := filepath.Base(filepath.Dir(abs)); parent != "/" && parent != "." {
			name = parent + "/" + name
		}
	}
	return name
}

// describeRun says in a line what config.json describes: the algorithm, RL steps, seed and
// data; "" when it has none of them.
func describeRun(cfg *value) string {
	var parts []string
	rl := cfg.get("RL")
	if a := rl.get("Algorithm"); a != nil && a.Kind == 's' {
		parts = append(parts, strings.ToUpper(a.Str))
	}
	if n := rl.get("Steps"); n != nil && n.Kind == 'n' {
		parts = append(parts, formatValue(n.Num)+" RL steps")
	}
	if n := cfg.get("Seed"); n != nil && n.Kind == 'n' {
		parts = append(parts, "seed "+formatValue(n.Num))
	}
	if d := cfg.get("Data"); d != nil && d.Kind == 's' {
		data := d.Str
		if data == "" || data == "world" {
			data = "the generated world"
		}
		parts = append(parts, data)
	}
	return strings.Join(parts, " · ")
}

// phaseTitles names the trainer's phases for headings.
var phaseTitles = map[string]string{
	"rl":            "Reinforcement learning",
	"sft":           "SFT warm start",
	"sft-copy":      "SFT warm start: copy steps",
	"critic-warmup": "Critic warm-up",
	"":              "Steps without a phase",
}

// rank orders phases: RL (or unnamed) first.
func rank(phase string) int {
	if phase == "rl" || phase == "" {
		return 0
	}
	return 1
}

// summaryCards picks the headline figures: the EM gain over the starting policy on each
// evaluation set (resultCards) when eval.json names its sets, the RL steps run, reward and EM
// at the first and last steps (a window's mean), and otherwise EM before and after training
// from eval.json.
func summaryCards(r *run, y *Yardstick) []card {
	var cards []card
	res, named := readResults(r.Eval)
	if named {
		cards = resultCards(res, y)
	}
	if r.Metrics != nil && len(r.Metrics.Rows) > 0 {
		m := r.Metrics.phases()[0].Metrics
		for _, ph := range r.Metrics.phases() {
			if ph.Name == "rl" {
				m = ph.Metrics
			}
		}
		first, last := m.Rows[0], m.Rows[len(m.Rows)-1]
		steps := strconv.Itoa(len(m.Rows))
		if s, ok := last["step"]; ok {
			// Steps count from 1 (step s: after s updates); files whose first step is 0
			// counted from 0.
			if s0, ok := first["step"]; ok && s0 == 0 {
				s++
			}
			steps = formatValue(s)
		}
		cards = append(cards, card{Label: "RL steps", Value: steps, Sub: strconv.Itoa(len(m.Rows)) + " lines in " + MetricsFile})
		// One step's 80 sampled rows are noisy; the mean of a window of steps at each end says
		// which way training went.
		w := min(trainWindow, max(1, len(m.Rows)/4))
		span := "last step"
		if w > 1 {
			span = fmt.Sprintf("mean of the last %d steps", w)
		}
		for _, k := range []struct{ key, label string }{{"reward_mean", "train reward"}, {"em", "train EM"}} {
			a, ok1 := windowMean(m.Rows[:w], k.key)
			b, ok2 := windowMean(m.Rows[len(m.Rows)-w:], k.key)
			if ok1 && ok2 {
				first := "first step"
				if w > 1 {
					first = fmt.Sprintf("first %d steps", w)
				}
				cards = append(cards, card{Label: k.label + ", " + span, Value: formatValue(roundSig(b, 3)),
					Sub: first + " " + formatValue(roundSig(a, 3)) + " (sampled)"})
			}
		}
	}
	if r.Eval != nil && !named {
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

// trainWindow is the most steps the summary cards average at each end of training.
const trainWindow = 20

// windowMean is the mean of key over rows, skipping rows where it is absent or not finite;
// false when no row has it.
func windowMean(rows []metricRow, key string) (float64, bool) {
	sum, n := 0.0, 0
	for _, row := range rows {
		if x, ok := finite(row, key); ok {
			sum += x
			n++
		}
	}
	return sum / float64(n), n > 0
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
