// Conformance of Apache Kafka's Java client (kafka-clients 4.4.0) against a
// broker: run by broker/conformance/java_test.go, which compiles this file
// against the Kafka jars and starts the real tributary binary.
//
//   java -cp "$classes:$lib/*" Conformance <bootstrap> <topic-prefix> <records>
//
// Steps, each with the client's default settings plus only what the step
// needs:
//   1. Admin: create <prefix>-main with 3 partitions, describe it back;
//   2. Producer (defaults: idempotent, acks=all): <records> keyed records
//      with headers and explicit timestamps; every send's metadata is kept;
//   3. Consumer with assign() (no group.id, enable.auto.commit=false) from
//      the beginning of each partition: every record back, in each
//      partition's order, at the offsets the producer was told, with its key,
//      value, headers and timestamp;
//   4. for each of gzip, snappy, lz4, zstd: a producer with that
//      compression.type writes to its own topic <prefix>-<codec>, and a
//      consumer reads everything back and checks it the same way.
// Exit status 0 and "CONFORMANCE OK" on success; otherwise a "FAIL:" line
// per problem (the first few) and exit status 1.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Conformance {
    static final int MAX_FAILURES = 20;
    static final long BASE_TS = 1_700_000_000_000L;

    static String bootstrap;
    static int failures;
    static final long t0 = System.nanoTime();

    static void fail(String msg) {
        failures++;
        if (failures <= MAX_FAILURES) {
            System.out.println("FAIL: " + msg);
        } else if (failures == MAX_FAILURES + 1) {
            System.out.println("FAIL: (more failures not shown)");
        }
    }

    static void step(String msg) {
        System.out.printf("[%6.2fs] %s%n", (System.nanoTime() - t0) / 1e9, msg);
        System.out.flush();
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? "null" : "\"" + new String(b, StandardCharsets.UTF_8) + "\"";
    }

    /** One record as sent, and where the broker said it went. */
    static final class Sent {
        final int index;
        final byte[] key, value;
        final List<Header> headers;
        final long timestamp;
        volatile int partition = -1;
        volatile long offset = -1;

        Sent(int index, byte[] key, byte[] value, List<Header> headers, long timestamp) {
            this.index = index;
            this.key = key;
            this.value = value;
            this.headers = headers;
            this.timestamp = timestamp;
        }
    }

    /** Record i of a run: keyed, with headers (some repeated, empty, null). */
    static Sent record(String tag, int i) {
        byte[] key = utf8("key-" + (i % 997) + "-" + i);
        // Every 1000th record has a null value (a tombstone), every 1000th+1
        // an empty one; the rest a compressible value of varying length.
        byte[] value;
        if (i % 1000 == 0) {
            value = null;
        } else if (i % 1000 == 1) {
            value = new byte[0];
        } else {
            value = utf8(tag + " value " + i + " " + "abcdefghij".repeat(i % 13));
        }
        List<Header> headers = new ArrayList<>();
        headers.add(new RecordHeader("index", utf8(Integer.toString(i))));
        headers.add(new RecordHeader("tag", utf8(tag)));
        if (i % 3 == 0) {
            headers.add(new RecordHeader("tag", utf8("repeated-" + i)));
        }
        if (i % 7 == 0) {
            headers.add(new RecordHeader("empty", new byte[0]));
        }
        if (i % 11 == 0) {
            headers.add(new RecordHeader("null", null));
        }
        if (i % 17 == 0) {
            headers.add(new RecordHeader("bin", new byte[] {0, (byte) 0xff, (byte) i, 10}));
        }
        long ts = BASE_TS + i * 7L + (i % 5 == 0 ? -3 : 0); // not monotonic
        return new Sent(i, key, value, headers, ts);
    }

    static Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static void createTopics(Map<String, Integer> topics) throws Exception {
        Properties p = common();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        try (Admin admin = Admin.create(p)) {
            List<NewTopic> nts = new ArrayList<>();
            topics.forEach((name, n) -> nts.add(new NewTopic(name, n, (short) 1)));
            admin.createTopics(nts).all().get(30, TimeUnit.SECONDS);
            step("admin: created " + topics);
            Map<String, TopicDescription> desc =
                admin.describeTopics(topics.keySet()).allTopicNames().get(30, TimeUnit.SECONDS);
            for (Map.Entry<String, Integer> e : topics.entrySet()) {
                TopicDescription d = desc.get(e.getKey());
                if (d == null) {
                    fail("describeTopics: " + e.getKey() + " missing");
                    continue;
                }
                if (d.partitions().size() != e.getValue()) {
                    fail("describeTopics: " + e.getKey() + " has " + d.partitions().size() + " partitions, want " + e.getValue());
                }
                for (var pi : d.partitions()) {
                    if (pi.leader() == null || pi.replicas().size() != 1 || pi.isr().size() != 1) {
                        fail("describeTopics: " + e.getKey() + "-" + pi.partition() + ": " + pi);
                    }
                }
            }
            step("admin: described " + desc.keySet() + ": " + desc.values().iterator().next());
        }
    }

    /** Produces n records of tag to topic; returns them with their metadata. */
    static List<Sent> produce(String topic, String tag, int n, Map<String, String> extra) throws Exception {
        Properties p = common();
        p.putAll(extra);
        List<Sent> sent = new ArrayList<>(n);
        Map<String, String> errors = new ConcurrentHashMap<>();
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<Future<RecordMetadata>> futures = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                Sent s = record(tag, i);
                sent.add(s);
                ProducerRecord<byte[], byte[]> pr =
                    new ProducerRecord<>(topic, null, s.timestamp, s.key, s.value, s.headers);
                futures.add(producer.send(pr, (md, err) -> {
                    if (err != null) {
                        errors.putIfAbsent(err.toString(), "record " + s.index);
                        return;
                    }
                    s.partition = md.partition();
                    s.offset = md.offset();
                    if (md.timestamp() != s.timestamp) {
                        errors.putIfAbsent("record " + s.index + ": metadata timestamp " + md.timestamp() + ", want " + s.timestamp, "");
                    }
                }));
            }
            producer.flush();
            for (Future<RecordMetadata> f : futures) {
                try {
                    f.get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    // reported through the callback
                }
            }
        }
        errors.forEach((err, where) -> fail("produce " + topic + ": " + err + " " + where));
        // Each partition's offsets must follow the order of the sends: the
        // idempotent producer keeps order even with 5 requests in flight.
        Map<Integer, Long> last = new HashMap<>();
        for (Sent s : sent) {
            if (s.offset < 0) {
                continue;
            }
            Long prev = last.put(s.partition, s.offset);
            long want = prev == null ? 0 : prev + 1;
            if (s.offset != want) {
                fail("produce " + topic + ": record " + s.index + " got offset " + s.partition + "@" + s.offset + ", want " + want);
            }
        }
        step("produce " + topic + " " + extra + ": " + n + " records acknowledged, last offset per partition " + new TreeMap<>(last));
        return sent;
    }

    /**
     * Reads every partition of topic from the start with assign() and checks
     * the records against what was sent.
     */
    static void consumeAndCheck(String topic, int partitions, List<Sent> sent) {
        Map<Integer, List<Sent>> want = new TreeMap<>();
        for (int p = 0; p < partitions; p++) {
            want.put(p, new ArrayList<>());
        }
        for (Sent s : sent) {
            if (s.partition >= 0) {
                want.get(s.partition).add(s);
            }
        }
        Properties p = common();
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = new TreeMap<>();
        int total = 0;
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, Duration.ofSeconds(15));
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofSeconds(15));
            for (TopicPartition tp : tps) {
                if (begin.get(tp) != 0L) {
                    fail("beginningOffsets " + tp + " = " + begin.get(tp) + ", want 0");
                }
                long n = want.get(tp.partition()).size();
                if (end.get(tp) != n) {
                    fail("endOffsets " + tp + " = " + end.get(tp) + ", want " + n);
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (total < sent.size() && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
                    total++;
                }
            }
            // A short extra poll: nothing beyond what was sent may come back.
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
                total++;
            }
        }
        if (total != sent.size()) {
            fail("consume " + topic + ": got " + total + " records, want " + sent.size());
        }
        for (Map.Entry<Integer, List<Sent>> e : want.entrySet()) {
            int part = e.getKey();
            List<Sent> ws = e.getValue();
            List<ConsumerRecord<byte[], byte[]>> gs = got.getOrDefault(part, List.of());
            if (gs.size() != ws.size()) {
                fail("consume " + topic + "-" + part + ": got " + gs.size() + " records, want " + ws.size());
            }
            for (int i = 0; i < Math.min(gs.size(), ws.size()); i++) {
                checkRecord(topic + "-" + part, ws.get(i), gs.get(i));
            }
        }
        step("consume " + topic + ": " + total + " records read back and checked, per partition "
            + got.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue().size()).toList());
    }

    static void checkRecord(String where, Sent w, ConsumerRecord<byte[], byte[]> g) {
        String at = where + "@" + g.offset() + " (record " + w.index + ")";
        if (g.offset() != w.offset) {
            fail(at + ": offset " + g.offset() + ", want " + w.offset);
        }
        if (!Arrays.equals(g.key(), w.key)) {
            fail(at + ": key " + str(g.key()) + ", want " + str(w.key));
        }
        if (!Arrays.equals(g.value(), w.value)) {
            fail(at + ": value " + str(g.value()) + ", want " + str(w.value));
        }
        if (g.timestamp() != w.timestamp || g.timestampType() != TimestampType.CREATE_TIME) {
            fail(at + ": timestamp " + g.timestampType() + " " + g.timestamp() + ", want CreateTime " + w.timestamp);
        }
        Header[] gh = g.headers().toArray();
        if (gh.length != w.headers.size()) {
            fail(at + ": " + gh.length + " headers " + Arrays.toString(gh) + ", want " + w.headers);
            return;
        }
        for (int i = 0; i < gh.length; i++) {
            Header a = gh[i], b = w.headers.get(i);
            if (!a.key().equals(b.key()) || !Arrays.equals(a.value(), b.value())) {
                fail(at + ": header " + i + " " + a.key() + "=" + str(a.value()) + ", want " + b.key() + "=" + str(b.value()));
            }
        }
        if (g.serializedKeySize() != w.key.length) {
            fail(at + ": serializedKeySize " + g.serializedKeySize() + ", want " + w.key.length);
        }
        int vs = w.value == null ? -1 : w.value.length;
        if (g.serializedValueSize() != vs) {
            fail(at + ": serializedValueSize " + g.serializedValueSize() + ", want " + vs);
        }
        if (g.leaderEpoch().isEmpty()) {
            fail(at + ": no leader epoch");
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Conformance <bootstrap> <topic-prefix> <records>");
            System.exit(2);
        }
        bootstrap = args[0];
        String prefix = args[1];
        int n = Integer.parseInt(args[2]);
        String[] codecs = {"gzip", "snappy", "lz4", "zstd"};
        int codecRecords = Math.max(1, n / 5);

        try {
            Map<String, Integer> topics = new TreeMap<>();
            topics.put(prefix + "-main", 3);
            for (String c : codecs) {
                topics.put(prefix + "-" + c, 1);
            }
            createTopics(topics);

            String main = prefix + "-main";
            List<Sent> sent = produce(main, "main", n, Map.of());
            consumeAndCheck(main, 3, sent);

            for (String c : codecs) {
                String topic = prefix + "-" + c;
                // linger.ms so that batches hold many records, as compression
                // is per batch.
                List<Sent> cs = produce(topic, c, codecRecords,
                    Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, c, ProducerConfig.LINGER_MS_CONFIG, "20"));
                consumeAndCheck(topic, 1, cs);
            }
        } catch (Exception e) {
            fail("exception: " + e);
            e.printStackTrace(System.out);
        }
        if (failures > 0) {
            System.out.println("CONFORMANCE FAILED: " + failures + " problem(s)");
            System.out.flush();
            System.exit(1);
        }
        step("CONFORMANCE OK");
        System.out.flush();
        System.exit(0);
    }
}
