// Package devcerts makes a throwaway certificate authority with broker and
// client certificates, for tests and `tributary dev certs`: what an
// operator would otherwise do with openssl before trying TLS. The keys are
// written unencrypted with mode 0600; they are for test clusters only.
package devcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
}

// NewCA makes a CA valid for validity, named CN=name.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Tributary test CA"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Leaf is a signed certificate with its key, as PEM: Keystore is what
// ssl.keystore.location takes (key, then the certificate and the CA's).
type Leaf struct {
	Cert     *x509.Certificate
	CertPEM  []byte
	KeyPEM   []byte
	Keystore []byte
}

// Server signs a certificate for hosts (names or IP addresses), usable by
// a TLS server and, so that brokers can present it to each other, client.
func (ca *CA) Server(cn string, hosts []string, validity time.Duration) (*Leaf, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(tmpl, validity)
}

// Client signs a client certificate with subject CN=cn, O=org.
func (ca *CA) Client(cn, org string, validity time.Duration) (*Leaf, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if org != "" {
		tmpl.Subject.Organization = []string{org}
	}
	return ca.sign(tmpl, validity)
}

func (ca *CA) sign(tmpl *x509.Certificate, validity time.Duration) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(validity)
	if validity < 0 {
		// Expired: valid for an hour, ending validity ago.
		tmpl.NotBefore = time.Now().Add(validity - time.Hour)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	l := &Leaf{Cert: cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})}
	l.Keystore = append(append(append([]byte{}, l.KeyPEM...), l.CertPEM...), ca.PEM...)
	return l, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

// Files are the paths Write produced.
type Files struct {
	CA       string // ca.pem: the truststore of brokers and clients
	Broker   string // broker.pem: key and chain, ssl.keystore.location
	Client   string // client.pem: key and chain of a client certificate
	ClientCN string
}

// Write makes a CA, a broker certificate for hosts and a client
// certificate for clientCN in dir, valid for validity.
func Write(dir string, hosts []string, clientCN string, validity time.Duration) (*Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ca, err := NewCA("Tributary test CA", validity)
	if err != nil {
		return nil, err
	}
	broker, err := ca.Server("broker", hosts, validity)
	if err != nil {
		return nil, err
	}
	client, err := ca.Client(clientCN, "", validity)
	if err != nil {
		return nil, err
	}
	f := &Files{CA: filepath.Join(dir, "ca.pem"), Broker: filepath.Join(dir, "broker.pem"), Client: filepath.Join(dir, "client.pem"), ClientCN: clientCN}
	for path, data := range map[string][]byte{f.CA: ca.PEM, f.Broker: broker.Keystore, f.Client: client.Keystore} {
		mode := os.FileMode(0o600)
		if path == f.CA {
			mode = 0o644
		}
		if err := os.WriteFile(path, data, mode); err != nil {
			return nil, fmt.Errorf("devcerts: %w", err)
		}
	}
	return f, nil
}
