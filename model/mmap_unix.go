//go:build unix

package model

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole safetensors file read-only, once, and returns the mapping: BF16
// weights are packed straight from the page cache, with no read buffer. A file that cannot be
// mapped returns the error, and its tensors are read instead.
func (st *stFile) mapFile() ([]byte, error) {
	if st.mapped != nil {
		return st.mapped, nil
	}
	info, err := st.f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() == 0 || int64(int(info.Size())) != info.Size() {
		return nil, nil
	}
	b, err := unix.Mmap(int(st.f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	st.mapped = b
	return b, nil
}

// unmap releases the mapping of mapFile, if any.
func (st *stFile) unmap() error {
	if st.mapped == nil {
		return nil
	}
	err := unix.Munmap(st.mapped)
	st.mapped = nil
	return err
}

// dropPages tells the system that the mapped bytes [begin, end) of mapped are no longer
// needed, so that they stop counting towards the process's resident memory; a later read
// faults them in again from the file. The range is widened to whole pages.
func dropPages(mapped []byte, begin, end int64) {
	page := int64(os.Getpagesize())
	lo, hi := begin/page*page, min(int64(len(mapped)), (end+page-1)/page*page)
	_ = unix.Madvise(mapped[lo:hi], unix.MADV_DONTNEED) // advice only: ignoring a refusal is safe
}

// uint16View returns b as little-endian uint16 values without copying, and false where that
// is not possible: b's address is odd, or the machine is big-endian.
func uint16View(b []byte) ([]uint16, bool) {
	one := uint16(1)
	if len(b) < 2 || uintptr(unsafe.Pointer(&b[0]))%2 != 0 || *(*byte)(unsafe.Pointer(&one)) != 1 {
		return nil, false
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2), true
}
