package testhdfs

import (
	"errors"
	"os"
	"testing"

	"github.com/tributary-io/tributary/internal/hadoopd"
	"github.com/tributary-io/tributary/internal/testbroker"
)

var (
	kerberized        *Cluster
	kerberizedFailed  error
	kerberizedSkipped string
)

// Kerberized returns the process's Kerberized HDFS (scripts/hdfs-up.sh with
// HDFS_KERBEROS=1: a MiniKdc and a NameNode and DataNode that take Kerberos
// only), starting it on the first call; it is stopped with the shared one
// (Main) or by the watchdog. It is a cluster of its own, three JVMs beside
// the shared one's two, so only Kerberos tests use it, and they share it.
//
// The cluster checks no permissions (HDFS_PERMISSIONS=false: its setup
// cannot use WebHDFS), so a client creates its own directories; Dir gives
// names that are safe here too, KerberizedDir without starting the shared
// cluster.
//
// Missing parts skip, or fail under CI, as for Get. An outside cluster
// (TRIBUTARY_HDFS_NAMENODE) is not Kerberized: the tests skip.
func Kerberized(t testing.TB) *Cluster {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if kerberized != nil {
		return kerberized
	}
	if os.Getenv("TRIBUTARY_HDFS_NAMENODE") != "" {
		t.Skip("TRIBUTARY_HDFS_NAMENODE names an outside cluster; the Kerberos tests start their own")
	}
	if kerberizedSkipped != "" {
		testbroker.Require(t, false, "Kerberized HDFS", kerberizedSkipped)
	}
	if kerberizedFailed != nil {
		t.Fatalf("the Kerberized HDFS did not start earlier in this test process: %v", kerberizedFailed)
	}
	// RPC privacy, as secure clusters commonly run; the DataNodes accept
	// authentication too, the one level colinmarc/hdfs reads blocks under
	// (internal/fsys/kerberos.go).
	c := start(t, &kerberizedSkipped, &kerberizedFailed, "HDFS_KERBEROS=1",
		"HDFS_RPC_PROTECTION=privacy", "HDFS_DATA_TRANSFER_PROTECTION=authentication,privacy")
	if c.Kerberos == nil {
		kerberizedFailed = errors.New("scripts/hdfs-up.sh with HDFS_KERBEROS=1 printed no Kerberos settings")
		t.Fatal(kerberizedFailed)
	}
	kerberized = c
	return kerberized
}

// KerberizedDir is Dir on the Kerberized cluster.
func KerberizedDir(t testing.TB) string {
	t.Helper()
	Kerberized(t)
	return dirName(t)
}

// StartKerberized starts a Kerberized HDFS for the calling test alone, with
// hdfs-up.sh's environment added to env (HDFS_KDC_TICKET_LIFETIME_MS=...,
// for instance), and stops it when the test ends. It costs three JVMs and a
// start; tests that do not change the cluster's settings share Kerberized.
func StartKerberized(t testing.TB, env ...string) *Cluster {
	t.Helper()
	if os.Getenv("TRIBUTARY_HDFS_NAMENODE") != "" {
		t.Skip("TRIBUTARY_HDFS_NAMENODE names an outside cluster; the Kerberos tests start their own")
	}
	var skipped string
	var failed error
	c := start(t, &skipped, &failed, append([]string{"HDFS_KERBEROS=1"}, env...)...)
	t.Cleanup(func() {
		if err := hadoopd.Down("hdfs-down.sh", c.State); err != nil {
			t.Error(err)
		}
	})
	return c
}
