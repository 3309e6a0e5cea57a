package pqread

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds Open and Read arbitrary bytes: malformed files are an
// error, never a panic.
func FuzzOpen(f *testing.F) {
	f.Add([]byte("PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add([]byte("PAR1\x15\x00\x15\x00\x08\x00\x00\x00PAR1"))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		pf, err := Open(path)
		if err != nil {
			return
		}
		defer pf.Close()
		pf.Read(10)
	})
}
