package jobs_test

import (
	"bytes"
	"context"
	iofs "io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/internal/testyarn"
)

// Kerberized YARN end to end: `tributary load run --executor yarn` against
// a ResourceManager and NodeManager that take Kerberos only, beside a
// Kerberized HDFS (RPC privacy). The submission authenticates with SPNEGO
// and carries an HDFS delegation token (the NodeManager localizes with
// it); the workers log in from the keytab shipped as a private local
// resource. Every record lands once; the keytab is the user's alone in HDFS
// staging and in the NodeManager's cache, and its keys are in no
// container log.
func TestYARNKerberos(t *testing.T) {
	t.Parallel()
	y := testyarn.Kerberized(t)
	k := y.HDFS.Kerberos
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "krb", 2)
	p := &producer{t: t, addr: b.Addr(), topic: "krb"}
	p.produce(3000)
	target := "hdfs://" + y.HDFS.NameNode + testhdfs.KerberizedDir(t)
	opts := fsys.Options{HadoopConfDir: k.ConfDir, Kerberos: fsys.Kerberos{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}}

	// The keytab while the application runs: its mode and its directory's.
	fs, err := fsys.Open(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var mu sync.Mutex
	seen := map[string]string{}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		apps := "_tributary/yarn/tributary"
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ents, _ := fs.ReadDir(apps)
			for _, ent := range ents {
				dir := path.Join(apps, ent.Name())
				o, dp, err1 := fsys.Owner(fs, dir)
				ko, kp, err2 := fsys.Owner(fs, path.Join(dir, "tributary.keytab"))
				if err1 == nil && err2 == nil {
					mu.Lock()
					seen[ent.Name()] = o + " " + (iofs.ModeDir | dp).String() + " " + ko + " " + kp.String()
					mu.Unlock()
				}
			}
		}
	}()

	env := append(os.Environ(), "HADOOP_CONF_DIR="+k.ConfDir, "KRB5_CONFIG="+k.Krb5Conf, "KRB5CCNAME=FILE:"+filepath.Join(t.TempDir(), "no-cache"))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbroker.Binary(t), "load", "run", "--topics", "krb", "--target", target, "-b", b.Addr(),
		"--schema", activitySchema, "--time-field", "timestamp", "--max-records-per-unit", "1000",
		"--hdfs-kerberos-principal", k.Principal, "--hdfs-kerberos-keytab", k.Keytab,
		"--parallelism", "2", "--executor", "yarn",
		"--yarn-resource-manager", y.RM, "--yarn-allow-insecure-http", "--yarn-resource-manager-principal", y.RMPrincipal,
		"--yarn-am-jar", y.DShellJar, "--yarn-classpath", y.AppClassPath,
		"--yarn-container-memory-mb", "256", "--yarn-am-memory-mb", "256", "--yarn-max-containers", "2")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	close(stop)
	<-watched
	if err != nil {
		t.Fatalf("load run --executor yarn on Kerberized YARN: %v\n%s", err, lastLines(string(out), 40))
	}
	if !strings.Contains(string(out), "FINISHED/SUCCEEDED") {
		t.Errorf("load run's output has no FINISHED/SUCCEEDED:\n%s", out)
	}
	t.Logf("%s\n%s", firstLine(string(out), "YARN application application_"), firstLine(string(out), "first worker running"))
	checkExactlyOnce(t, readLakeWith(t, target, "krb", opts), testbroker.HighWatermarks(t, b.Addr(), "krb"), p.next)

	mu.Lock()
	if len(seen) == 0 {
		t.Error("the keytab was never seen in the staging dir while the application ran")
	}
	for app, s := range seen {
		if want := "tributary drwx------ tributary -r--------"; s != want {
			t.Errorf("application %s's staging dir and keytab: %q, want %q", app, s, want)
		}
	}
	mu.Unlock()
	if ents, _ := fs.ReadDir("_tributary/yarn/tributary"); len(ents) != 0 {
		t.Errorf("%d application dirs (with their keytabs) left in staging", len(ents))
	}

	// The workers logged in from the shipped keytab, and no container's
	// log holds any of its keys; the NodeManager's localized copy is
	// nobody else's.
	kt, err := keytab.Load(k.Keytab)
	if err != nil {
		t.Fatal(err)
	}
	var logins, localized int
	for _, root := range []string{filepath.Join(y.Dir, "nmlogs"), filepath.Join(y.Dir, "local")} {
		filepath.WalkDir(root, func(name string, d iofs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if strings.HasPrefix(name, filepath.Join(y.Dir, "local")) {
				if d.Name() == "tributary.keytab" {
					localized++
					if st, err := os.Stat(name); err == nil && st.Mode().Perm()&0o077 != 0 {
						t.Errorf("the localized keytab %s has mode %v", name, st.Mode().Perm())
					}
				}
				return nil
			}
			data, err := os.ReadFile(name)
			if err != nil {
				return nil
			}
			if bytes.Contains(data, []byte("keytab "+"tributary.keytab")) {
				logins++
			}
			for _, e := range kt.Entries {
				if len(e.Key.KeyValue) >= 16 && bytes.Contains(data, e.Key.KeyValue) {
					t.Errorf("container log %s holds a key of %s", name, e.Principal)
				}
			}
			return nil
		})
	}
	t.Logf("staging while running: %v; %d container logs say the worker logged in from the keytab; %d localized keytabs", seen, logins, localized)
	if logins == 0 {
		t.Errorf("no container log says a worker logged in from %s", "tributary.keytab")
	}
	if localized == 0 {
		t.Errorf("no localized %s under %s", "tributary.keytab", filepath.Join(y.Dir, "local"))
	}
}
