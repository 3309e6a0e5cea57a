package fsys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/user"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	krb "github.com/jcmturner/gokrb5/v8/client"
)

// hdfsFS is a target directory in HDFS.
type hdfsFS struct {
	c       *hdfs.Client
	krb     *krb.Client // the Kerberos login, nil without Kerberos
	streams *streamClients
	uri     string
	root    string
	opts    Options
}

func openHDFS(uri string, u *url.URL, opts Options) (FS, error) {
	conf := hadoopConf(opts.HadoopConfDir)
	addrs, err := namenodes(u.Host, conf)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", uri, err)
	}
	if opts.User == "" {
		opts.User = os.Getenv("HADOOP_USER_NAME")
	}
	if opts.User == "" {
		if me, err := user.Current(); err == nil {
			opts.User = me.Username
		}
	}
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	co, kc, err := opts.Kerberos.clientOptions(conf, log)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", uri, err)
	}
	timeout := opts.IOTimeout
	if timeout == 0 {
		timeout = DefaultIOTimeout
	}
	dial := deadlineDialer(timeout)
	co.Addresses = addrs
	co.User = opts.User
	co.NamenodeDialFunc, co.DatanodeDialFunc = dial, dial
	c, err := hdfs.NewClient(co)
	if err != nil {
		if kc != nil {
			kc.Destroy()
			return nil, fmt.Errorf("target %s: cannot reach the NameNode at %s with Kerberos (NameNode principal %s): %w", uri, strings.Join(addrs, ","), co.KerberosServicePrincipleName, err)
		}
		return nil, fmt.Errorf("target %s: cannot reach the NameNode at %s: %w", uri, strings.Join(addrs, ","), err)
	}
	if kc != nil {
		// The NameNode knows us by the principal's short name from now on.
		opts.User = c.User()
	}
	root := path.Clean("/" + u.Path)
	h := &hdfsFS{c: c, krb: kc, uri: uri, root: root, opts: opts, streams: &streamClients{opts: co, shared: c}}
	// Reach the NameNode and prove the root writable now, so that a bad
	// target fails before anything is planned.
	if err := c.MkdirAll(root, 0o755); err != nil {
		h.Close()
		if errors.Is(err, ErrTimeout) {
			return nil, fmt.Errorf("target %s: the NameNode %s did not answer: %w", uri, strings.Join(addrs, ","), err)
		}
		if kc == nil && strings.Contains(err.Error(), "unexpected sequence number") {
			// What colinmarc/hdfs makes of a NameNode's "SIMPLE
			// authentication is not enabled" answer.
			return nil, fmt.Errorf("target %s: the NameNode %s refused the connection (%w): a Kerberized NameNode does so to a client without Kerberos; set HADOOP_CONF_DIR to the cluster's configuration, or give --hdfs-kerberos-principal and --hdfs-kerberos-keytab", uri, strings.Join(addrs, ","), err)
		}
		return nil, fmt.Errorf("target %s is not writable as HDFS user %q (NameNode %s): %w", uri, opts.User, strings.Join(addrs, ","), err)
	}
	if err := h.probe(); err != nil {
		h.Close()
		return nil, fmt.Errorf("target %s is not writable as HDFS user %q: %w", uri, opts.User, err)
	}
	return h, nil
}

// probe writes and removes one byte under the root, proving that a
// DataNode takes our blocks before anything is planned. It also fills
// colinmarc/hdfs's cache of the server defaults while only one goroutine
// uses the client: the library fills it without a lock.
func (h *hdfsFS) probe() error {
	if _, err := h.c.ServerDefaults(); err != nil {
		return err
	}
	p := path.Join(h.root, fmt.Sprintf(".tributary-probe-%d-%d", os.Getpid(), time.Now().UnixNano()))
	w, err := h.c.CreateFile(p, 1, 1<<20, 0o644)
	if err != nil {
		return err
	}
	defer h.c.Remove(p)
	if _, err := w.Write([]byte{0}); err != nil {
		w.Close()
		return err
	}
	return hdfsWriter{FileWriter: w}.Close()
}

