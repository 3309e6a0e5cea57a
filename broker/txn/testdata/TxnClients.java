import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.internals.Exit;

// What the transactional test programs (TxnV2, TxnFencing, TxnTools) share,
// compiled with each of them: the producer they start, how they read a
// topic back read_committed, how they run a Kafka tool's main() in their
// own JVM, and how they end.
final class TxnClients {
    private TxnClients() {}

    // A transactional producer of string keys and values; 30 s for any
    // blocking call, so a broker that never answers fails the run in time.
    static KafkaProducer<String, String> producer(String bootstrap, String id) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        return new KafkaProducer<>(p);
    }

    // The values a read_committed consumer in group reads from topic's
    // start, sorted: it polls until it has want of them (or 30 s), then once
    // more, so that a value beyond want (an aborted one served by mistake)
    // shows too.
    static List<String> readCommitted(String bootstrap, String topic, String group, int want) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (got.size() < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
            }
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
        }
        Collections.sort(got);
        return got;
    }

    interface ToolMain {
        void main(String[] args) throws Exception;
    }

    // Runs a Kafka tool's main (TransactionsCommand, DumpLogSegments) in
    // this JVM, which pays no JVM start per run, and prints "TOOL <name>",
    // what the tool printed, then "EXIT <status>": Exit.exit, which would
    // end the JVM, is turned into a ToolExit.
    static void tool(String name, ToolMain main, String... args) throws Exception {
        Exit.setExitProcedure((code, msg) -> { throw new ToolExit(code); });
        System.out.println("TOOL " + name);
        int code = 0;
        try {
            main.main(args);
        } catch (ToolExit e) {
            code = e.code;
        }
        System.out.flush();
        System.out.println("EXIT " + code);
    }

    // Ends the JVM at once, its output flushed: the clients' background
    // threads (and a fenced producer's close) must not hold it up.
    static void halt() {
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;

        ToolExit(int code) {
            super("exit " + code);
            this.code = code;
        }
    }
}
