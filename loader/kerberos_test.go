package loader_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// TestLoadKerberos loads into a Kerberized HDFS (a MiniKdc, a NameNode and
// DataNode that take Kerberos only, RPC privacy, SASL on data transfer), as an operator
// of a secure cluster would: HADOOP_CONF_DIR for the cluster's settings, a
// keytab and a principal on the command line. With a keytab of the wrong
// keys, a principal the KDC does not know, or no Kerberos at all, the load
// fails with a message that says Kerberos is what failed, and the target
// stays empty.
func TestLoadKerberos(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := testhdfs.Kerberized(t)
	t.Logf("Kerberized HDFS ready after %v", time.Since(start).Round(100*time.Millisecond))
	k := c.Kerberos
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "events", 2)
	var want produced
	produce(t, b.Addr(), "events", 0, 2_000, 0, &want)
	t.Logf("broker and 2,000 events ready after %v", time.Since(start).Round(100*time.Millisecond))

	env := []string{"HADOOP_CONF_DIR=" + k.ConfDir, "KRB5_CONFIG=" + k.Krb5Conf, "KRB5CCNAME=FILE:" + filepath.Join(t.TempDir(), "no-cache")}
	load := func(t *testing.T, target string, extra ...string) (string, error) {
		args := append([]string{"load", "run", "-b", b.Addr(), "--topics", "events", "--schema", activitySchema,
			"--time-field", "timestamp", "--target", target}, extra...)
		return tributary(t, env, args...)
	}
	good := fsys.Options{HadoopConfDir: k.ConfDir, Kerberos: fsys.Kerberos{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}}
	// empty says the target was never created: nothing of a failed load
	// is left in HDFS.
	empty := func(t *testing.T, target string) {
		t.Helper()
		fs, err := fsys.Open("hdfs://"+c.NameNode+"/", good)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		rel := strings.TrimPrefix(target, "hdfs://"+c.NameNode+"/")
		if ents, err := fs.ReadDir(rel); !fsys.IsNotExist(err) {
			t.Errorf("the failed load left %s behind (%d entries, err %v)", target, len(ents), err)
		}
	}

	t.Run("keytab", func(t *testing.T) {
		target := "hdfs://" + c.NameNode + testhdfs.KerberizedDir(t)
		out, err := load(t, target, "--hdfs-kerberos-principal", k.Principal, "--hdfs-kerberos-keytab", k.Keytab)
		if err != nil {
			t.Fatalf("load with a keytab: %v\n%s", err, out)
		}
		// What the operator sees: who logged in, from where, and how the
		// cluster's traffic is protected.
		for _, s := range []string{"Kerberos login", "principal=" + k.Principal, "keytab " + k.Keytab, "hadoop.rpc.protection=privacy", "dfs.data.transfer.protection=authentication"} {
			if !strings.Contains(out, s) {
				t.Errorf("the load's output lacks %q:\n%s", s, out)
			}
		}
		l := readLakeWith(t, target, "events", good)
		checkExactlyOnce(t, l, &want, testbroker.HighWatermarks(t, b.Addr(), "events"))
		if len(files(t, l.dir)) == 0 {
			t.Error("no Parquet file in the lake")
		}
	})

	bad := []struct {
		name, why string
		args      func(t *testing.T) []string
	}{
		{"wrong keytab", "PREAUTH_FAILED", func(t *testing.T) []string {
			// The right principal with keys of another password: what a
			// keytab left over from before a password change holds.
			kt := keytab.New()
			name, realm, _ := strings.Cut(k.Principal, "@")
			if err := kt.AddEntry(name, realm, "not-the-password", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
				t.Fatal(err)
			}
			if err := kt.AddEntry(name, realm, "not-the-password", time.Now(), 1, etypeID.AES128_CTS_HMAC_SHA1_96); err != nil {
				t.Fatal(err)
			}
			data, err := kt.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "wrong.keytab")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--hdfs-kerberos-principal", k.Principal, "--hdfs-kerberos-keytab", file}
		}},
		{"unknown principal", "KDC_ERR_C_PRINCIPAL_UNKNOWN", func(t *testing.T) []string {
			return []string{"--hdfs-kerberos-principal", "nobody@EXAMPLE.COM", "--hdfs-kerberos-keytab", k.Keytab}
		}},
		{"no ticket", "ticket cache", func(t *testing.T) []string { return nil }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			target := "hdfs://" + c.NameNode + testhdfs.KerberizedDir(t)
			out, err := load(t, target, tc.args(t)...)
			if err == nil {
				t.Fatalf("the load succeeded:\n%s", out)
			}
			if !strings.Contains(out, "Kerberos") || !strings.Contains(out, tc.why) {
				t.Errorf("the error does not say Kerberos (%s) failed:\n%s", tc.why, out)
			}
			empty(t, target)
		})
	}
}
