package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// TLSSettings are one listener's ssl.* properties.
type TLSSettings struct {
	Listener    string
	Keystore    string // ssl.keystore.location: key and chain, PEM
	KeyPassword string // ssl.key.password, for an encrypted PKCS#8 key
	Truststore  string // ssl.truststore.location: CA certificates, PEM
	ClientAuth  string // ssl.client.auth: none, requested, required
	Protocols   []string
	Logger      *slog.Logger
}

// ServerTLS serves a listener's TLS handshakes from files that may change
// under it: each handshake gets the key pair and trust pool as they were
// at the last look, and the files are looked at (their size and
// modification time) at most once a second. A file that changed but does
// not load (half written, mismatched key) is logged and the old pair kept,
// so a botched rotation never takes the listener down.
type ServerTLS struct {
	set        TLSSettings
	clientAuth tls.ClientAuthType
	min, max   uint16

	mu      sync.Mutex
	checked time.Time
	stamp   string // sizes and mtimes of the files loaded
	cfg     *tls.Config
	// loading is set while one handshake reloads the files, outside mu
	// (decrypting a key takes a while); the others serve cfg meanwhile.
	loading bool
}

// checkEvery is how often the files are stat'ed; a handshake in between
// uses what was loaded.
const checkEvery = time.Second

// NewServerTLS loads the listener's files; an error names what is wrong
// with them, for the start to refuse.
func NewServerTLS(set TLSSettings) (*ServerTLS, error) {
	t := &ServerTLS{set: set}
	if t.set.Logger == nil {
		t.set.Logger = slog.Default()
	}
	switch set.ClientAuth {
	case "", "none":
		t.clientAuth = tls.NoClientCert
	case "requested":
		t.clientAuth = tls.VerifyClientCertIfGiven
	case "required":
		t.clientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("listener %s: ssl.client.auth=%s is not none, requested or required", set.Listener, set.ClientAuth)
	}
	if t.clientAuth != tls.NoClientCert && set.Truststore == "" {
		return nil, fmt.Errorf("listener %s: ssl.client.auth=%s needs ssl.truststore.location, the CA certificates client certificates must chain to", set.Listener, set.ClientAuth)
	}
	t.min, t.max = tls.VersionTLS13, tls.VersionTLS12
	for _, p := range set.Protocols {
		v := map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}[p]
		if v == 0 {
			return nil, fmt.Errorf("listener %s: ssl.enabled.protocols: %s is not TLSv1.2 or TLSv1.3", set.Listener, p)
		}
		t.min, t.max = min(t.min, v), max(t.max, v)
	}
	if len(set.Protocols) == 0 {
		t.min, t.max = tls.VersionTLS12, tls.VersionTLS13
	}
	cfg, stamp, err := t.load()
	if err != nil {
		return nil, err
	}
	t.cfg, t.stamp, t.checked = cfg, stamp, time.Now()
	return t, nil
}

// Config is what tls.Server takes: every handshake asks for the current
// files' configuration.
func (t *ServerTLS) Config() *tls.Config {
	return &tls.Config{
		MinVersion: t.min,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return t.current(), nil
		},
	}
}

func (t *ServerTLS) current() *tls.Config {
	t.mu.Lock()
	if t.loading || time.Since(t.checked) < checkEvery {
		defer t.mu.Unlock()
		return t.cfg
	}
	t.checked = time.Now()
	if stamp := t.filesStamp(); stamp == t.stamp {
		defer t.mu.Unlock()
		return t.cfg
	}
	t.loading = true
	t.mu.Unlock()
	cfg, stamp, err := t.load()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loading = false
	// Whatever happened, the stamp is the one taken before reading: a
	// rotation finished while the files were read has another, and is
	// loaded at the next look; files that failed are not tried again
	// until they change.
	t.stamp = stamp
	if err != nil {
		t.set.Logger.Error("TLS files changed but do not load; serving the previous certificate", "listener", t.set.Listener, "err", err)
		return t.cfg
	}
	t.set.Logger.Info("reloaded TLS certificate", "listener", t.set.Listener, "keystore", t.set.Keystore)
	t.cfg = cfg
	return t.cfg
}

// afterLoad, if set by a test, runs when load has read the files: a
// rotation that lands there is what the pre-read stamp is for.
var afterLoad func()

