package report

import (
	"math"
	"slices"
	"strconv"
)

// tableView is a table ready for the template: a caption, column heads and text cells.
type tableView struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// settingRow is one line of the settings table.
type settingRow struct{ Key, Value string }

// flattenConfig lists every setting of config.json in file order; nested objects become
// dotted keys ("optim.lr"), arrays are shown as JSON.
func flattenConfig(v *value) []settingRow {
	var rows []settingRow
	var walk func(prefix string, v *value)
	walk = func(prefix string, v *value) {
		if v.Kind == '{' && len(v.Fields) > 0 {
			for _, f := range v.Fields {
				key := f.Key
				if prefix != "" {
					key = prefix + "." + f.Key
				}
				walk(key, f.Val)
			}
			return
		}
		rows = append(rows, settingRow{Key: prefix, Value: v.text()})
	}
	if v != nil {
		walk("", v)
	}
	return rows
}

// evalView is eval.json as the page shows it. When eval.json names its sets (readResults):
// the headline table, each set's EM by question type and EM during RL. Otherwise, for an
// eval.json of another shape, the comparison of its systems, per-group comparisons, then any
// further sections (by_type, ...) as their own tables.
type evalView struct {
	Headline *headline
	ByType   []tableView
	During   *tableView

	Compare *tableView
	Groups  []tableView
	Extra   []tableView
}

// evalSystem is one column of the comparison: an evaluated system and its figures.
type evalSystem struct {
	name string
	obj  *value
}

// groupMetrics are the figures compared per group (dataset, question type), as the paper's
// tables do.
var groupMetrics = []string{"em", "f1"}

// buildEval reads eval.json: the sets it names when it names them (readResults), else a
// comparison table of whatever it holds: one column per system (base, final, then every
// baseline, then any other top-level object with numbers), one row per number they report,
// and a "final − base" column when both exist. A system's nested objects (the trainer's
// "groups": figures per dataset and question type) become one table per metric in
// groupMetrics, groups by systems.
func buildEval(v *value) *evalView {
	if v == nil {
		return nil
	}
	if res, ok := readResults(v); ok {
		ev := &evalView{Headline: buildHeadline(res)}
		for _, s := range res.Sets {
			if t, ok := groupTable(res, s); ok {
				ev.ByType = append(ev.ByType, t)
			}
		}
		if t, ok := duringTable(res); ok {
			ev.During = &t
		}
		return ev
	}
	var systems []evalSystem
	var extra []field
	for _, f := range v.Fields {
		switch {
		case f.Key == "baselines" && f.Val.Kind == '{':
			for _, b := range f.Val.Fields {
				if hasNumbers(b.Val) {
					systems = append(systems, evalSystem{b.Key, b.Val})
				} else {
					extra = append(extra, field{"baselines." + b.Key, b.Val})
				}
			}
		case f.Key != "by_type" && hasNumbers(f.Val):
			systems = append(systems, evalSystem{f.Key, f.Val})
		default:
			extra = append(extra, f)
		}
	}
	ev := &evalView{}
	if len(systems) > 0 {
		ev.Compare = compareTable(v, systems)
		ev.Groups = groupTables(systems)
	}
	for _, f := range extra {
		ev.Extra = append(ev.Extra, gridTables(f.Key, f.Val)...)
	}
	return ev
}

