package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReplaces: the file holds the new data with the permissions asked, and no temporary file is left.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	st, err2 := os.Stat(path)
	if err != nil || err2 != nil || string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("after Write: %q %v, mode %v %v", b, err, st.Mode().Perm(), err2)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want only the file", len(ents))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}
