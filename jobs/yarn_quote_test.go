package jobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/loader"
)

// Every configured value reaches the YARN container's command as one shell
// word, and a value the launch script's double quotes would still expand
// is refused: run through the two shells a NodeManager uses, a hostile
// bootstrap list or user name stays an argument, never a command.
func TestYARNConfigQuoting(t *testing.T) {
	t.Parallel()
	p := &loader.Plan{Run: "clicks-1"}
	e := &yarnExecutor{cfg: YARN{ContainerRetries: 0}, target: "hdfs://nn:8020/lake dir", bootstrap: "b1:9092;touch pwned", hdfsUser: "etl|id"}
	cmd, err := e.workerCommand(p, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The launch script: exec /bin/bash -c "<command>", with CONTAINER_ID
	// set; ./tributary is a script that prints its arguments, one a line.
	dir := t.TempDir()
	os.WriteFile(dir+"/tributary", []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755)
	launch := "exec /bin/bash -c \"" + cmd + "\"\n"
	sh := exec.Command("/bin/bash", "-c", launch)
	sh.Dir = dir
	sh.Env = append(os.Environ(), "CONTAINER_ID=container_1_0001_01_000003")
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", launch, err, out)
	}
	want := "load\nworker\n--plan\nhdfs://nn:8020/lake dir/_tributary/plans/clicks-1.json\n--index\n1\n--count\n2\n--bootstrap\nb1:9092;touch pwned\n--hdfs-user\netl|id\n"
	if string(out) != want {
		t.Errorf("the worker's arguments:\n%s\nwant:\n%s", out, want)
	}
	if _, err := os.Stat(dir + "/pwned"); err == nil {
		t.Error("the bootstrap value ran as a command")
	}
	for _, bad := range []string{"b1:9092$(id)", "b1`id`", `b1"; id; "`, "b1'x", "b1\nid"} {
		e.bootstrap = bad
		if _, err := e.workerCommand(p, 2, nil); err == nil || !strings.Contains(err.Error(), "--bootstrap") {
			t.Errorf("bootstrap %q: %v, want refused", bad, err)
		}
	}
}

// The RM's principal defaults to yarn-site.xml's, as a Hadoop client finds it.
func TestYARNSiteProperty(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(`<?xml version="1.0"?>
<configuration>
  <property><name>yarn.resourcemanager.address</name><value>rm:8032</value></property>
  <property>
    <name>yarn.resourcemanager.principal</name>
    <value> rm/_HOST@EXAMPLE.COM </value>
  </property>
</configuration>`), 0o644)
	if got := yarnSiteProperty(dir, "yarn.resourcemanager.principal"); got != "rm/_HOST@EXAMPLE.COM" {
		t.Fatalf("got %q", got)
	}
	if got := yarnSiteProperty(t.TempDir(), "yarn.resourcemanager.principal"); got != "" {
		t.Fatalf("no yarn-site.xml: got %q", got)
	}
}