// compareTable lays out the numbers of every system side by side.
func compareTable(v *value, systems []evalSystem) *tableView {
	var metrics []string
	seen := map[string]bool{}
	for _, sys := range systems {
		for _, f := range sys.obj.Fields {
			if (f.Val.Kind == 'n' || f.Val.Kind == '0') && !seen[f.Key] {
				seen[f.Key] = true
				metrics = append(metrics, f.Key)
			}
		}
	}
	base, final := v.get("base"), v.get("final")
	delta := hasNumbers(base) && hasNumbers(final)
	t := &tableView{Caption: "Evaluation", Header: []string{"metric"}}
	for _, sys := range systems {
		t.Header = append(t.Header, sys.name)
	}
	if delta {
		t.Header = append(t.Header, "final − base")
	}
	for _, m := range metrics {
		row := []string{m}
		for _, sys := range systems {
			row = append(row, cell(sys.obj.get(m)))
		}
		if delta {
			b, f := base.get(m), final.get(m)
			d := ""
			if b != nil && f != nil && b.Kind == 'n' && f.Kind == 'n' {
				d = signed(roundSig(f.Num-b.Num, 4))
			}
			row = append(row, d)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// groupTables compares the systems group by group: for each nested object K of the systems
// (e.g. "groups") and each metric m in groupMetrics, a table "m by K" with one row per group.
func groupTables(systems []evalSystem) []tableView {
	var nested []string
	seen := map[string]bool{}
	for _, sys := range systems {
		for _, f := range sys.obj.Fields {
			if f.Val.Kind == '{' && !seen[f.Key] {
				seen[f.Key] = true
				nested = append(nested, f.Key)
			}
		}
	}
	var out []tableView
	for _, k := range nested {
		var groups []string
		seenGroup := map[string]bool{}
		for _, sys := range systems {
			for _, g := range sys.obj.get(k).fieldsOrNil() {
				if !seenGroup[g.Key] {
					seenGroup[g.Key] = true
					groups = append(groups, g.Key)
				}
			}
		}
		for _, m := range groupMetrics {
			t := tableView{Caption: m + " by " + k, Header: []string{""}}
			for _, sys := range systems {
				t.Header = append(t.Header, sys.name)
			}
			found := false
			for _, g := range groups {
				row := []string{g}
				for _, sys := range systems {
					c := sys.obj.get(k).get(g).get(m)
					found = found || c != nil
					row = append(row, cell(c))
				}
				t.Rows = append(t.Rows, row)
			}
			if found {
				out = append(out, t)
			}
		}
	}
	return out
}

// fieldsOrNil is v's members when v is an object, else none.
func (v *value) fieldsOrNil() []field {
	if v == nil || v.Kind != '{' {
		return nil
	}
	return v.Fields
}

// hasNumbers reports whether v is an object with at least one number member.
func hasNumbers(v *value) bool {
	for _, f := range v.fieldsOrNil() {
		if f.Val.Kind == 'n' {
			return true
		}
	}
	return false
}

// gridTables shows a JSON value of unknown shape as tables: an object of objects of scalars
// becomes one grid (rows: outer keys, columns: inner keys); deeper objects recurse with the
// path as caption; an object of scalars becomes a two-column table.
func gridTables(caption string, v *value) []tableView {
	if v.Kind == '[' && len(v.Items) > 0 {
		// A list of records (an evaluation history): one row per record, numbered, so that no
		// JSON text reaches the page.
		rows := &value{Kind: '{'}
		for i, it := range v.Items {
			rows.Fields = append(rows.Fields, field{Key: strconv.Itoa(i + 1), Val: it})
		}
		if slices.ContainsFunc(v.Items, func(it *value) bool { return it.Kind == '{' }) {
			return gridTables(caption, rows)
		}
	}
	if v.Kind != '{' {
		return []tableView{{Caption: caption, Header: []string{"value"}, Rows: [][]string{{v.text()}}}}
	}
	if scalarObject(v) {
		t := tableView{Caption: caption, Header: []string{"key", "value"}}
		for _, f := range v.Fields {
			t.Rows = append(t.Rows, []string{f.Key, cell(f.Val)})
		}
		return []tableView{t}
	}
	grid := len(v.Fields) > 0
	for _, f := range v.Fields {
		grid = grid && scalarObject(f.Val)
	}
	if grid {
		t := tableView{Caption: caption, Header: []string{""}}
		seen := map[string]bool{}
		for _, f := range v.Fields {
			for _, g := range f.Val.Fields {
				if !seen[g.Key] {
					seen[g.Key] = true
					t.Header = append(t.Header, g.Key)
				}
			}
		}
		for _, f := range v.Fields {
			row := []string{f.Key}
			for _, k := range t.Header[1:] {
				row = append(row, cell(f.Val.get(k)))
			}
			t.Rows = append(t.Rows, row)
		}
		return []tableView{t}
	}
	var out []tableView
	var scalars []field
	for _, f := range v.Fields {
		if f.Val.isScalar() || f.Val.Kind == '[' {
			scalars = append(scalars, f)
			continue
		}
		out = append(out, gridTables(caption+" / "+f.Key, f.Val)...)
	}
	if len(scalars) > 0 {
		out = append(gridTables(caption, &value{Kind: '{', Fields: scalars}), out...)
	}
	return out
}

// scalarObject reports whether v is a non-empty object whose members are all scalars.
func scalarObject(v *value) bool {
	if v == nil || v.Kind != '{' || len(v.Fields) == 0 {
		return false
	}
	for _, f := range v.Fields {
		if !f.Val.isScalar() {
			return false
		}
	}
	return true
}

// cell formats a table cell: numbers to four significant digits, the rest as text.
func cell(v *value) string {
	switch {
	case v == nil:
		return ""
	case v.Kind == 'n':
		return formatValue(roundSig(v.Num, 4))
	}
	return v.text()
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	return f
}

// metricSummary is one row of the metrics summary: a field's first, last, lowest and highest
// value over the run.
type metricSummary struct {
	Name                  string
	First, Last, Min, Max string
	Count                 int
}

// summarizeMetrics lists every numeric field but the step with its range over the run.
func summarizeMetrics(m *metrics) []metricSummary {
	if m == nil {
		return nil
	}
	var out []metricSummary
	for _, f := range m.Fields {
		if f == "step" {
			continue
		}
		var first, last float64
		lo, hi := math.Inf(1), math.Inf(-1)
		n := 0
		for _, r := range m.Rows {
			v, ok := r[f]
			if !ok {
				continue
			}
			if n == 0 {
				first = v
			}
			last = v
			lo, hi = min(lo, v), max(hi, v)
			n++
		}
		out = append(out, metricSummary{Name: f, Count: n,
			First: formatValue(first), Last: formatValue(last), Min: formatValue(lo), Max: formatValue(hi)})
	}
	return out
}
