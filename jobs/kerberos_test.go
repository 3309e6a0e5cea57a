package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/jobs"
)

// TestKerberosProcessExecutor runs a job of the process executor against a
// Kerberized HDFS, with the Kerberos settings in the jobs file: the
// scheduler and each "load worker" process it starts log in from the
// keytab, and the run commits every record. A long test (TRIBUTARY_TEST_LONG):
// it costs a Kerberized HDFS of its own, three JVMs, and loader's
// TestLoadKerberos checks the login in make test.
func TestKerberosProcessExecutor(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("long test: TRIBUTARY_TEST_LONG=1 (make test-long)")
	}
	t.Parallel()
	c := testhdfs.Kerberized(t)
	k := c.Kerberos
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "buys", 2)
	p := &producer{t: t, addr: b.Addr(), topic: "buys"}
	p.produce(3000)
	target := "hdfs://" + c.NameNode + testhdfs.KerberizedDir(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\nhdfs:\n  kerberos:\n    principal: %s\n    keytab: %s\n    krb5:\n      conf: %s\njobs:\n",
		b.Addr(), k.Principal, k.Keytab, k.Krb5Conf)+
		jobYAML("buys", "buys", target, "    parallelism: 2\n    executor: process\n"))
	s := serve(t, file, "HADOOP_CONF_DIR="+k.ConfDir)
	if _, err := s.client.Trigger(context.Background(), "buys"); err != nil {
		t.Fatal(err)
	}
	opts := fsys.Options{HadoopConfDir: k.ConfDir, Kerberos: fsys.Kerberos{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}}
	var recs []*jobs.Record
	eventually(t, 120*time.Second, "a successful run", func() bool {
		fs, err := fsys.Open(target, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		recs, err = jobs.ReadHistory(fs, "buys", 0)
		if err != nil && !fsys.IsNotExist(err) {
			t.Fatal(err)
		}
		return countOutcome(recs, jobs.Succeeded) == 1
	})
	var rows int64
	for _, r := range recs {
		rows += r.Rows
	}
	if rows != 3000 {
		t.Errorf("the run wrote %d rows, want 3000", rows)
	}
	if n := strings.Count(s.Log(), `msg="child exited"`); n != 2 {
		t.Errorf("the process executor ran %d worker processes, want 2", n)
	}
	// Each worker logged in itself (it succeeded against a NameNode that
	// takes Kerberos only) with the scheduler's settings.
	if n := strings.Count(s.Log(), "--hdfs-kerberos-keytab "+k.Keytab); n != 2 {
		t.Errorf("%d worker processes were given the keytab, want 2", n)
	}
}
