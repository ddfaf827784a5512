// Package atomicfile writes files so that a crash or a kill leaves either the old file or the
// new one, never a torn one: the data goes to a temporary file in the same folder, which is
// flushed to disk (fsync) and renamed over the target; the folder is then fsynced so the rename
// itself survives a power cut. Checkpoints, model weights, index files, eval.json and the
// report all go through it.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path atomically with the bytes that write produces (through a 1 MiB buffer).
// The file gets mode 0644. On any error the temporary file is removed, path is untouched, and
// the error names path.
func Write(path string, write func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil { // best effort: not every file system syncs folders
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteBytes creates path atomically with data.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
