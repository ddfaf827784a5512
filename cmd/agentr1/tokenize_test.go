package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	const qwen3 = "../../testdata/golden/tokenizer_qwen3/tokenizer.json"
	cases := []struct {
		name  string
		opt   tokenizeOptions
		args  []string
		stdin string
		want  string
	}{
		{"encode arguments", tokenizeOptions{path: qwen3}, []string{"Hello,", "world!"}, "", "9707 11 1879 0\n"},
		{"encode stdin", tokenizeOptions{path: qwen3}, []string{"-"}, "<|im_end|>", "151645\n"},
		{"decode", tokenizeOptions{path: qwen3, decode: true}, []string{"[9707, 11, 1879, 0]"}, "", "Hello, world!\n"},
		{"pieces", tokenizeOptions{path: qwen3, pieces: true}, []string{"I'm"}, "", "40\t\"I\"\n2776\t\"'m\"\n"},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		if err := runTokenize(tc.opt, tc.args, strings.NewReader(tc.stdin), &out); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if out.String() != tc.want {
			t.Errorf("%s: printed %q, want %q", tc.name, out.String(), tc.want)
		}
	}
	var out bytes.Buffer
	if err := runTokenize(tokenizeOptions{}, []string{"x"}, nil, &out); !errors.Is(err, errUsage) {
		t.Errorf("no --tokenizer: error %v, want a usage error", err)
	}
	if err := runTokenize(tokenizeOptions{path: qwen3, decode: true}, []string{"12x"}, nil, &out); !errors.Is(err, errUsage) {
		t.Errorf("bad id: error %v, want a usage error", err)
	}
	if err := runTokenize(tokenizeOptions{path: "missing.json"}, []string{"x"}, nil, &out); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing tokenizer: error %v does not name the file", err)
	}
}
