//go:build unix

package search

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the file at path into memory, read-only and shared: every process that maps
// one file reads the same pages of the kernel's page cache. An empty file gives nil.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, nil
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("%s: %d bytes is more than this machine can map", path, size)
	}
	buf, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return buf, nil
}

// unmapFile releases a mapping of mapFile that nothing refers to.
func unmapFile(buf []byte) {
	if buf != nil {
		unix.Munmap(buf) // an error would mean buf was not a mapping; nothing to do about it
	}
}
