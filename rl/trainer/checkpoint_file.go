package trainer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"agentr1/internal/atomicfile"
	"agentr1/internal/floatio"
)

// checkpointMagic starts every checkpoint file; the digit is the format version.
const checkpointMagic = "AR1CKPT1"

// NamedTensor is one array of a checkpoint: model parameters, optimiser moments.
type NamedTensor struct {
	Name  string    `json:"name"`  // prefixed name: "policy/" + the parameter's name, "opt/m/" + it, ...
	Shape []int     `json:"shape"` // dimensions; their product is len(Data)
	Data  []float32 `json:"-"`     // the values, row-major; stored after the header, not in the JSON
}

// CheckpointFile is the content of one checkpoint file: a JSON header (step, meta, RNG state,
// tensor directory) and the tensors' float32 data.
//
// Layout on disk (little-endian):
//
//	"AR1CKPT1" | uint64 header length | header JSON | float32 data of every tensor, in order | SHA-256 of all preceding bytes
type CheckpointFile struct {
	Step    int             `json:"step"`           // RL steps completed when it was written (Trainer.StepsDone)
	Meta    json.RawMessage `json:"meta,omitempty"` // the run's settings and counters, opaque here
	RNG     []byte          `json:"rng,omitempty"`  // the trainer's random state (PCG MarshalBinary)
	Tensors []NamedTensor   `json:"tensors"`        // every array, in the order their data is stored
}

// Tensor returns the tensor called name, or nil.
func (c *CheckpointFile) Tensor(name string) *NamedTensor {
	for i := range c.Tensors {
		if c.Tensors[i].Name == name {
			return &c.Tensors[i]
		}
	}
	return nil
}

// WriteCheckpointFile writes c to path atomically: into a temporary file in the same directory,
// fsynced, then renamed over path, and the directory fsynced, so a crash leaves either the old
// file or the new one, never a torn one.
func WriteCheckpointFile(path string, c *CheckpointFile) error {
	for _, t := range c.Tensors {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if n != len(t.Data) {
			return fmt.Errorf("checkpoint %s: tensor %s: shape %v holds %d values, data has %d", path, t.Name, t.Shape, n, len(t.Data))
		}
	}
	header, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("checkpoint %s: header: %w", path, err)
	}
	// The file is streamed, its checksum taken on the way: a real-size policy's checkpoint
	// (weights and two optimiser moments, 6 GB at 0.5B parameters) is never held in memory.
	err = atomicfile.Write(path, func(w io.Writer) error {
		sum := sha256.New()
		hw := io.MultiWriter(w, sum)
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(header)))
		for _, b := range [][]byte{[]byte(checkpointMagic), lenBuf[:], header} {
			if _, err := hw.Write(b); err != nil {
				return err
			}
		}
		for _, t := range c.Tensors {
			if err := floatio.WriteF32(hw, t.Data); err != nil {
				return err
			}
		}
		_, err := w.Write(sum.Sum(nil))
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// ReadCheckpointFile reads and verifies a checkpoint written by WriteCheckpointFile: the magic,
// the header, every tensor's size and the SHA-256 checksum. The file is read twice, once for
// the checksum and once for the tensors, so that only the tensors are held in memory.
func ReadCheckpointFile(path string) (*CheckpointFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	bad := func(msg string) error { return fmt.Errorf("checkpoint %s: %w: %s", path, ErrDamagedCheckpoint, msg) }
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	size := info.Size()
	magic := make([]byte, len(checkpointMagic))
	if size < int64(len(checkpointMagic)+8+sha256.Size) {
		return nil, bad("not an agentr1 checkpoint (bad magic or too short)")
	}
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != checkpointMagic {
		return nil, bad("not an agentr1 checkpoint (bad magic or too short)")
	}
	bodyLen := size - sha256.Size
	sum := sha256.New()
	if _, err := io.Copy(sum, io.NewSectionReader(f, 0, bodyLen)); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	want := make([]byte, sha256.Size)
	if _, err := f.ReadAt(want, bodyLen); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if !bytes.Equal(sum.Sum(nil), want) {
		return nil, bad("checksum mismatch (file corrupt or truncated)")
	}

	r := bufio.NewReaderSize(io.NewSectionReader(f, int64(len(checkpointMagic)), bodyLen-int64(len(checkpointMagic))), 1<<20)
	left := bodyLen - int64(len(checkpointMagic)) // bytes of the body still unread
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, bad("header length past end of file")
	}
	left -= 8
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen > uint64(left) {
		return nil, bad("header length past end of file")
	}
	header := make([]byte, hlen)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, fmt.Errorf("checkpoint %s: header: %w", path, err)
	}
	left -= int64(hlen)
	c := &CheckpointFile{}
	if err := json.Unmarshal(header, c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: header: %w", path, err)
	}
	for i := range c.Tensors {
		t := &c.Tensors[i]
		n := int64(1)
		for _, d := range t.Shape {
			if d < 0 {
				return nil, bad(fmt.Sprintf("tensor %s: negative dimension in %v", t.Name, t.Shape))
			}
			// n·d floats must fit in the bytes left; compared by division, as a header's
			// dimensions may be large enough that n·d·4 overflows.
			if d > 0 && n > left/4/int64(d) {
				return nil, bad(fmt.Sprintf("tensor %s: data past end of file", t.Name))
			}
			n *= int64(d)
		}
		t.Data = make([]float32, n)
		if err := floatio.ReadF32(r, t.Data); err != nil {
			return nil, fmt.Errorf("checkpoint %s: tensor %s: %w", path, t.Name, err)
		}
		left -= 4 * n
	}
	if left != 0 {
		return nil, bad(fmt.Sprintf("%d trailing bytes after the tensors", left))
	}
	return c, nil
}

// ErrNoCheckpoint is returned by LatestCheckpoint when a directory holds none.
var ErrNoCheckpoint = errors.New("no checkpoint")

// ErrDamagedCheckpoint is wrapped by ReadCheckpointFile's errors for a file that is not a whole
// checkpoint (bad magic, checksum mismatch, sizes past its end), so that a caller can tell
// damage, which an earlier checkpoint gets round, from a checkpoint of other settings.
var ErrDamagedCheckpoint = errors.New("damaged")
