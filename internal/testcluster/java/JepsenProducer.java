// The Java side of internal/testcluster's queue workload: Apache Kafka's
// KafkaProducer (idempotent, acks=all) sends unique values and says what
// became of each, for javaproducer.go to score as it scores franz-go.
//
//   java -cp "$classes:$lib/*" JepsenProducer <bootstrap> <topic> <name> <records> [<key> [<rate> [<timeout-ms>]]]
//
// Values are "<name>-<seq>", seq from 0 in send order. <records> 0 sends
// until stdin closes; stdin closing also stops a bounded run early. An empty
// <key> keys each record by its value (records spread over the partitions);
// any other is every record's key (one hot partition). <rate> is records per
// second, 0 as fast as the producer takes them. <timeout-ms> (default
// 120000) is delivery.timeout.ms, and max.block.ms too.
//
// Output, one line per record once its fate is known:
//   ack <value> <partition> <offset>
//   fail <value> <error on one line>
// and last, after every send is resolved and the producer closed:
//   sent <n>        (values <name>-0 .. <name>-<n-1> were attempted)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class JepsenProducer {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: JepsenProducer <bootstrap> <topic> <name> <records> [<key> [<rate> [<timeout-ms>]]]");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1], name = args[2];
        long records = Long.parseLong(args[3]);
        String key = args.length > 4 ? args[4] : "";
        double rate = args.length > 5 ? Double.parseDouble(args[5]) : 0;
        String timeout = args.length > 6 ? args[6] : "120000";

        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (r.readLine() != null) {
                }
            } catch (Exception e) {
                // A broken stdin is a closed one.
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        // Ride out a failover: retry until the timeout before failing a
        // record, and block a send as long while metadata is missing.
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, timeout);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeout);
        // The client refuses a delivery timeout below linger.ms plus
        // request.timeout.ms (default 30 s); a short one gets a shorter
        // request timeout.
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(Math.min(30000, Long.parseLong(timeout) / 2)));
        p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(Integer.MAX_VALUE));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        long sent = 0;
        long start = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (long seq = 0; (records == 0 || seq < records) && !stop.get(); seq++) {
                if (rate > 0) {
                    // Paced from the start, as the Go workload is.
                    long due = start + (long) (seq * 1e9 / rate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                }
                String value = name + "-" + seq;
                sent++;
                try {
                    producer.send(new ProducerRecord<>(topic, key.isEmpty() ? value : key, value), (md, e) -> {
                        if (e != null) {
                            fail(value, e);
                        } else {
                            System.out.println("ack " + value + " " + md.partition() + " " + md.offset());
                        }
                    });
                } catch (Exception e) {
                    fail(value, e);
                }
            }
            producer.flush();
        }
        System.out.println("sent " + sent);
        System.out.flush();
    }

    static void fail(String value, Exception e) {
        System.out.println("fail " + value + " " + e.toString().replace('\n', ' ').replace('\r', ' '));
    }
}
