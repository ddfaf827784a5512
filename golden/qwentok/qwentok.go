// Package qwentok checks package tokenizer against Hugging Face: it registers the tokenizer
// under the name tokenize, for the cases of testdata/golden/tokenizer_qwen3/cases.json (the real
// Qwen3 tokenizer.json and the ids a port of transformers.js gives for 16 texts; formats in
// testdata/golden/README.md). It is golden-case glue, not part of the tokenizer: it loads the
// case's tokenizer, encodes and decodes, and hands the ids and text back to package golden to
// compare. Nothing else imports it but `agentr1 golden` and this package's tests.
package qwentok

import (
	"path/filepath"
	"sync"

	"agentr1/golden"
	"agentr1/tokenizer"
)

// Register adds the tokenizer's reference function to r:
//
//	tokenize: params.tokenizer (a tokenizer.json path relative to the cases file),
//	          inputs.text -> outputs.ids (Encode, no BOS/EOS) and outputs.decoded (Decode(ids)).
//
// params.add_special_tokens is accepted either way: Qwen's post-processor adds no tokens.
// Tokenizers are loaded once per path and shared by the cases that name it.
func Register(r *golden.Registry) {
	var (
		mu    sync.Mutex
		cache = map[string]*tokenizer.Tokenizer{}
	)
	load := func(path string) (*tokenizer.Tokenizer, error) {
		mu.Lock()
		defer mu.Unlock()
		if t, ok := cache[path]; ok {
			return t, nil
		}
		t, err := tokenizer.Load(path)
		if err != nil {
			return nil, err
		}
		cache[path] = t
		return t, nil
	}
	r.Add("tokenize", func(c *golden.Case) (*golden.Result, error) {
		name, err := c.String("tokenizer", "tokenizer.json")
		if err != nil {
			return nil, err
		}
		if _, err := c.Bool("add_special_tokens", false); err != nil {
			return nil, err
		}
		text, err := c.Input("text")
		if err != nil {
			return nil, err
		}
		t, err := load(filepath.Join(c.Dir, name))
		if err != nil {
			return nil, err
		}
		ids := t.Encode(text.Str)
		return &golden.Result{Outputs: map[string]*golden.Value{
			"ids":     golden.Ints([]int{len(ids)}, ids),
			"decoded": golden.String(t.Decode(ids)),
		}}, nil
	})
}
