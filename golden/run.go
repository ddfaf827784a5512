package golden

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Mismatch describes one field of a case that did not match the reference.
type Mismatch struct {
	Field string  // "outputs.y", "grads.w", ...
	Index int     // flat index of the worst element; -1 when the problem is not an element
	Got   float64 // our value at Index
	Want  float64 // the reference's value at Index
	Msg   string  // set for structural problems (missing field, shape or string mismatch)
}

// String renders the mismatch: the field and its structural problem, or its worst index with
// both values.
func (m Mismatch) String() string {
	if m.Msg != "" {
		return fmt.Sprintf("%s: %s", m.Field, m.Msg)
	}
	return fmt.Sprintf("%s: worst index %d: got %.10g, want %.10g (|diff| %.3g)", m.Field, m.Index, m.Got, m.Want, math.Abs(m.Got-m.Want))
}

// Check compares res against the case's expected outputs and gradients at the case's tolerance,
// honouring CompareMask. It returns every mismatching field (in name order), the worst element
// of each.
func Check(c *Case, res *Result) []Mismatch {
	var out []Mismatch
	if res == nil {
		res = &Result{}
	}
	out = append(out, compareFields("outputs", c.Outputs, res.Outputs, c.CompareMask, c.Tol)...)
	out = append(out, compareFields("grads", c.Grads, res.Grads, nil, c.Tol)...)
	return out
}

func compareFields(kind string, want, got, masks map[string]*Value, tol Tolerance) []Mismatch {
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []Mismatch
	for _, name := range names {
		field := kind + "." + name
		w := want[name]
		g, ok := got[name]
		if !ok || g == nil {
			out = append(out, Mismatch{Field: field, Index: -1, Msg: "not computed"})
			continue
		}
		if m, bad := compareValue(field, g, w, masks[name], tol); bad {
			out = append(out, m)
		}
	}
	return out
}

// compareValue returns the worst mismatch of got against want, and whether there was one.
func compareValue(field string, got, want, mask *Value, tol Tolerance) (Mismatch, bool) {
	if want.IsStr || got.IsStr {
		if !want.IsStr || !got.IsStr || got.Str != want.Str {
			return Mismatch{Field: field, Index: -1, Msg: fmt.Sprintf("got %s, want %s", describe(got), describe(want))}, true
		}
		return Mismatch{}, false
	}
	if len(got.Data) != len(want.Data) || (len(want.Shape) > 0 && !sameShape(got.Shape, want.Shape)) {
		return Mismatch{Field: field, Index: -1, Msg: fmt.Sprintf("got shape %v (%d values), want shape %v (%d values)", got.Shape, len(got.Data), want.Shape, len(want.Data))}, true
	}
	if mask != nil && len(mask.Data) != len(want.Data) {
		return Mismatch{Field: field, Index: -1, Msg: fmt.Sprintf("compare_mask has %d values, field has %d", len(mask.Data), len(want.Data))}, true
	}
	worst, worstExcess := -1, 0.0
	for i, w := range want.Data {
		if mask != nil && mask.Data[i] == 0 {
			continue
		}
		g := got.Data[i]
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if math.IsInf(w, 0) && g == w {
			continue
		}
		excess := math.Abs(g-w) - (tol.Atol + tol.Rtol*math.Abs(w))
		if math.IsNaN(excess) {
			excess = math.Inf(1)
		}
		if excess > 0 && (worst < 0 || excess > worstExcess) {
			worst, worstExcess = i, excess
		}
	}
	if worst < 0 {
		return Mismatch{}, false
	}
	return Mismatch{Field: field, Index: worst, Got: got.Data[worst], Want: want.Data[worst]}, true
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func describe(v *Value) string {
	if v.IsStr {
		s := v.Str
		if len(s) > 80 {
			s = s[:80] + "..."
		}
		return fmt.Sprintf("string %q", s)
	}
	return fmt.Sprintf("tensor of shape %v", v.Shape)
}

// Outcome is the verdict on one case.
type Outcome struct {
	Case       *Case      // the case judged
	Skipped    bool       // the reference rejected the call (Case.Skip)
	Err        error      // the implementation is missing or returned an error
	Mismatches []Mismatch // fields that did not match
}

// Passed reports whether the case passed.
func (o Outcome) Passed() bool { return !o.Skipped && o.Err == nil && len(o.Mismatches) == 0 }

// RunCase computes and checks one case. An fn with no registered implementation is an error
// (counted as failed), never a skip; only cases the reference itself rejected are skipped.
// A panic in the implementation is recovered and reported as the case's error.
func RunCase(r *Registry, c *Case) (o Outcome) {
	o.Case = c
	if c.Skip != "" {
		o.Skipped = true
		return o
	}
	f, ok := r.Lookup(c.Key())
	if !ok {
		o.Err = fmt.Errorf("no implementation registered for %q", c.Key())
		return o
	}
	defer func() {
		if p := recover(); p != nil {
			o.Err = fmt.Errorf("panic: %v", p)
		}
	}()
	res, err := f(c)
	if err != nil {
		o.Err = err
		return o
	}
	o.Mismatches = Check(c, res)
	return o
}

// Summary counts the outcomes of a run.
type Summary struct {
	Passed, Failed, Skipped int // cases that passed, failed (errors and mismatches) and were skipped
}

// Line is the closing line of a run: "N passed, M failed" with ", K skipped" when K > 0.
func (s Summary) Line() string {
	line := fmt.Sprintf("%d passed, %d failed", s.Passed, s.Failed)
	if s.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", s.Skipped)
	}
	return line
}

// Run checks every case, writes one line per failing case to w (file, case name, field, worst
// index, got, want), and returns the counts. It does not write the summary line.
func Run(r *Registry, cases []*Case, w io.Writer) (Summary, []Outcome) {
	var s Summary
	outcomes := make([]Outcome, 0, len(cases))
	for _, c := range cases {
		o := RunCase(r, c)
		outcomes = append(outcomes, o)
		switch {
		case o.Skipped:
			s.Skipped++
		case o.Passed():
			s.Passed++
		default:
			s.Failed++
			if w != nil {
				fmt.Fprintln(w, FailureLine(o))
			}
		}
	}
	return s, outcomes
}

// FailureLine formats a failed outcome as one line.
func FailureLine(o Outcome) string {
	prefix := fmt.Sprintf("FAIL %s [%s] fn=%s", o.Case.Name, o.Case.File, o.Case.Fn)
	if o.Err != nil {
		return prefix + ": " + o.Err.Error()
	}
	parts := make([]string, len(o.Mismatches))
	for i, m := range o.Mismatches {
		parts[i] = m.String()
	}
	return prefix + ": " + strings.Join(parts, "; ")
}
