//go:build !unix

package model

// mapFile returns no mapping where the system has no mmap: tensors are read from the file.
func (st *stFile) mapFile() ([]byte, error) { return nil, nil }

// unmap does nothing: nothing is mapped.
func (st *stFile) unmap() error { return nil }

// dropPages does nothing: nothing is mapped.
func dropPages(mapped []byte, begin, end int64) {}

// uint16View reports false: without a mapping there is nothing to view.
func uint16View(b []byte) ([]uint16, bool) { return nil, false }
