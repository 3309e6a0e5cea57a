package fsys

import (
	"io"
	"sync"

	"github.com/colinmarc/hdfs/v2"
)

// streamClients hands each file stream a client of its own when the
// DataNodes take SASL (dfs.data.transfer.protection). colinmarc/hdfs asks
// the NameNode for a data transfer key before every DataNode connection and
// keeps the answer in the client without a lock; on a cluster that does not
// encrypt data transfer the answer is empty, so it is asked again every
// time, and two streams of one client race. A client per concurrent stream,
// kept for reuse, costs one NameNode connection each.
type streamClients struct {
	opts   hdfs.ClientOptions
	shared *hdfs.Client // used directly when streams need no client of their own

	mu   sync.Mutex
	idle []*hdfs.Client
}

const maxIdleStreamClients = 16

func (s *streamClients) own() bool { return s.opts.DataTransferProtection != "" }

// get returns a client for one stream and the function that gives it back
// (once, however often it is called: a stream may be closed twice).
func (s *streamClients) get() (*hdfs.Client, func(), error) {
	if !s.own() {
		return s.shared, func() {}, nil
	}
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return c, sync.OnceFunc(func() { s.put(c) }), nil
	}
	s.mu.Unlock()
	c, err := hdfs.NewClient(s.opts)
	if err != nil {
		return nil, nil, err
	}
	return c, sync.OnceFunc(func() { s.put(c) }), nil
}

func (s *streamClients) put(c *hdfs.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.idle) < maxIdleStreamClients {
		s.idle = append(s.idle, c)
		return
	}
	c.Close()
}

func (s *streamClients) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.idle {
		c.Close()
	}
	s.idle = nil
}

// releasingReader gives a stream's client back once the stream is closed.
type releasingReader struct {
	*hdfs.FileReader
	release func()
}

func (r *releasingReader) Close() error {
	defer r.release()
	return r.FileReader.Close()
}

var _ io.ReadCloser = (*releasingReader)(nil)
