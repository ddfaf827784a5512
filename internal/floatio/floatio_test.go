package floatio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
)

// TestRoundTrip writes values across several chunks and reads them back: float32 exactly, the
// bytes little-endian; bfloat16 as the top half of each float32 rounded to nearest even.
func TestRoundTrip(t *testing.T) {
	xs := make([]float32, 2*chunk+5)
	for i := range xs {
		xs[i] = float32(i)*0.37 - 1000
	}
	xs[3] = float32(math.Inf(-1))
	var f32 bytes.Buffer
	if err := WriteF32(&f32, xs); err != nil {
		t.Fatal(err)
	}
	if f32.Len() != 4*len(xs) {
		t.Fatalf("WriteF32 wrote %d bytes, want %d", f32.Len(), 4*len(xs))
	}
	if got, want := f32.Bytes()[4:8], binary.LittleEndian.AppendUint32(nil, math.Float32bits(xs[1])); !bytes.Equal(got, want) {
		t.Errorf("value 1 encoded as % x, want % x (little-endian)", got, want)
	}
	back := make([]float32, len(xs))
	if err := ReadF32(bytes.NewReader(f32.Bytes()), back); err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		if math.Float32bits(back[i]) != math.Float32bits(xs[i]) {
			t.Fatalf("value %d read back as %v, want %v", i, back[i], xs[i])
		}
	}

	var bf bytes.Buffer
	if err := WriteBF16(&bf, xs); err != nil {
		t.Fatal(err)
	}
	if bf.Len() != 2*len(xs) {
		t.Fatalf("WriteBF16 wrote %d bytes, want %d", bf.Len(), 2*len(xs))
	}
	// 1.00390625 = 1 + 2^-8 lies halfway between bfloat16 1 and 1 + 2^-7: ties to even gives 1.
	var tie bytes.Buffer
	if err := WriteBF16(&tie, []float32{1.00390625, -2}); err != nil {
		t.Fatal(err)
	}
	if got, want := tie.Bytes(), []byte{0x80, 0x3f, 0x00, 0xc0}; !bytes.Equal(got, want) {
		t.Errorf("WriteBF16(1.00390625, -2) = % x, want % x", got, want)
	}
}

// TestReadShort checks that a stream shorter than dst is an error, not zeros.
func TestReadShort(t *testing.T) {
	dst := make([]float32, 3)
	if err := ReadF32(bytes.NewReader(make([]byte, 10)), dst); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("10 bytes into 3 floats: err %v, want io.ErrUnexpectedEOF", err)
	}
}