func (t *ServerTLS) filesStamp() string {
	var b strings.Builder
	for _, p := range []string{t.set.Keystore, t.set.Truststore} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s:missing;", p)
		}
	}
	return b.String()
}

// load reads the files. The stamp, returned with an error too, is taken
// before reading, so that a change while reading is seen at the next look.
func (t *ServerTLS) load() (*tls.Config, string, error) {
	stamp := t.filesStamp()
	if afterLoad != nil {
		defer afterLoad()
	}
	cert, err := LoadKeystore(t.set.Keystore, t.set.KeyPassword)
	if err != nil {
		return nil, stamp, fmt.Errorf("listener %s: %w", t.set.Listener, err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   t.clientAuth,
		MinVersion:   t.min,
		MaxVersion:   t.max,
	}
	if t.set.Truststore != "" {
		pool, err := LoadTruststore(t.set.Truststore)
		if err != nil {
			return nil, stamp, fmt.Errorf("listener %s: %w", t.set.Listener, err)
		}
		cfg.ClientCAs = pool
	}
	return cfg, stamp, nil
}

// LoadKeystore reads a PEM keystore as Kafka's PEM keystore type holds it:
// one private key (PKCS#8, possibly encrypted with password; PKCS#1 or
// SEC 1 accepted too) and the certificate chain, leaf first.
func LoadKeystore(path, password string) (tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	var certs [][]byte
	var key []byte
	keyType := ""
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			certs = append(certs, b.Bytes)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			if key != nil {
				return tls.Certificate{}, fmt.Errorf("ssl.keystore.location %s holds more than one private key", path)
			}
			key, keyType = b.Bytes, b.Type
		}
	}
	if len(certs) == 0 {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location %s holds no CERTIFICATE block", path)
	}
	if key == nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location %s holds no PRIVATE KEY block", path)
	}
	if keyType == "ENCRYPTED PRIVATE KEY" {
		if password == "" {
			return tls.Certificate{}, fmt.Errorf("the key in ssl.keystore.location %s is encrypted: set ssl.key.password", path)
		}
		if key, err = decryptPKCS8(key, []byte(password)); err != nil {
			return tls.Certificate{}, fmt.Errorf("ssl.keystore.location %s: %w", path, err)
		}
		keyType = "PRIVATE KEY"
	}
	var certPEM []byte
	for _, c := range certs {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: keyType, Bytes: key}))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location %s: %w", path, err)
	}
	return pair, nil
}

// LoadTruststore reads PEM CA certificates.
func LoadTruststore(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssl.truststore.location: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("ssl.truststore.location %s holds no PEM certificate", path)
	}
	return pool, nil
}

// ErrNoClientCert is a TLS connection without a verified client
// certificate: its principal is ANONYMOUS.
var ErrNoClientCert = errors.New("broker/auth: no client certificate")

// CertPrincipal is the principal a TLS connection's verified client
// certificate names, by the mapping rules.
func CertPrincipal(st tls.ConnectionState, m *PrincipalMapper) (Principal, error) {
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return Anonymous, ErrNoClientCert
	}
	name, err := m.Map(DN(st.VerifiedChains[0][0]))
	if err != nil {
		return Anonymous, err
	}
	return User(name), nil
}

// ClientConfig is the TLS configuration for this node's own connection to
// a peer's listener of the same name, as Kafka's brokers use their
// listener's keystore and truststore both ways: the keystore's certificate
// is the client certificate, and the peer's certificate must chain to the
// truststore (the system's CAs without one). verifyHost is
// ssl.endpoint.identification.algorithm=https: the certificate must also
// name host. Files reloaded for the listener are used by the next
// connection.
func (t *ServerTLS) ClientConfig(host string, verifyHost bool) *tls.Config {
	cur := t.current()
	cfg := &tls.Config{
		Certificates: cur.Certificates,
		RootCAs:      cur.ClientCAs,
		ServerName:   host,
		MinVersion:   t.min,
		MaxVersion:   t.max,
	}
	if !verifyHost {
		// The chain is still verified, against the same roots; only the
		// name check is skipped.
		roots := cur.ClientCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("broker/auth: the peer sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg
}
