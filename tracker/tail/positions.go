package tail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Errors.
var (
	// ErrLocked: another tailer holds the positions file.
	ErrLocked = errors.New("tracker/tail: positions file in use")
	// ErrVersion: the positions file has a format this tailer does not know.
	ErrVersion = errors.New("tracker/tail: unknown positions file version")
)

// positionsVersion is the format of the positions file (see the package
// doc); a reader meeting another version refuses to start.
const positionsVersion = 1

type positionsDoc struct {
	Version int        `json:"version"`
	Files   []position `json:"files"`
}

// position is the acknowledged position of one file's content.
type position struct {
	Input string `json:"input"`
	// Path is where the file was last seen: for the operator, and the
	// directory searched for it by inode after a restart.
	Path    string `json:"path"`
	Inode   uint64 `json:"inode"`
	FPBytes int    `json:"fp_bytes"`
	FP      string `json:"fp"`
	// Offset: every line before it was acknowledged by the broker.
	Offset int64 `json:"offset"`
	// Orphaned, Unix ms, marks content whose inode no longer holds it (the
	// file was truncated or rewritten): kept for a while so that a copy of
	// it (copytruncate's) continues at Offset instead of starting over.
	Orphaned int64 `json:"orphaned,omitempty"`

	head []byte // fingerprint.head, when known
}

func (p *position) fingerprint() fingerprint {
	return fingerprint{n: p.FPBytes, sum: p.FP, head: p.head}
}

// positions is the positions file and its lock.
type positions struct {
	path string
	lock *os.File
}

// openPositions locks path+".lock" and reads path. found is false when
// the file did not exist: the tailer's first start.
func openPositions(path string) (p *positions, entries []position, found bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, false, err
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, nil, false, err
	}
	p = &positions{path: path, lock: lock}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil, false, nil
	}
	if err != nil {
		p.close()
		return nil, nil, false, err
	}
	var doc positionsDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		p.close()
		return nil, nil, false, fmt.Errorf("tracker/tail: positions file %s: %w", path, err)
	}
	if doc.Version != positionsVersion {
		p.close()
		return nil, nil, false, fmt.Errorf("%w: %s has version %d, this tailer writes %d", ErrVersion, path, doc.Version, positionsVersion)
	}
	return p, doc.Files, true, nil
}

// save replaces the file with entries so that a crash at any point leaves
// either the old or the new positions: write a temporary file, fsync it,
// rename it over the old one, fsync the directory.
func (p *positions) save(entries []position) error {
	if entries == nil {
		entries = []position{}
	}
	data, err := json.MarshalIndent(positionsDoc{Version: positionsVersion, Files: entries}, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(p.path, append(data, '\n'))
}

func (p *positions) close() error { return p.lock.Close() }
