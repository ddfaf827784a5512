// Package data ships the real multi-hop QA samples agentr1 evaluates on, embedded in the binary
// so that `agentr1 eval --data hotpotqa` and the tests work on a fresh clone with nothing beside
// it: HotpotQA, 2WikiMultihopQA and MuSiQue questions and the 19,719-passage Wikipedia corpus
// their paragraphs form (gzip-compressed JSONL; provenance and licences in mhqa/README.md).
package data

import (
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
)

//go:embed mhqa/*.jsonl.gz mhqa/README.md
var mhqa embed.FS

// Names lists the embedded files by their short names: "corpus", "hotpotqa", "2wiki", "musique".
func Names() []string {
	entries, err := fs.ReadDir(mhqa, "mhqa")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".jsonl.gz"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Open returns the decompressed JSONL stream of the embedded file name (one of Names()).
// The caller closes it.
func Open(name string) (io.ReadCloser, error) {
	f, err := mhqa.Open("mhqa/" + name + ".jsonl.gz")
	if err != nil {
		return nil, fmt.Errorf("data: no embedded file %q (have %v)", name, Names())
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, closeBoth{zr, f}}, nil
}

// Path is the name under which an embedded file is reported in error messages.
func Path(name string) string { return "data/mhqa/" + name + ".jsonl.gz" }

// README returns the provenance and licence notes of the embedded data.
func README() string {
	b, err := mhqa.ReadFile("mhqa/README.md")
	if err != nil {
		panic(err)
	}
	return string(b)
}

type closeBoth struct{ a, b io.Closer }

func (c closeBoth) Close() error {
	errA := c.a.Close()
	if errB := c.b.Close(); errA == nil {
		errA = errB
	}
	return errA
}
