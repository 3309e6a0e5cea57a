package kafkacli

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	kgosasl "github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kgo"
	fgplain "github.com/twmb/franz-go/pkg/sasl/plain"
	fgscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker/auth"
)

// ClientProps are Kafka client properties (security.protocol, sasl.*,
// ssl.*), as Kafka's tools take them in --command-config and kcat in -X.
// Every connection this package opens uses the process's properties
// (SetClientProps), so each command that connects honours them without
// passing them along.
type ClientProps map[string]string

// clientKeys are the properties read; librdkafka's names for the same
// settings are accepted too (sasl.username, ssl.ca.location, ...).
var clientKeys = map[string]string{
	"security.protocol":                     "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
	"sasl.mechanism":                        "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (librdkafka: sasl.mechanisms)",
	"sasl.mechanisms":                       "librdkafka's sasl.mechanism",
	"sasl.jaas.config":                      "Kafka's login module with username and password",
	"sasl.username":                         "librdkafka's user name (instead of sasl.jaas.config)",
	"sasl.password":                         "librdkafka's password",
	"ssl.truststore.location":               "PEM CA certificates to trust (librdkafka: ssl.ca.location); the system's when unset",
	"ssl.truststore.type":                   "PEM only",
	"ssl.truststore.password":               "unused with PEM",
	"ssl.ca.location":                       "librdkafka's ssl.truststore.location",
	"ssl.keystore.location":                 "PEM private key and certificate chain, for client certificates",
	"ssl.keystore.type":                     "PEM only",
	"ssl.keystore.password":                 "unused with PEM",
	"ssl.key.password":                      "password of an encrypted PKCS#8 key",
	"ssl.certificate.location":              "librdkafka: the client certificate (PEM), with ssl.key.location",
	"ssl.key.location":                      "librdkafka: the client key (PEM)",
	"ssl.endpoint.identification.algorithm": "https (default) checks the broker's host name; empty does not",
}

var (
	propsMu sync.Mutex
	props   ClientProps
)

// SetClientProps sets the properties of every connection made afterwards.
func SetClientProps(p ClientProps) error {
	if err := p.Validate(); err != nil {
		return err
	}
	propsMu.Lock()
	props = p
	propsMu.Unlock()
	return nil
}

// CurrentProps are the process's client properties (do not modify them).
func CurrentProps() ClientProps { return current() }

func current() ClientProps {
	propsMu.Lock()
	defer propsMu.Unlock()
	return props
}

// ChildEnvVar carries a process's client properties to the tributary
// processes it starts (the jobs scheduler's load workers), as JSON.
const ChildEnvVar = "TRIBUTARY_KAFKA_CLIENT_PROPERTIES"

// ChildEnv is the environment that gives a child tributary process this
// process's client properties; nil when there are none.
func ChildEnv() []string {
	p := current()
	if len(p) == 0 {
		return nil
	}
	data, _ := json.Marshal(p)
	return []string{ChildEnvVar + "=" + string(data)}
}

// PropsFromEnv reads what ChildEnv set; nil when unset.
func PropsFromEnv() (ClientProps, error) {
	v, ok := os.LookupEnv(ChildEnvVar)
	if !ok || v == "" {
		return nil, nil
	}
	p := ClientProps{}
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fmt.Errorf("%s: %w", ChildEnvVar, err)
	}
	return p, nil
}

// LoadClientProps reads a Java properties file (may be empty) and then
// key=value settings, which win.
func LoadClientProps(file string, sets []string) (ClientProps, error) {
	p := ClientProps{}
	if file != "" {
		if err := p.readFile(file); err != nil {
			return nil, err
		}
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("-X %q: want key=value", s)
		}
		p[strings.TrimSpace(k)] = v
	}
	return p, nil
}

