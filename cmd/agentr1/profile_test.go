package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileEnv checks AGENTR1_CPUPROFILE and AGENTR1_MEMPROFILE: a command run with either
// writes its profile (gzip, as pprof writes every profile) and still prints what it prints
// without it; a file that cannot be created is refused before the command runs, naming the
// variable and the path.
func TestProfileEnv(t *testing.T) {
	for _, env := range []string{cpuProfileEnv, memProfileEnv} {
		t.Run(env, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.prof")
			t.Setenv(env, path)
			var out bytes.Buffer
			if code := run([]string{"help", "tokenize"}, &out, io.Discard); code != 0 {
				t.Fatalf("help with %s: status %d", env, code)
			}
			if out.Len() == 0 {
				t.Error("help printed nothing with a profile running")
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Errorf("%s holds %d bytes, not a gzip stream as pprof writes", path, len(b))
			}

			bad := filepath.Join(t.TempDir(), "no-such-folder", "run.prof")
			t.Setenv(env, bad)
			var errs bytes.Buffer
			out.Reset()
			if code := run([]string{"help", "tokenize"}, &out, &errs); code != 1 {
				t.Fatalf("an uncreatable profile: status %d, want 1", code)
			}
			if msg := errs.String(); !strings.Contains(msg, env) || !strings.Contains(msg, bad) {
				t.Errorf("error %q does not name %s and %s", msg, env, bad)
			}
			if out.Len() != 0 {
				t.Errorf("the command ran although its profile could not be written: %q", out.String())
			}
		})
	}
}