// namenodes resolves the host part of an hdfs:// URI: host:port pairs
// separated by commas, or a nameservice of the Hadoop configuration.
func namenodes(host string, conf hadoopconf.HadoopConf) ([]string, error) {
	if host == "" {
		if len(conf.Namenodes()) == 0 {
			return nil, errors.New("no NameNode in the URI (hdfs://host:port/path) and none in HADOOP_CONF_DIR's fs.defaultFS")
		}
		return conf.Namenodes(), nil
	}
	var out []string
	for _, a := range strings.Split(host, ",") {
		if _, _, err := net.SplitHostPort(a); err == nil {
			out = append(out, a)
			continue
		}
		if strings.Contains(host, ",") {
			return nil, fmt.Errorf("NameNode %q has no port", a)
		}
		// One name without a port: a nameservice of the Hadoop configuration,
		// else a NameNode on the default RPC port.
		prefix := "dfs.namenode.rpc-address." + a + "."
		for k, v := range conf {
			if strings.HasPrefix(k, prefix) {
				out = append(out, v)
			}
		}
		sort.Strings(out)
		if len(out) > 0 {
			return out, nil
		}
		return []string{net.JoinHostPort(a, "8020")}, nil
	}
	return out, nil
}

func (h *hdfsFS) String() string { return h.uri }

// Close closes the client and stops its ticket renewal.
func (h *hdfsFS) Close() error {
	h.streams.close()
	err := h.c.Close()
	if h.krb != nil {
		h.krb.Destroy()
	}
	return err
}

func (h *hdfsFS) path(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	return path.Join(h.root, c), nil
}

// hdfsWriter retries Close while the NameNode says the last block is still
// being replicated: the data is written, HDFS has not caught up.
type hdfsWriter struct {
	*hdfs.FileWriter
	release func() // gives the stream's client back
}

func (w hdfsWriter) Close() error {
	if w.release != nil {
		defer w.release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := w.FileWriter.Close()
		if err == nil || !hdfs.IsErrReplicating(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

func (h *hdfsFS) Create(name string) (io.WriteCloser, error) {
	return h.createMode(name, 0o644)
}

// createMode creates name with perm from its first RPC on: no window in
// which a secret is readable by others.
func (h *hdfsFS) createMode(name string, perm os.FileMode) (io.WriteCloser, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	if err := h.c.MkdirAll(path.Dir(p), 0o755); err != nil {
		return nil, err
	}
	repl, block := h.opts.Replication, h.opts.BlockSize
	if repl <= 0 || block <= 0 {
		defaults, err := h.c.ServerDefaults()
		if err != nil {
			return nil, err
		}
		if repl <= 0 {
			repl = defaults.Replication
		}
		if block <= 0 {
			block = defaults.BlockSize
		}
	}
	c, release, err := h.streams.get()
	if err != nil {
		return nil, err
	}
	w, err := c.CreateFile(p, repl, block, perm)
	if err != nil {
		release()
		return nil, err
	}
	return hdfsWriter{w, release}, nil
}

func (h *hdfsFS) Open(name string) (io.ReadCloser, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	c, release, err := h.streams.get()
	if err != nil {
		return nil, err
	}
	r, err := c.Open(p)
	if err != nil {
		release()
		return nil, err
	}
	return &releasingReader{FileReader: r, release: release}, nil
}

func (h *hdfsFS) ReadFile(name string) ([]byte, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	c, release, err := h.streams.get()
	if err != nil {
		return nil, err
	}
	defer release()
	return c.ReadFile(p)
}

func (h *hdfsFS) WriteFileAtomic(name string, data []byte) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s/.%s.tmp-%d-%d", path.Dir(name), path.Base(name), os.Getpid(), time.Now().UnixNano())
	w, err := h.Create(tmp)
	if err != nil {
		return err
	}
	tp, _ := h.path(tmp)
	if _, err := w.Write(data); err != nil {
		w.Close()
		h.c.Remove(tp)
		return err
	}
	if err := w.Close(); err != nil {
		h.c.Remove(tp)
		return err
	}
	if err := h.c.Rename(tp, p); err != nil {
		h.c.Remove(tp)
		return err
	}
	return nil
}

func (h *hdfsFS) Rename(oldname, newname string) error {
	o, err := h.path(oldname)
	if err != nil {
		return err
	}
	n, err := h.path(newname)
	if err != nil {
		return err
	}
	if err := h.c.MkdirAll(path.Dir(n), 0o755); err != nil {
		return err
	}
	return h.c.Rename(o, n)
}

func (h *hdfsFS) RemoveAll(name string) error {
	p, err := h.path(name)
	if err != nil {
		return err
	}
	if err := h.c.RemoveAll(p); err != nil && !IsNotExist(err) {
		return err
	}
	return nil
}

func (h *hdfsFS) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	out, err := h.c.ReadDir(p)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (h *hdfsFS) Stat(name string) (fs.FileInfo, error) {
	p, err := h.path(name)
	if err != nil {
		return nil, err
	}
	return h.c.Stat(p)
}
