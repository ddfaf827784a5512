package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	if err := WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, []byte("new contents")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new contents" {
		t.Fatalf("read %q, %v", got, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	assertOnlyFile(t, filepath.Dir(path), "f.json")
}

func TestFailedWriteKeepsOldFileAndLeavesNoTemp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	if err := WriteBytes(path, []byte("good")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v should wrap the cause and name %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != "good" {
		t.Errorf("old file became %q", got)
	}
	assertOnlyFile(t, filepath.Dir(path), "ckpt")
	if err := WriteBytes(filepath.Join(t.TempDir(), "no", "such", "dir"), nil); err == nil {
		t.Error("write into a missing folder succeeded")
	}
}

func assertOnlyFile(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("folder holds %v, want only %s", names, name)
	}
}
