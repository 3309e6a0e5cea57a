package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Broker properties come from the YAML file, then TRIBUTARY_* variables,
// then --set, each overriding the one before, by Kafka property name.
func TestBrokerPropertyPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "broker.yaml")
	yaml := "log.retention.hours: 1\nnum.partitions: 2\nlog:\n  segment.bytes: 1048576\nlisteners: [PLAINTEXT://127.0.0.1:19092]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRIBUTARY_NUM_PARTITIONS", "3")
	t.Setenv("TRIBUTARY_MIN_INSYNC_REPLICAS", "1")
	cmd := &cobra.Command{}
	cmd.Flags().String("config", file, "")
	props, err := brokerProperties(cmd, []string{"min.insync.replicas=2"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"log.retention.hours": "1",                           // file only
		"log.segment.bytes":   "1048576",                     // nested YAML
		"listeners":           "PLAINTEXT://127.0.0.1:19092", // YAML list
		"num.partitions":      "3",                           // env over file
		"min.insync.replicas": "2",                           // --set over env
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
}

// A typo or a bad value stops the broker before it touches any data, with a
// message that names the property.
func TestBrokerRefusesBadProperties(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "log.retension.hours=1"}, "unknown property log.retension.hours"},
		{[]string{"--set", "num.partitions=many"}, `invalid value "many" for num.partitions`},
		{[]string{"--set", "message.max.bytes=2000000", "--set", "replica.fetch.max.bytes=1000000"}, "replica.fetch.max.bytes=1000000 must be at least message.max.bytes=2000000"},
		{[]string{"--listeners", "SSL://127.0.0.1:9093"}, "listener SSL is SSL and needs listener.name.ssl.ssl.keystore.location"},
		{[]string{"--set", "listener.name.ssl.ssl.client.auth=maybe"}, `invalid value "maybe" for listener.name.ssl.ssl.client.auth`},
		{[]string{"--set", "listener.name.ssl.log.dirs=/x"}, "log.dirs cannot be set per listener"},
		{[]string{"--set", "novalue"}, `--set "novalue": want name=value`},
	} {
		dir := t.TempDir()
		root := newRootCommand()
		root.SetArgs(append([]string{"broker", "--log-dirs", dir}, tc.args...))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%v: the refused start wrote %d files into the log dir", tc.args, len(ents))
		}
	}
}

// --admin-listen given anywhere (flag, file, environment) is the user's;
// only when it is nowhere does the broker derive it from its listener.
func TestAdminListenSetByUser(t *testing.T) {
	newCmd := func() *cobra.Command {
		cmd := &cobra.Command{}
		cmd.Flags().String("admin-listen", "127.0.0.1:9644", "")
		return cmd
	}
	cmd := newCmd()
	if err := newConfig().load(cmd); err != nil {
		t.Fatal(err)
	}
	if setByUser(cmd, "admin-listen") {
		t.Error("setByUser with no flag, file or environment")
	}
	cmd = newCmd()
	cmd.Flags().Set("admin-listen", "127.0.0.1:9644")
	if !setByUser(cmd, "admin-listen") {
		t.Error("not setByUser with the flag given its default value")
	}
	t.Setenv("TRIBUTARY_ADMIN_LISTEN", "127.0.0.1:9644")
	cmd = newCmd()
	if err := newConfig().load(cmd); err != nil {
		t.Fatal(err)
	}
	if !setByUser(cmd, "admin-listen") {
		t.Error("not setByUser with TRIBUTARY_ADMIN_LISTEN")
	}
}
