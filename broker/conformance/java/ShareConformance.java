// Share-group (KIP-932) conformance of Apache Kafka's Java client
// (kafka-clients 4.4.0, KafkaShareConsumer) against a broker. Run by
// broker/conformance/share_test.go, against tributary or, to check this
// program itself, a real Kafka 4.4.0.
//
//   java -cp "$classes:$lib/*" ShareConformance work <bootstrap> <topic> <group> <first> <count> <limit>
//
// work: records <first>..<first+count-1> (values "id") are produced to
// <topic> (1 partition; created with the group's share.auto.offset.reset
// set to earliest when <first> is 0). Five KafkaShareConsumers
// (share.acknowledgement.mode=explicit) share the work:
//   - id % 10 == 3 is RELEASEd on its first delivery: it must come back
//     with delivery count 2 and is then accepted;
//   - id % 10 == 7 is REJECTed: it must never come back;
//   - id 5 (when in range) is always RELEASEd: it must be delivered
//     exactly <limit> times (counts 1..limit), then archived;
//   - everything else is ACCEPTed on its first delivery.
// Every record must be delivered, none accepted twice, none delivered
// after it was accepted or rejected, none with an id outside the range
// (an acknowledged record redelivered after a restart). Prints the
// per-consumer counts, the time to finish, and "SHARE OK" on success;
// otherwise "FAIL:" lines and exit status 1.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareConformance {
    static final List<String> failures = new ArrayList<>();

    static synchronized void fail(String msg) {
        failures.add(msg);
        System.out.println("FAIL: " + msg);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2], group = args[3];
        int first = Integer.parseInt(args[4]), count = Integer.parseInt(args[5]), limit = Integer.parseInt(args[6]);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            if (first == 0) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                } catch (java.util.concurrent.ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                }
                ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
                admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                        new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
            }
        }
        // id -> delivery counts seen, in order; finished ids.
        Map<Integer, List<Integer>> seen = new ConcurrentHashMap<>();
        Set<Integer> accepted = ConcurrentHashMap.newKeySet();
        Set<Integer> rejected = ConcurrentHashMap.newKeySet();
        AtomicInteger poisonDone = new AtomicInteger();
        int poison = (first <= 5 && 5 < first + count) ? 5 : -1;
        int expected = count - (poison >= 0 ? 1 : 0);
        AtomicBoolean stop = new AtomicBoolean();
        int[] perConsumer = new int[5];
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < 5; c++) {
            final int me = c;
            Thread th = new Thread(() -> {
                Properties cp = new Properties();
                cp.put("bootstrap.servers", bootstrap);
                cp.put("group.id", group);
                cp.put("client.id", "share-" + me);
                cp.put("key.deserializer", StringDeserializer.class.getName());
                cp.put("value.deserializer", StringDeserializer.class.getName());
                cp.put("share.acknowledgement.mode", "explicit");
                cp.put("max.poll.records", "20");
                try (KafkaShareConsumer<String, String> sc = new KafkaShareConsumer<>(cp)) {
                    sc.subscribe(List.of(topic));
                    while (!stop.get()) {
                        ConsumerRecords<String, String> rs = sc.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<String, String> r : rs) {
                            int id = Integer.parseInt(r.value());
                            int dc = r.deliveryCount().orElse((short) -1);
                            perConsumer[me]++;
                            List<Integer> counts = seen.computeIfAbsent(id, k -> java.util.Collections.synchronizedList(new ArrayList<>()));
                            counts.add(dc);
                            if (id < first || id >= first + count) {
                                fail("record " + id + " delivered (count " + dc + ") but it is not in this run's range: acknowledged before?");
                            }
                            if (accepted.contains(id) || rejected.contains(id)) {
                                fail("record " + id + " delivered again (count " + dc + ") after it was acknowledged");
                            }
                            AcknowledgeType t;
                            if (id == poison) {
                                t = AcknowledgeType.RELEASE;
                                if (dc != counts.size()) fail("poison record delivery " + counts.size() + " has delivery count " + dc);
                                if (dc == limit) poisonDone.incrementAndGet();
                                if (dc > limit) fail("poison record delivered " + dc + " times, limit " + limit);
                            } else if (id % 10 == 3 && dc == 1) {
                                t = AcknowledgeType.RELEASE;
                            } else if (id % 10 == 7) {
                                t = AcknowledgeType.REJECT;
                                rejected.add(id);
                            } else {
                                if (id % 10 == 3 && dc != 2) fail("released record " + id + " came back with delivery count " + dc + ", want 2");
                                t = AcknowledgeType.ACCEPT;
                                if (!accepted.add(id)) fail("record " + id + " accepted twice");
                            }
                            sc.acknowledge(r, t);
                            // A consumer's work takes time: the others get
                            // their share while it holds its records (a
                            // consumer that had the CPU to itself on a
                            // loaded machine took all 200 in a second).
                            Thread.sleep(15);
                        }
                        if (rs.count() > 0) sc.commitSync();
                    }
                } catch (Exception e) {
                    fail("consumer " + me + ": " + e);
                }
            });
            th.start();
            threads.add(th);
        }
        // The records are produced once all five consumers are members
        // with the partition assigned: on a loaded machine the first to
        // join would otherwise take
        // every record before the others have joined.
        try (Admin admin = Admin.create(ap)) {
            long joinBy = System.currentTimeMillis() + 120_000;
            int members = 0;
            while (System.currentTimeMillis() < joinBy) {
                try {
                    // A member counts once it has the partition: a new
                    // member gets its assignment at its next heartbeat.
                    members = (int) admin.describeShareGroups(List.of(group)).all().get().get(group).members().stream()
                            .filter(m -> !m.assignment().topicPartitions().isEmpty()).count();
                } catch (java.util.concurrent.ExecutionException e) {
                    members = 0; // not known yet
                }
                if (members == 5) break;
                Thread.sleep(100);
            }
            System.out.println(members + " members joined with the partition assigned");
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int id = first; id < first + count; id++) {
                p.send(new ProducerRecord<>(topic, 0, null, Integer.toString(id)));
            }
            p.flush();
        }

        long deadline = System.currentTimeMillis() + 90_000;
        while (System.currentTimeMillis() < deadline) {
            if (accepted.size() + rejected.size() == expected && (poison < 0 || poisonDone.get() > 0)) break;
            Thread.sleep(100);
        }
        System.out.println("finished after " + (System.currentTimeMillis() - (deadline - 90_000)) + " ms");
        // A moment more: nothing finished may come back.
        Thread.sleep(1500);
        stop.set(true);
        for (Thread th : threads) th.join(30_000);
        if (accepted.size() + rejected.size() != expected) {
            fail("finished " + (accepted.size() + rejected.size()) + " of " + expected + " records");
            for (int id = first; id < first + count; id++) {
                if (id != poison && !accepted.contains(id) && !rejected.contains(id)) {
                    fail("record " + id + " not finished, deliveries " + seen.get(id));
                    break;
                }
            }
        }
        if (poison >= 0) {
            List<Integer> pc = seen.get(poison);
            if (pc == null || pc.size() != limit) fail("poison record deliveries " + pc + ", want " + limit);
        }
        // How the work was spread is the broker's choice (Kafka has given
        // one consumer everything at times): printed, checked by the test.
        System.out.println("per consumer " + java.util.Arrays.toString(perConsumer));
        if (!failures.isEmpty()) {
            System.exit(1);
        }
        System.out.println("SHARE OK");
        System.exit(0);
    }
}
