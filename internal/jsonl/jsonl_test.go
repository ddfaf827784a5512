package jsonl

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScan checks which lines Scan hands on, which it skips with a warning and which it
// refuses with an error naming the file and the line.
func TestScan(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		warn       bool
		want       []int  // the values read
		wantErr    string // a part of the error, "" for none
		wantWarn   string // a part of the one warning, "" for none
	}{
		{"whole", "1\n\n2\n", true, []int{1, 2}, "", ""},
		{"no final newline", "1\n2", true, []int{1, 2}, "", ""},
		{"torn last", "1\n2\n{\"x", true, []int{1, 2}, "", "torn last.jsonl:3: skipped a torn last line"},
		{"torn last without warn", "1\n{\"x", false, nil, "torn last without warn.jsonl:2:", ""},
		{"damaged middle", "1\n{\"x\n3\n", true, nil, "damaged middle.jsonl:2:", ""},
	} {
		path := filepath.Join(dir, c.name+".jsonl")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		var got []int
		var warnings []string
		var warn func(string)
		if c.warn {
			warn = func(msg string) { warnings = append(warnings, msg) }
		}
		err := Scan(path, warn, func(_ int, raw []byte) error {
			var v int
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			got = append(got, v)
			return nil
		})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want one naming %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: read %v, want %v", c.name, got, c.want)
		}
		if c.wantWarn == "" && len(warnings) > 0 || c.wantWarn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], c.wantWarn)) {
			t.Errorf("%s: warnings %q, want %q", c.name, warnings, c.wantWarn)
		}
	}
	if err := Scan(filepath.Join(dir, "missing.jsonl"), nil, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestCutBack checks that CutBack puts files back at the sizes Sizes saved, leaves a missing
// file of size 0 missing, and refuses to pad a file that has become shorter.
func TestCutBack(t *testing.T) {
	dir := t.TempDir()
	a, missing := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "missing.jsonl")
	if err := os.WriteFile(a, []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sizes, err := Sizes(a, missing)
	if err != nil || !slices.Equal(sizes, []int64{4, 0}) {
		t.Fatalf("Sizes = %v, %v; want [4 0]", sizes, err)
	}
	f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("3\n{\"to")
	f.Close()
	if err := CutBack([]string{a, missing}, sizes); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(a); string(raw) != "1\n2\n" {
		t.Errorf("after CutBack: %q, want %q", raw, "1\n2\n")
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file of size 0: %v, want it still missing", err)
	}
	if err := os.WriteFile(a, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CutBack([]string{a}, []int64{4}); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Errorf("CutBack of a shorter file: %v, want a refusal", err)
	}
	if raw, _ := os.ReadFile(a); string(raw) != "1\n" {
		t.Errorf("a refused CutBack changed the file: %q", raw)
	}
}
