package auth

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/devcerts"
)

// A keystore that fails to load, replaced by a good one while it was being
// read (an operator's rotation finishing), is loaded at the next look: the
// failure remembers the files as they were before the read.
func TestReloadAfterFailedLoad(t *testing.T) {
	ca, err := devcerts.NewCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.Server("first", []string{"127.0.0.1"}, time.Hour)
	next, _ := ca.Server("next", []string{"127.0.0.1"}, time.Hour)
	ks := filepath.Join(t.TempDir(), "broker.pem")
	os.WriteFile(ks, first.Keystore, 0o600)
	st, err := NewServerTLS(TLSSettings{Listener: "SSL", Keystore: ks, ClientAuth: "none",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	look := func() string {
		st.mu.Lock()
		st.checked = time.Time{}
		st.mu.Unlock()
		return st.current().Certificates[0].Leaf.Subject.CommonName
	}
	os.WriteFile(ks, []byte("half a file"), 0o600)
	afterLoad = func() { afterLoad = nil; os.WriteFile(ks, next.Keystore, 0o600) }
	defer func() { afterLoad = nil }()
	if cn := look(); cn != "first" {
		t.Fatalf("after a failed load serves %s", cn)
	}
	if cn := look(); cn != "next" {
		t.Fatalf("the keystore rotated during a failed load is never loaded: still %s", cn)
	}
}
