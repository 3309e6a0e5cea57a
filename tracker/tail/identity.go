package tail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// fingerprint identifies a file's content by its first bytes: the SHA-256
// of the first n bytes, n = min(size, Config.FingerprintBytes). A file
// shorter than that has a short fingerprint, lengthened as it grows.
type fingerprint struct {
	n   int
	sum string // hex SHA-256
	// head is the n bytes themselves while the tailer runs (not saved):
	// a copy being written is recognised by its head being a prefix of
	// another file's.
	head []byte
}

func (fp fingerprint) equal(o fingerprint) bool { return fp.n == o.n && fp.sum == o.sum }

// prefixOf reports whether fp's bytes are the start of o's.
func (fp fingerprint) prefixOf(o fingerprint) bool {
	return o.head != nil && fp.n <= o.n && bytes.HasPrefix(o.head, fp.head)
}

// readFingerprint reads the first min(size, limit) bytes of f.
func readFingerprint(f *os.File, size int64, limit int) (fingerprint, error) {
	n := int(min(size, int64(limit)))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return fingerprint{}, err
	}
	h := sha256.Sum256(buf)
	return fingerprint{n: n, sum: hex.EncodeToString(h[:]), head: buf}, nil
}

// matches reports whether the first fp.n bytes of f, of size size, are still
// the ones fp was taken of: a file truncated below them, or rewritten, is
// other content (copytruncate, or an inode reused for a new file).
func (fp fingerprint) matches(f *os.File, size int64) (bool, error) {
	if size < int64(fp.n) {
		return false, nil
	}
	got, err := readFingerprint(f, int64(fp.n), fp.n)
	if err != nil {
		return false, err
	}
	return got.sum == fp.sum, nil
}

// full reports whether fp covers as many bytes as a fingerprint can: only
// then is equal content evidence of a copy rather than of two short files
// that happen to start alike.
func (fp fingerprint) full(limit int) bool { return fp.n >= limit }
