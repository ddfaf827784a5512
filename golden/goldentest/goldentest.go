// Package goldentest runs golden cases inside go test: each case becomes a subtest named after
// it, computed and checked through the same golden.RunCase path as `agentr1 golden`.
package goldentest

import (
	"testing"

	"agentr1/golden"
)

// RunFile loads the cases file at path and runs every case as a subtest of t. A case whose fn is
// not registered fails; a case the reference rejected is skipped. It returns the counts.
func RunFile(t *testing.T, r *golden.Registry, path string) golden.Summary {
	t.Helper()
	cases, err := golden.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	var s golden.Summary
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			o := golden.RunCase(r, c)
			switch {
			case o.Skipped:
				s.Skipped++
				t.Skip(c.Skip)
			case o.Passed():
				s.Passed++
			default:
				s.Failed++
				t.Error(golden.FailureLine(o))
			}
		})
	}
	t.Logf("%s: %s", path, s.Line())
	return s
}

// Expect runs the cases file at path through a registry holding what register adds, as
// RunFile does, and fails unless the counts are exactly want: a case that stops being found
// or starts being skipped is an error too, not only a mismatch.
func Expect(t *testing.T, register func(*golden.Registry), path string, want golden.Summary) {
	t.Helper()
	r := golden.NewRegistry()
	register(r)
	if s := RunFile(t, r, path); s != want {
		t.Errorf("%s: %s, want %s", path, s.Line(), want.Line())
	}
}
