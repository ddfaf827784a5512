// Package floatio writes float32 values as the little-endian bytes of the files agentr1
// saves (a safetensors checkpoint's weights, a trainer checkpoint's tensors) and reads them
// back, a chunk of values at a time, so that a tensor of any size passes through one small
// buffer instead of a copy of its whole encoding.
package floatio

import (
	"encoding/binary"
	"io"
	"math"

	"agentr1/tensor"
)

// chunk is the number of values encoded or decoded per Write or Read of the underlying stream.
const chunk = 1 << 16

// WriteF32 writes xs to w as little-endian float32, 4 bytes each.
func WriteF32(w io.Writer, xs []float32) error {
	return write(w, xs, 4, func(b []byte, part []float32) {
		for i, x := range part {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
	})
}

// WriteBF16 writes xs to w as little-endian bfloat16, 2 bytes each, each value rounded to
// the nearest bfloat16 (tensor.Float32ToBF16: ties to even).
func WriteBF16(w io.Writer, xs []float32) error {
	return write(w, xs, 2, func(b []byte, part []float32) {
		for i, x := range part {
			binary.LittleEndian.PutUint16(b[2*i:], tensor.Float32ToBF16(x))
		}
	})
}

// write encodes xs a chunk at a time into one buffer of width bytes a value, with encode,
// and writes each chunk to w.
func write(w io.Writer, xs []float32, width int, encode func(b []byte, part []float32)) error {
	buf := make([]byte, width*min(chunk, len(xs)))
	for lo := 0; lo < len(xs); lo += chunk {
		part := xs[lo:min(lo+chunk, len(xs))]
		b := buf[:width*len(part)]
		encode(b, part)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// ReadF32 fills dst with the little-endian float32 values read from r, 4 bytes each; a
// stream that ends first is io.ErrUnexpectedEOF (io.EOF if it held none of them).
func ReadF32(r io.Reader, dst []float32) error {
	buf := make([]byte, 4*min(chunk, len(dst)))
	for lo := 0; lo < len(dst); lo += chunk {
		part := dst[lo:min(lo+chunk, len(dst))]
		b := buf[:4*len(part)]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range part {
			part[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return nil
}
