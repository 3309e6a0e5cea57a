package fsys

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2/hadoopconf"

	"github.com/tributary-io/tributary/internal/testhdfs"
)

// TestDataTransferProtection: the DataNode connections use SASL
// authentication whenever the cluster accepts it, and a cluster that
// insists on integrity or privacy (which the HDFS client cannot read under)
// is refused before anything is written, with the setting named.
func TestDataTransferProtection(t *testing.T) {
	for _, tc := range []struct {
		conf hadoopconf.HadoopConf
		want string // the protection, or "error: <substring>"
	}{
		{hadoopconf.HadoopConf{}, ""},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "authentication"}, "authentication"},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "privacy,authentication"}, "authentication"},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "integrity"}, "error: dfs.data.transfer.protection=integrity"},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "privacy"}, "error: dfs.data.transfer.protection=privacy"},
		{hadoopconf.HadoopConf{"dfs.encrypt.data.transfer": "true", "dfs.data.transfer.protection": "authentication"}, "error: dfs.encrypt.data.transfer"},
	} {
		o, _, err := Kerberos{}.clientOptions(tc.conf, nil)
		got := o.DataTransferProtection
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("%v: got %q, want %q", tc.conf, got, tc.want)
		}
	}
	// Taking authentication where the cluster also offers more says so.
	for conf, want := range map[string]bool{"privacy,authentication": true, "authentication": false} {
		var buf bytes.Buffer
		if _, _, err := (Kerberos{}).clientOptions(hadoopconf.HadoopConf{"dfs.data.transfer.protection": conf}, slog.New(slog.NewTextHandler(&buf, nil))); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), "downgraded to authentication: the cluster also offers privacy"); got != want {
			t.Errorf("dfs.data.transfer.protection=%s: log %q, want a downgrade line: %v", conf, buf.String(), want)
		}
	}
}

// TestKerberosFlags: what the jobs scheduler hands its worker processes.
func TestKerberosFlags(t *testing.T) {
	k := Kerberos{Principal: "etl@EXAMPLE.COM", Keytab: "/k/etl.keytab", NameNodePrincipal: "hdfs/_HOST@EXAMPLE.COM"}
	got := strings.Join(k.Flags(), " ")
	want := "--hdfs-kerberos-principal etl@EXAMPLE.COM --hdfs-kerberos-keytab /k/etl.keytab --dfs-namenode-kerberos-principal hdfs/_HOST@EXAMPLE.COM"
	if got != want {
		t.Errorf("Flags() = %q, want %q", got, want)
	}
	if f := (Kerberos{}).Flags(); len(f) != 0 {
		t.Errorf("no settings gave flags %q", f)
	}
}

// TestKerberosTicketRenewal keeps one HDFS client for three lifetimes of
// its Kerberos tickets (20 s on this test's KDC), as a long load keeps its
// client for hours of 10-hour tickets, writing and reading all along. At
// the end the client must still get a fresh service ticket for the
// NameNode, which is what it needs to reconnect (after a NameNode failover
// or a dropped connection): its TGT was renewed, or got again from the
// keytab, while it lived. A long test (TRIBUTARY_TEST_LONG): a cluster of
// its own and a minute of waiting.
func TestKerberosTicketRenewal(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("long test: TRIBUTARY_TEST_LONG=1 (make test-long)")
	}
	t.Parallel()
	const lifetime = 20 * time.Second
	c := testhdfs.StartKerberized(t, fmt.Sprintf("HDFS_KDC_TICKET_LIFETIME_MS=%d", lifetime.Milliseconds()))
	k := c.Kerberos
	fs, err := Open("hdfs://"+c.NameNode+"/tmp/renewal", Options{HadoopConfDir: k.ConfDir,
		Kerberos: Kerberos{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	start := time.Now()
	for i := 0; time.Since(start) < 3*lifetime; i++ {
		if i > 0 {
			time.Sleep(lifetime / 2)
		}
		name := fmt.Sprintf("f%d", i)
		want := bytes.Repeat([]byte(name), 1000)
		if err := fs.WriteFileAtomic(name, want); err != nil {
			t.Fatalf("after %v: write %s: %v", time.Since(start).Round(time.Second), name, err)
		}
		if got, err := fs.ReadFile(name); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after %v: read %s back: %d bytes, %v", time.Since(start).Round(time.Second), name, len(got), err)
		}
	}
	h := fs.(*hdfsFS)
	spn, _, _ := strings.Cut(k.NameNodePrincipal, "@")
	tkt, _, err := h.krb.GetServiceTicket(spn)
	if err != nil {
		t.Fatalf("after %v (%d ticket lifetimes) the client cannot get a ticket for the NameNode: %v",
			time.Since(start).Round(time.Second), int(time.Since(start)/lifetime), err)
	}
	t.Logf("after %v: a service ticket for %s", time.Since(start).Round(time.Second), tkt.SName.PrincipalNameString())
}
