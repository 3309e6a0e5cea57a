// One member of a KIP-848 consumer group (group.protocol=consumer) for
// groups_kip848_java_e2e_test.go: Apache Kafka's KafkaConsumer subscribes
// to a topic, processes what it polls (prints it) and commits after
// processing, and says when it gained, gave up or lost each partition, so
// that the test can check across members that no partition had two owners
// and that nothing committed was read again.
//
//   java -cp "$classes:$lib/*" GroupMember848 <bootstrap> <group> <topic> <client-id> [<group.protocol>]
//
// <group.protocol> is consumer (KIP-848, the default) or classic, for the
// same scenario under the older protocol.
//
// Runs until stdin closes, then closes the consumer (which revokes, commits
// and leaves) and prints "closed". Output, one event a line, <us> the wall
// clock in microseconds when the event was done (the members run on one
// machine, so their clocks are one):
//   assigned <us> <p,p,...>     at the start of onPartitionsAssigned
//   revoked <us> <p,p,...>      at the end of onPartitionsRevoked, after its commit
//   lost <us> <p,p,...>         onPartitionsLost (nothing committed)
//   read <us> <p> <offset> <value>
//   commit <us> <p>=<next offset>,...   after commitSync returned
//   commitfail <us> <exception on one line>
//   member <member id>          once the coordinator answered
//   closed <us>

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupMember848 {
    static long now() {
        return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    }

    // out prints whole lines at once: the callbacks and the poll loop run
    // on the application thread, the stdin watcher only sets a flag.
    static synchronized void out(String line) {
        System.out.println(line);
    }

    static String parts(Collection<TopicPartition> tps) {
        StringBuilder b = new StringBuilder();
        for (TopicPartition tp : tps) {
            if (b.length() > 0) b.append(',');
            b.append(tp.partition());
        }
        return b.length() == 0 ? "-" : b.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: GroupMember848 <bootstrap> <group> <topic> <client-id> [<group.protocol>]");
            System.exit(2);
        }
        String bootstrap = args[0], group = args[1], topic = args[2], clientId = args[3];
        String protocol = args.length == 5 ? args[4] : "consumer";
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "100");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());

        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (r.readLine() != null) {
                }
            } catch (Exception e) {
                // A broken stdin is a closed one.
            }
            stop.set(true);
            c.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();

        // The next offset of each owned partition's last processed record:
        // what a commit sends.
        Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                Map<TopicPartition, OffsetAndMetadata> mine = new HashMap<>();
                for (TopicPartition tp : tps) {
                    OffsetAndMetadata o = processed.remove(tp);
                    if (o != null) mine.put(tp, o);
                }
                commit(c, mine);
                out("revoked " + now() + " " + parts(tps));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                out("assigned " + now() + " " + parts(tps));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                for (TopicPartition tp : tps) processed.remove(tp);
                out("lost " + now() + " " + parts(tps));
            }
        });

        String member = "";
        try {
            while (!stop.get()) {
                ConsumerRecords<String, String> rs;
                try {
                    rs = c.poll(Duration.ofMillis(500));
                } catch (WakeupException e) {
                    break;
                }
                if (member.isEmpty() && !c.groupMetadata().memberId().isEmpty()) {
                    member = c.groupMetadata().memberId();
                    out("member " + member);
                }
                if (rs.isEmpty()) continue;
                StringBuilder b = new StringBuilder();
                long t = now();
                for (ConsumerRecord<String, String> r : rs) {
                    if (b.length() > 0) b.append('\n');
                    b.append("read ").append(t).append(' ').append(r.partition()).append(' ').append(r.offset()).append(' ').append(r.value());
                    processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                out(b.toString());
                commit(c, new HashMap<>(processed));
            }
        } finally {
            // close revokes what is owned (the listener commits it) and
            // leaves the group.
            c.close(CloseOptions.timeout(Duration.ofSeconds(30)));
        }
        out("closed " + now());
    }

    // commit commits offs synchronously and says whether it did. A failed
    // commit is not fatal: its records may be read again by the next owner,
    // which commit-after-process allows.
    static void commit(KafkaConsumer<String, String> c, Map<TopicPartition, OffsetAndMetadata> offs) {
        if (offs.isEmpty()) return;
        try {
            c.commitSync(offs);
        } catch (Exception e) {
            // A WakeupException too: stdin closed, the loop ends.
            out("commitfail " + now() + " " + e.toString().replace('\n', ' '));
            return;
        }
        StringBuilder b = new StringBuilder();
        TreeMap<Integer, Long> sorted = new TreeMap<>();
        offs.forEach((tp, o) -> sorted.put(tp.partition(), o.offset()));
        sorted.forEach((part, off) -> {
            if (b.length() > 0) b.append(',');
            b.append(part).append('=').append(off);
        });
        out("commit " + now() + " " + b);
    }
}
