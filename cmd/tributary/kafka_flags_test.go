package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestKafkaFlagNamesLogDump: a line of a runbook written for
// kafka-dump-log.sh prints what the same dump with tributary's own flags
// prints, and every Kafka flag name turns up in the command's help.
func TestKafkaFlagNamesLogDump(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo-0")
	mustRunCLI(t, "", "log", "generate", dir, "--records", "20")
	seg := filepath.Join(dir, "00000000000000000000.log")
	ours := mustRunCLI(t, "", "log", "dump", "--deep", "--print-data", seg)
	kafka := mustRunCLI(t, "", "log", "dump", "--deep-iteration", "--print-data-log", "--files", seg)
	if ours != kafka || !strings.Contains(ours, "| offset: 19 ") {
		t.Errorf("log dump with Kafka's flags:\n%s\nwith ours:\n%s", kafka, ours)
	}
	// --files takes a comma-separated list, as Kafka's does.
	idx := filepath.Join(dir, "00000000000000000000.index")
	two := mustRunCLI(t, "", "log", "dump", "--deep-iteration", "--files", seg+","+idx)
	if !strings.Contains(two, "Dumping "+seg) || !strings.Contains(two, "Dumping "+idx) {
		t.Errorf("--files a,b dumped:\n%s", two)
	}
	help := mustRunCLI(t, "", "log", "dump", "--help")
	for _, want := range []string{"--deep-iteration (--deep)", "--print-data-log (--print-data)", "--files"} {
		if !strings.Contains(help, want) {
			t.Errorf("log dump --help does not name %s:\n%s", want, help)
		}
	}
	if _, _, err := runKafkaCmd(t, "", "log", "dump"); err == nil {
		t.Error("log dump without a path or --files succeeded")
	}
	if os.Getenv("TRIBUTARY_DEBUG_HELP") != "" {
		t.Log(help)
	}
}

// TestKafkaFlagNames: the commands that mirror Kafka's admin and console
// tools do the same with Kafka's flag names as with their own, against a
// real broker: topics are created, altered, described and deleted with
// kafka-topics.sh's and kafka-configs.sh's names, records produced and
// consumed with the console tools' names, offsets reset and groups described
// and deleted with kafka-consumer-groups.sh's, leaders elected with
// kafka-leader-election.sh's.
func TestKafkaFlagNames(t *testing.T) {
	b := testbroker.Start(t)
	bs := b.Addr()
	run := func(stdin string, args ...string) string {
		t.Helper()
		began := time.Now()
		defer func() { t.Logf("%s: %v", strings.Join(args, " "), time.Since(began).Round(time.Millisecond)) }()
		return mustRunCLI(t, stdin, append(args, "--bootstrap-server", bs)...)
	}
	sorted := false
	same := func(what string, kafka, ours []string) string {
		t.Helper()
		k, o := run("", kafka...), run("", ours...)
		if sorted {
			// Partitions are read concurrently: only each one's order is kept.
			k, o = sortLines(k), sortLines(o)
		}
		if k != o {
			t.Errorf("%s: with Kafka's flags\n%s\nwith ours\n%s", what, k, o)
		}
		return k
	}

	run("", "topic", "create", "--topic", "runbook", "--partitions", "2", "--replication-factor", "1")
	run("", "topic", "alter-config", "--entity-name", "runbook", "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]")
	run("", "topic", "add-partitions", "--topic", "runbook", "--partitions", "3")
	desc := same("topic describe", []string{"topic", "describe", "--topic", "runbook"}, []string{"topic", "describe", "runbook"})
	for _, re := range []string{`(?m)^PARTITIONS +3$`, `(?m)cleanup\.policy=compact,delete `, `(?m)retention\.ms=3600000 `} {
		if !regexp.MustCompile(re).MatchString(desc) {
			t.Errorf("after create, alter-config and add-partitions with Kafka's flags, describe lacks %s:\n%s", re, desc)
		}
	}
	run("", "topic", "alter-config", "--entity-name", "runbook", "--delete-config", "retention.ms,cleanup.policy")
	if desc := run("", "topic", "describe", "runbook"); strings.Contains(desc, "retention.ms=") || strings.Contains(desc, "cleanup.policy=") {
		t.Errorf("--delete-config retention.ms,cleanup.policy left them:\n%s", desc)
	}

	run("a\nb\nc\nd\n", "produce", "--topic", "runbook", "--request-required-acks", "-1", "--compression-codec", "gzip")
	sorted = true
	all := same("consume", []string{"consume", "--topic", "runbook", "--from-beginning", "--max-messages", "4", "--format", `%p %o %s\n`},
		[]string{"consume", "runbook", "--from-beginning", "--count", "4", "--format", `%p %o %s\n`})
	if n := strings.Count(all, "\n"); n != 4 {
		t.Errorf("consume --max-messages 4 printed %d lines:\n%s", n, all)
	}
	same("consume --offset earliest", []string{"consume", "--topic", "runbook", "--offset", "earliest", "--max-messages", "4", "--format", `%p %o %s\n`},
		[]string{"consume", "runbook", "--from-beginning", "--count", "4", "--format", `%p %o %s\n`})

	sorted = false
	reset := func(to ...string) string {
		return run("", append([]string{"group", "reset-offsets", "--group", "runbook-app", "--topic", "runbook", "--execute"}, to...)...)
	}
	reset("--to-latest")
	reset("--to-earliest")
	reset("--shift-by", "1")
	reset("--to-offset", "0")
	reset("--to-datetime", "2000-01-01T00:00:00Z")
	same("group describe", []string{"group", "describe", "--group", "runbook-app"}, []string{"group", "describe", "runbook-app"})
	if list := run("", "group", "list", "--state", "Empty"); !strings.Contains(list, "runbook-app") {
		t.Errorf("group list --state Empty lacks runbook-app:\n%s", list)
	}
	run("", "group", "delete", "--group", "runbook-app")
	if list := run("", "group", "list"); strings.Contains(list, "runbook-app") {
		t.Errorf("group delete --group runbook-app left it:\n%s", list)
	}

	same("elect-leaders", []string{"cluster", "elect-leaders", "--election-type", "PREFERRED", "--topic", "runbook", "--partition", "0"},
		[]string{"cluster", "elect-leaders", "--type", "preferred", "--topic", "runbook", "--partition", "0"})
	run("", "cluster", "elect-leaders", "--election-type", "preferred", "--all-topic-partitions")
	if _, _, err := runKafkaCmd(t, "", "cluster", "elect-leaders", "--all-topic-partitions", "--topic", "runbook", "--bootstrap-server", bs); err == nil {
		t.Error("elect-leaders --all-topic-partitions --topic succeeded")
	}
	same("reassign generate", []string{"cluster", "reassign", "generate", "--topics", "runbook", "--broker-list", "1"},
		[]string{"cluster", "reassign", "generate", "--topics", "runbook", "--brokers", "1"})

	run("", "topic", "delete", "--topic", "runbook")
	if list := run("", "topic", "list"); strings.Contains(list, "runbook") {
		t.Errorf("topic delete --topic runbook left it:\n%s", list)
	}
}

func sortLines(s string) string {
	l := strings.Split(s, "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}
