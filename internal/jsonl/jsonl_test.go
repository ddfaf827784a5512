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