// readFile reads the properties format's common subset: key=value or
// key: value, # and ! comments, lines continued with a final backslash
// (as multi-line sasl.jaas.config values are written).
func (p ClientProps) readFile(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var line string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if line == "" && (l == "" || l[0] == '#' || l[0] == '!') {
			continue
		}
		if strings.HasSuffix(l, `\`) && !strings.HasSuffix(l, `\\`) {
			line += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		line += l
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return fmt.Errorf("--command-config %s: %q is not key=value", file, line)
		}
		p[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
		line = ""
	}
	return sc.Err()
}

func (p ClientProps) get(keys ...string) string {
	for _, k := range keys {
		if v, ok := p[k]; ok {
			return v
		}
	}
	return ""
}

// Protocol is security.protocol, PLAINTEXT by default.
func (p ClientProps) Protocol() string {
	if v := strings.ToUpper(p.get("security.protocol")); v != "" {
		return v
	}
	return "PLAINTEXT"
}

// Validate checks the properties once, so that a command fails before it
// connects; unknown keys are warned about and ignored, as Kafka's clients
// do, so a Java client's config file can be passed as it is.
func (p ClientProps) Validate() error {
	var unknown []string
	for k := range p {
		if _, ok := clientKeys[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		slog.Warn("ignoring client properties this command does not use", "keys", unknown)
	}
	switch p.Protocol() {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return fmt.Errorf("security.protocol=%s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p.Protocol())
	}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if v := p.get(k); v != "" && !strings.EqualFold(v, "PEM") {
			return fmt.Errorf("%s=%s: only PEM files are read", k, v)
		}
	}
	if _, err := p.TLSConfig(); err != nil {
		return err
	}
	_, _, _, err := p.credentials()
	return err
}

// TLSConfig is the TLS of SSL and SASL_SSL, nil otherwise.
func (p ClientProps) TLSConfig() (*tls.Config, error) {
	if proto := p.Protocol(); proto != "SSL" && proto != "SASL_SSL" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := p.get("ssl.truststore.location", "ssl.ca.location"); ca != "" {
		pool, err := auth.LoadTruststore(ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if ks := p.get("ssl.keystore.location"); ks != "" {
		cert, err := auth.LoadKeystore(ks, p.get("ssl.key.password"))
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	} else if c, k := p.get("ssl.certificate.location"), p.get("ssl.key.location"); c != "" || k != "" {
		cert, err := tls.LoadX509KeyPair(c, k)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location and ssl.key.location: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if v, ok := p["ssl.endpoint.identification.algorithm"]; ok && v == "" {
		// Kafka's way to skip the host name check: the chain is still
		// verified against the truststore.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

// credentials are the SASL mechanism, user and password of SASL_*.
func (p ClientProps) credentials() (mech, user, pass string, err error) {
	if proto := p.Protocol(); proto != "SASL_PLAINTEXT" && proto != "SASL_SSL" {
		return "", "", "", nil
	}
	mech = strings.ToUpper(p.get("sasl.mechanism", "sasl.mechanisms"))
	switch mech {
	case auth.PLAIN, auth.SCRAMSHA256, auth.SCRAMSHA512:
	case "":
		return "", "", "", fmt.Errorf("security.protocol=%s needs sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", p.Protocol())
	default:
		return "", "", "", fmt.Errorf("sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	user, pass = p.get("sasl.username"), p.get("sasl.password")
	if jaas := p.get("sasl.jaas.config"); jaas != "" {
		_, opts, err := auth.ParseJAAS(jaas)
		if err != nil {
			return "", "", "", err
		}
		user, pass = opts["username"], opts["password"]
	}
	if user == "" {
		return "", "", "", fmt.Errorf("%s needs a user: sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password", mech)
	}
	return mech, user, pass, nil
}

// kafkaGoSASL is the mechanism for kafka-go's transport and dialer.
func (p ClientProps) kafkaGoSASL() (kgosasl.Mechanism, error) {
	mech, user, pass, err := p.credentials()
	if err != nil || mech == "" {
		return nil, err
	}
	switch mech {
	case auth.PLAIN:
		return plain.Mechanism{Username: user, Password: pass}, nil
	case auth.SCRAMSHA256:
		return scram.Mechanism(scram.SHA256, user, pass)
	default:
		return scram.Mechanism(scram.SHA512, user, pass)
	}
}

// KgoOpts are the properties as franz-go options.
func (p ClientProps) KgoOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	tc, err := p.TLSConfig()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	mech, user, pass, err := p.credentials()
	if err != nil {
		return nil, err
	}
	switch mech {
	case auth.PLAIN:
		opts = append(opts, kgo.SASL(fgplain.Auth{User: user, Pass: pass}.AsMechanism()))
	case auth.SCRAMSHA256:
		opts = append(opts, kgo.SASL(fgscram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case auth.SCRAMSHA512:
		opts = append(opts, kgo.SASL(fgscram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts, nil
}

// Protocol is the process's security.protocol (PLAINTEXT when unset).
func Protocol() string { return current().Protocol() }

// ClientOpts are the process's client properties as franz-go options.
func ClientOpts() ([]kgo.Opt, error) { return current().KgoOpts() }

// SecureTransport applies the process's properties to a kafka-go
// transport: every producer the tracker, the loader and the jobs open
// goes through it.
func SecureTransport(tr *kafka.Transport) error {
	p := current()
	var err error
	if tr.TLS, err = p.TLSConfig(); err != nil {
		return err
	}
	tr.SASL, err = p.kafkaGoSASL()
	return err
}

// Dialer is a kafka-go dialer with the process's properties.
func Dialer() (*kafka.Dialer, error) {
	p := current()
	d := &kafka.Dialer{ClientID: ClientID, Timeout: 10 * time.Second, DualStack: true}
	var err error
	if d.TLS, err = p.TLSConfig(); err != nil {
		return nil, err
	}
	d.SASLMechanism, err = p.kafkaGoSASL()
	return d, err
}
