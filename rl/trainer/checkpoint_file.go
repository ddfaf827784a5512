package trainer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"agentr1/internal/atomicfile"
)

// checkpointMagic starts every checkpoint file; the digit is the format version.
const checkpointMagic = "AR1CKPT1"

// NamedTensor is one array of a checkpoint: model parameters, optimiser moments.
type NamedTensor struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float32 `json:"-"`
}

// CheckpointFile is the content of one checkpoint file: a JSON header (step, meta, RNG state,
// tensor directory) and the tensors' float32 data.
//
// Layout on disk (little-endian):
//
//	"AR1CKPT1" | uint64 header length | header JSON | float32 data of every tensor, in order | SHA-256 of all preceding bytes
type CheckpointFile struct {
	Step    int             `json:"step"`
	Meta    json.RawMessage `json:"meta,omitempty"` // the run's settings and counters, opaque here
	RNG     []byte          `json:"rng,omitempty"`  // the trainer's random state (PCG MarshalBinary)
	Tensors []NamedTensor   `json:"tensors"`
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
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	binary.Write(&buf, binary.LittleEndian, uint64(len(header)))
	buf.Write(header)
	var word [4]byte
	for _, t := range c.Tensors {
		for _, x := range t.Data {
			binary.LittleEndian.PutUint32(word[:], math.Float32bits(x))
			buf.Write(word[:])
		}
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])

	if err := atomicfile.WriteBytes(path, buf.Bytes()); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// ReadCheckpointFile reads and verifies a checkpoint written by WriteCheckpointFile: the magic,
// the header, every tensor's size and the SHA-256 checksum.
func ReadCheckpointFile(path string) (*CheckpointFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	bad := func(msg string) error { return fmt.Errorf("checkpoint %s: %s", path, msg) }
	if len(raw) < len(checkpointMagic)+8+sha256.Size || string(raw[:len(checkpointMagic)]) != checkpointMagic {
		return nil, bad("not an agentr1 checkpoint (bad magic or too short)")
	}
	body, sum := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, bad("checksum mismatch (file corrupt or truncated)")
	}
	p := len(checkpointMagic)
	hlen := binary.LittleEndian.Uint64(body[p:])
	p += 8
	if hlen > uint64(len(body)-p) {
		return nil, bad("header length past end of file")
	}
	c := &CheckpointFile{}
	if err := json.Unmarshal(body[p:p+int(hlen)], c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: header: %w", path, err)
	}
	p += int(hlen)
	for i := range c.Tensors {
		t := &c.Tensors[i]
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return nil, bad(fmt.Sprintf("tensor %s: negative dimension in %v", t.Name, t.Shape))
			}
			n *= d
		}
		if n*4 > len(body)-p {
			return nil, bad(fmt.Sprintf("tensor %s: data past end of file", t.Name))
		}
		t.Data = make([]float32, n)
		for j := range t.Data {
			t.Data[j] = math.Float32frombits(binary.LittleEndian.Uint32(body[p:]))
			p += 4
		}
	}
	if p != len(body) {
		return nil, bad(fmt.Sprintf("%d trailing bytes after the tensors", len(body)-p))
	}
	return c, nil
}

// ErrNoCheckpoint is returned by LatestCheckpoint when a directory holds none.
var ErrNoCheckpoint = errors.New("no checkpoint")
