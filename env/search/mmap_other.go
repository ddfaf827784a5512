//go:build !unix

package search

import "os"

// mapFile reads the file at path into memory: on systems without mmap each process holds its
// own copy of the index.
func mapFile(path string) ([]byte, error) { return os.ReadFile(path) }

// unmapFile does nothing: the garbage collector frees the copy.
func unmapFile([]byte) {}
