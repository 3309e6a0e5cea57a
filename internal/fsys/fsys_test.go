package fsys_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

func TestMain(m *testing.M) { testhdfs.Main(m) }

// The loader's commit protocol rests on these semantics; both file systems
// must give them.
func TestContract(t *testing.T) {
	targets := map[string]func(t *testing.T) string{
		"file": func(t *testing.T) string { return "file://" + t.TempDir() },
		"hdfs": func(t *testing.T) string {
			return "hdfs://" + testhdfs.Get(t).NameNode + testhdfs.Dir(t)
		},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			fs, err := fsys.Open(target(t), fsys.Options{User: testhdfs.DefaultUser})
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			write := func(name, data string) error {
				w, err := fs.Create(name)
				if err != nil {
					return err
				}
				io.WriteString(w, data)
				return w.Close()
			}
			if err := write("a/b/one", "1"); err != nil {
				t.Fatalf("Create with missing parents: %v", err)
			}
			if err := write("a/b/one", "again"); !fsys.IsExist(err) {
				t.Fatalf("Create over an existing file: %v, want ErrExist", err)
			}
			if err := write("a/two", "2"); err != nil {
				t.Fatal(err)
			}
			if err := fs.Rename("a/two", "a/b/one"); err != nil {
				t.Fatalf("Rename over an existing file: %v", err)
			}
			if b, err := fs.ReadFile("a/b/one"); err != nil || string(b) != "2" {
				t.Fatalf("after Rename: %q %v", b, err)
			}
			// RenameNoReplace: a refusal changes nothing, and of writers
			// racing for one name exactly one wins.
			if err := write("a/three", "3"); err != nil {
				t.Fatal(err)
			}
			if err := fs.RenameNoReplace("a/three", "a/b/one"); !fsys.IsExist(err) {
				t.Fatalf("RenameNoReplace over an existing file: %v, want ErrExist", err)
			}
			if b, err := fs.ReadFile("a/b/one"); err != nil || string(b) != "2" {
				t.Fatalf("a refused RenameNoReplace changed the destination: %q %v", b, err)
			}
			if err := fs.RenameNoReplace("a/three", "n/m/three"); err != nil {
				t.Fatalf("RenameNoReplace into missing parents: %v", err)
			}
			if b, err := fs.ReadFile("n/m/three"); err != nil || string(b) != "3" {
				t.Fatalf("after RenameNoReplace: %q %v", b, err)
			}
			if _, err := fs.Stat("a/three"); !fsys.IsNotExist(err) {
				t.Fatalf("RenameNoReplace kept the old name: %v", err)
			}
			if err := fs.RenameNoReplace("a/three", "n/x"); !fsys.IsNotExist(err) {
				t.Fatalf("RenameNoReplace of a missing file: %v, want ErrNotExist", err)
			}
			const racers = 4
			errs := make(chan error, racers)
			for i := range racers {
				name := fmt.Sprintf("race/tmp%d", i)
				if err := write(name, strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
				go func() { errs <- fs.RenameNoReplace(name, "race/won") }()
			}
			won := 0
			for range racers {
				if err := <-errs; err == nil {
					won++
				} else if !fsys.IsExist(err) {
					t.Fatalf("a racer lost with %v, want ErrExist", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d racers won the name, want 1", won)
			}
			if ents, _ := fs.ReadDir("race"); len(ents) != racers {
				t.Fatalf("%d files after the race, want %d (the winner and the losers' temporaries)", len(ents), racers)
			}
			if err := fs.Rename("a/two", "c/d/x"); !fsys.IsNotExist(err) {
				t.Fatalf("Rename of a missing file: %v, want ErrNotExist", err)
			}
			if err := fs.Rename("a/b/one", "c/d/x"); err != nil {
				t.Fatalf("Rename into missing parents: %v", err)
			}
			for _, v := range []string{"first", "second"} {
				if err := fs.WriteFileAtomic("state/job.json", []byte(v)); err != nil {
					t.Fatal(err)
				}
				if b, _ := fs.ReadFile("state/job.json"); string(b) != v {
					t.Fatalf("WriteFileAtomic: read %q, want %q", b, v)
				}
			}
			if ents, err := fs.ReadDir("state"); err != nil || len(ents) != 1 {
				t.Fatalf("WriteFileAtomic left %d entries (%v)", len(ents), err)
			}
			if _, err := fs.ReadDir("missing"); !fsys.IsNotExist(err) {
				t.Fatalf("ReadDir of a missing dir: %v", err)
			}
			if err := fs.RemoveAll("c"); err != nil {
				t.Fatal(err)
			}
			if err := fs.RemoveAll("c"); err != nil {
				t.Fatalf("RemoveAll of a missing dir: %v", err)
			}
			if _, err := fs.Stat("c/d/x"); !fsys.IsNotExist(err) {
				t.Fatalf("after RemoveAll: %v", err)
			}
			if _, err := fs.Create("../escape"); err == nil {
				t.Fatal("a path above the root was accepted")
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	for _, uri := range []string{"", "s3://bucket/x", "file://host/x", "hdfs://nn1:8020,nn2/x"} {
		if _, err := fsys.Open(uri, fsys.Options{}); err == nil {
			t.Errorf("Open(%q) succeeded", uri)
		} else {
			t.Logf("Open(%q): %v", uri, err)
		}
	}
}

// A nameservice of the Hadoop configuration names the NameNodes of an HA
// pair; the client tries them in turn.
func TestNameservice(t *testing.T) {
	nn := testhdfs.Get(t).NameNode
	conf := t.TempDir()
	os.WriteFile(filepath.Join(conf, "hdfs-site.xml"), []byte(`<configuration>
<property><name>dfs.nameservices</name><value>lake</value></property>
<property><name>dfs.ha.namenodes.lake</name><value>nn1,nn2</value></property>
<property><name>dfs.namenode.rpc-address.lake.nn1</name><value>127.0.0.1:1</value></property>
<property><name>dfs.namenode.rpc-address.lake.nn2</name><value>`+nn+`</value></property>
</configuration>`), 0o644)
	t.Setenv("HADOOP_CONF_DIR", conf)
	fs, err := fsys.Open("hdfs://lake"+testhdfs.Dir(t), fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatalf("through the nameservice (one NameNode down): %v", err)
	}
	fs.Close()
}
