package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestEvalFlagErrors checks that each out-of-range eval flag is refused up front by name,
// before any model or data is read.
func TestEvalFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval"}, "--model is required"},
		{[]string{"eval", "--model", "m", "--topk", "0"}, "--topk 0, want >= 1"},
		{[]string{"eval", "--model", "m", "--n", "-1"}, "--n -1, want >= 0"},
		{[]string{"eval", "--model", "m", "--max-len", "8"}, "--max-len 8, want >= 16"},
		{[]string{"eval", "--model", "m", "--batch", "0"}, "--batch 0, want >= 1"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
