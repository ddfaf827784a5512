// Package jsonl reads the JSON Lines files a run appends to (metrics.jsonl, samples.jsonl,
// evals.jsonl). A process killed mid-write leaves a torn last line; a reader may skip it with
// a warning, while a damaged line before it stays an error naming the file and the line.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Scan calls fn with every non-blank line of the file at path and its 1-based number.
// Errors from reading or from fn come back as "path:line: ...". A missing file returns an
// error satisfying errors.Is(err, fs.ErrNotExist). A last line without its newline that fn
// refuses is torn, as a process killed mid-write leaves it: when warn is set it is skipped
// and warn told "path:line: ...", so that the lines before it still read; without warn it is
// an error like any other.
func Scan(path string, warn func(string), fn func(line int, raw []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for line := 1; ; line++ {
		raw, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			if ferr := fn(line, raw); ferr != nil {
				if errors.Is(err, io.EOF) && warn != nil {
					warn(fmt.Sprintf("%s:%d: skipped a torn last line (no newline, as a crash mid-write leaves): %v", path, line, ferr))
					return nil
				}
				return fmt.Errorf("%s:%d: %w", path, line, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

// Sizes returns the size of each file at paths, 0 for a file that does not exist yet: how far
// a run's output had got, saved with a checkpoint so that a run resumed from it can CutBack.
func Sizes(paths ...string) ([]int64, error) {
	out := make([]int64, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			out[i] = fi.Size()
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	return out, nil
}

// CutBack truncates each file at paths to its size in sizes (as Sizes gave them at a
// checkpoint), dropping the records a stopped process appended after it, a torn last one
// among them, which the resumed run writes again. A file shorter than its size is an error
// naming it (it was replaced or cut since, and padding it would write zeros into it); a
// missing file of size 0 stays missing.
func CutBack(paths []string, sizes []int64) error {
	if len(paths) != len(sizes) {
		return fmt.Errorf("jsonl: %d sizes for %d files", len(sizes), len(paths))
	}
	for i, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && sizes[i] == 0:
			continue
		case err != nil:
			return err
		case fi.Size() < sizes[i]:
			return fmt.Errorf("%s: %d bytes, shorter than the %d it held at the checkpoint: the file was replaced or cut since", p, fi.Size(), sizes[i])
		}
		if err := os.Truncate(p, sizes[i]); err != nil {
			return err
		}
	}
	return nil
}
