package fsys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"strings"
	"time"
)

// ErrExist and ErrNotExist are the errors Create and the readers wrap.
var (
	ErrExist    = fs.ErrExist
	ErrNotExist = fs.ErrNotExist
)

// FS is a target file system, rooted at the target's path.
type FS interface {
	// Create creates a file, with its parent directories, and fails with
	// ErrExist if it exists. The file is complete (and visible whole to
	// readers on HDFS) once Close returns nil.
	Create(name string) (io.WriteCloser, error)
	// Open opens a file for reading.
	Open(name string) (io.ReadCloser, error)
	// ReadFile reads a whole file.
	ReadFile(name string) ([]byte, error)
	// WriteFileAtomic replaces name with data in one step.
	WriteFileAtomic(name string, data []byte) error
	// Rename moves a file or directory, replacing a file at newname, and
	// creates newname's parent directories.
	Rename(oldname, newname string) error
	// RenameNoReplace moves a file to newname unless newname exists: then
	// it fails with ErrExist and changes nothing. The check and the move
	// are one step, so of two racing for newname exactly one wins: a commit
	// point for a file written whole elsewhere first. Creates newname's
	// parent directories.
	RenameNoReplace(oldname, newname string) error
	// RemoveAll removes a file or a directory tree; a missing one is no error.
	RemoveAll(name string) error
	// ReadDir lists a directory, sorted by name; a missing one is ErrNotExist.
	ReadDir(name string) ([]fs.FileInfo, error)
	// Stat describes a file or directory.
	Stat(name string) (fs.FileInfo, error)
	// String is the target's URI, for messages.
	String() string
	Close() error
}

// Options tune the HDFS sink; the local one ignores them.
type Options struct {
	// User is the HDFS user to act as (simple authentication): the
	// HADOOP_USER_NAME environment variable, else the OS user, by default.
	User string
	// Replication of new files; 0 is the NameNode's dfs.replication.
	Replication int
	// BlockSize of new files in bytes; 0 is the NameNode's dfs.blocksize.
	BlockSize int64
	// Kerberos logs in to a Kerberized HDFS (kerberos.go); then User is
	// ignored and the principal's short name is the HDFS user.
	Kerberos Kerberos
	// HadoopConfDir holds core-site.xml and hdfs-site.xml; default
	// $HADOOP_CONF_DIR, else $HADOOP_HOME/conf.
	HadoopConfDir string
	// Log receives the Kerberos login line; nil is slog.Default().
	Log *slog.Logger
	// IOTimeout bounds each read and write on a NameNode or DataNode
	// connection (deadline.go): a peer silent for longer fails the call
	// with ErrTimeout and its connection is closed. 0 is
	// DefaultIOTimeout; negative waits for ever, as before.
	IOTimeout time.Duration
}

// Open opens the target at uri: file:///path, a plain path, or
// hdfs://host:port[,host:port...]/path (several NameNodes for HA, tried in
// order), or hdfs://nameservice/path with the nameservice defined in the
// Hadoop configuration at HADOOP_CONF_DIR.
func Open(uri string, opts Options) (FS, error) {
	if uri == "" {
		return nil, errors.New("no target: give --target file:///path or hdfs://namenode:port/path")
	}
	if !strings.Contains(uri, "://") {
		return openLocal(uri)
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", uri, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("target %q: a file:// URI names no host (file:///path)", uri)
		}
		return openLocal(u.Path)
	case "hdfs":
		return openHDFS(uri, u, opts)
	default:
		return nil, fmt.Errorf("target %q: unknown scheme %q (want file:// or hdfs://)", uri, u.Scheme)
	}
}

// clean makes name a relative slash path inside the root, refusing to leave it.
func clean(name string) (string, error) {
	c := path.Clean("/" + name)
	if c == "/" {
		return ".", nil
	}
	if strings.Contains(name, "..") && path.Clean(name) != strings.TrimPrefix(c, "/") {
		return "", fmt.Errorf("path %q leaves the target", name)
	}
	return strings.TrimPrefix(c, "/"), nil
}

// IsNotExist reports whether err says a file is missing, on either FS.
func IsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || os.IsNotExist(err)
}

// IsExist reports whether err says a file exists, on either FS.
func IsExist(err error) bool {
	return errors.Is(err, fs.ErrExist) || os.IsExist(err)
}
