package auth_test

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/internal/devcerts"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// An encrypted PKCS#8 key as openssl writes it (PBES2, PBKDF2 with
// HMAC-SHA256, AES-256-CBC) loads with ssl.key.password, and a wrong
// password is refused by name.
func TestEncryptedKeystore(t *testing.T) {
	t.Parallel()
	openssl, err := exec.LookPath("openssl")
	testbroker.Require(t, err == nil, "openssl", "install openssl: it writes the encrypted key this test reads")
	ca, _ := devcerts.NewCA("ca", 3600e9)
	leaf, _ := ca.Server("broker", []string{"localhost"}, 3600e9)
	dir := t.TempDir()
	plainKey := filepath.Join(dir, "key.pem")
	os.WriteFile(plainKey, leaf.KeyPEM, 0o600)
	for _, c := range []struct{ name, cipher, prf string }{
		{"aes-256-cbc with hmac-sha256", "aes-256-cbc", "hmacWithSHA256"},
		{"aes-128-cbc with hmac-sha1", "aes-128-cbc", "hmacWithSHA1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			enc := filepath.Join(dir, c.cipher+".pem")
			out, err := exec.Command(openssl, "pkcs8", "-topk8", "-v2", c.cipher, "-v2prf", c.prf, "-in", plainKey, "-out", enc, "-passout", "pass:s3cret").CombinedOutput()
			if err != nil {
				t.Fatalf("openssl: %v\n%s", err, out)
			}
			key, _ := os.ReadFile(enc)
			if b, _ := pem.Decode(key); b == nil || b.Type != "ENCRYPTED PRIVATE KEY" {
				t.Fatalf("openssl wrote %q", key)
			}
			ks := filepath.Join(dir, c.cipher+"-keystore.pem")
			os.WriteFile(ks, append(key, leaf.CertPEM...), 0o600)
			cert, err := auth.LoadKeystore(ks, "s3cret")
			if err != nil {
				t.Fatal(err)
			}
			if cert.Leaf == nil || cert.Leaf.Subject.CommonName != "broker" {
				t.Errorf("loaded %+v", cert.Leaf)
			}
			if _, err := auth.LoadKeystore(ks, "wrong"); err == nil || !strings.Contains(err.Error(), "ssl.key.password") {
				t.Errorf("a wrong password: %v", err)
			}
			if _, err := auth.LoadKeystore(ks, ""); err == nil || !strings.Contains(err.Error(), "set ssl.key.password") {
				t.Errorf("no password: %v", err)
			}
		})
	}
}
