package testbroker

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// StartKafkaAuthorizer starts Kafka as StartKafka does, with
// StandardAuthorizer and a SASL_PLAINTEXT listener of PLAIN users
// (name → password) beside the PLAINTEXT one; brokers and controllers
// reach each other as User:ANONYMOUS, a super user with superUsers.
// SASLAddr is the SASL listener's address.
func StartKafkaAuthorizer(t testing.TB, users map[string]string, superUsers []string, extra ...string) *Kafka {
	t.Helper()
	java, lib := KafkaLib(t)
	dir := t.TempDir()
	k := &Kafka{t: t, java: java, lib: lib, port: freePort(t), props: filepath.Join(dir, "server.properties")}
	cport, sport := freePort(t), freePort(t)
	k.saslPort = sport
	var jaas []string
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		jaas = append(jaas, fmt.Sprintf("user_%s=\"%s\"", u, users[u]))
	}
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,SASL_PLAINTEXT://127.0.0.1:%[4]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d,SASL_PLAINTEXT://127.0.0.1:%[4]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required %[5]s;
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=%[6]s
log.dirs=%[3]s
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
%[7]s
`, k.port, cport, filepath.Join(dir, "data"), sport, strings.Join(jaas, " "),
		strings.Join(append([]string{"User:ANONYMOUS"}, superUsers...), ";"), strings.Join(extra, "\n"))
	if err := os.WriteFile(k.props, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := RunKafkaTool(t, "kafka.tools.StorageTool", "format", "-t", randomClusterID(), "-c", k.props); err != nil {
		t.Fatalf("kafka StorageTool format: %v\n%s%s", err, out, errOut)
	}
	k.start()
	t.Cleanup(k.stop)
	return k
}

// SASLAddr is the SASL_PLAINTEXT listener of StartKafkaAuthorizer.
func (k *Kafka) SASLAddr() string { return fmt.Sprintf("127.0.0.1:%d", k.saslPort) }
