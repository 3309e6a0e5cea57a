package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/broker/log/dump"
)

func execute(t *testing.T, root *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	var out, errw bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errw.String(), err
}

// Every command documents itself with a Long help and a worked example.
func TestHelpComplete(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Name() != "completion" && !strings.HasPrefix(c.CommandPath(), "tributary completion") {
			if c.Long == "" || c.Example == "" {
				t.Errorf("%q: Long or Example missing", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

// probe is a command whose flags show where their values came from.
func probe(got *string, gotList *[]string) *cobra.Command {
	c := &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error { return nil }}
	c.Flags().StringVar(got, "alpha-beta", "default", "")
	c.Flags().StringSliceVar(gotList, "log-dirs", []string{"/default"}, "")
	return c
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	flat := filepath.Join(dir, "flat.yaml")
	nested := filepath.Join(dir, "nested.yaml")
	os.WriteFile(flat, []byte("alpha.beta: file\nlog.dirs: [/a, /b]\n"), 0o644)
	os.WriteFile(nested, []byte("alpha:\n  beta: nested\n"), 0o644)

	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"default", nil, nil, "default"},
		{"file", nil, []string{"--config", flat}, "file"},
		{"nested file", nil, []string{"--config", nested}, "nested"},
		{"file named by env", map[string]string{"TRIBUTARY_CONFIG": flat}, nil, "file"},
		{"env over file", map[string]string{"TRIBUTARY_ALPHA_BETA": "env"}, []string{"--config", flat}, "env"},
		{"flag over env", map[string]string{"TRIBUTARY_ALPHA_BETA": "env"}, []string{"--config", flat, "--alpha-beta", "flag"}, "flag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var got string
			var list []string
			root := newRootCommand()
			root.AddCommand(probe(&got, &list))
			if _, _, err := execute(t, root, append([]string{"probe"}, c.args...)...); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("alpha.beta = %q, want %q", got, c.want)
			}
		})
	}

	t.Run("list from file", func(t *testing.T) {
		var got string
		var list []string
		root := newRootCommand()
		root.AddCommand(probe(&got, &list))
		if _, _, err := execute(t, root, "--config", flat, "probe"); err != nil {
			t.Fatal(err)
		}
		if strings.Join(list, ",") != "/a,/b" {
			t.Errorf("log.dirs = %q", list)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	if _, _, err := execute(t, newRootCommand(), "--config", filepath.Join(t.TempDir(), "none.yaml"), "version"); err == nil {
		t.Error("a missing config file is not an error")
	}
	t.Setenv("TRIBUTARY_LOG_LEVEL", "loud")
	_, _, err := execute(t, newRootCommand(), "version")
	if err == nil || !strings.Contains(err.Error(), "loud") {
		t.Errorf("bad log level from the environment: err = %v", err)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := execute(t, newRootCommand(), "version")
	if err != nil || !strings.HasPrefix(out, "tributary ") {
		t.Errorf("out %q, err %v", out, err)
	}
}

func TestGenerateAndDump(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo-0")
	out, _, err := execute(t, newRootCommand(), "log", "generate", dir,
		"--records", "25", "--batch-size", "5", "--segment-bytes", "800", "--index-interval-bytes", "100", "--codec", "lz4")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "generated 25 records in 5 batches into "+dir+": offsets 0-24") {
		t.Errorf("generate said %q", out)
	}

	out, errOut, err := execute(t, newRootCommand(), "log", "dump", "--deep", "--verify", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if n := strings.Count(out, "\n| offset: "); n != 25 {
		t.Errorf("%d records dumped, want 25:\n%s", n, out)
	}
	if n := strings.Count(out, "compresscodec: lz4 "); n != 5 {
		t.Errorf("%d lz4 batches dumped, want 5:\n%s", n, out)
	}
	if !strings.Contains(out, "Dumping "+filepath.Join(dir, "00000000000000000000.index")) {
		t.Errorf("no index dumped:\n%s", out)
	}

	// Appending again continues at the log end.
	out, _, err = execute(t, newRootCommand(), "log", "generate", dir, "--records", "3")
	if err != nil || !strings.Contains(out, "offsets 25-27") {
		t.Errorf("second generate: %q, %v", out, err)
	}
}

func TestDumpErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "00000000000000000000.log")
	_, _, err := execute(t, newRootCommand(), "log", "dump", missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, _, err := execute(t, newRootCommand(), "log", "dump"); err == nil {
		t.Error("dump without a path is not an error")
	}
	dir := filepath.Join(t.TempDir(), "p-0")
	if _, _, err := execute(t, newRootCommand(), "log", "generate", dir, "--records", "20", "--batch-size", "2", "--index-interval-bytes", "1"); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "00000000000000000000.index")
	data, err := os.ReadFile(index)
	if err != nil || len(data) < 16 {
		t.Fatalf("index of %d bytes: %v", len(data), err)
	}
	data[15]++ // second entry's position
	os.WriteFile(index, data, 0o644)
	_, errOut, err := execute(t, newRootCommand(), "log", "dump", "--verify", dir)
	if !errors.Is(err, dump.ErrVerify) || !strings.Contains(errOut, index+": entry 1: ") {
		t.Errorf("corrupt index: err = %v\n%s", err, errOut)
	}
}
