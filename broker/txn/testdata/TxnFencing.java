import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

// Two instances of Kafka's Java producer with one transactional.id: the
// second's initTransactions fences the first and aborts its open
// transaction; the first's next commit fails as fenced; a read_committed
// consumer reads exactly the two committed transactions.
// Then kafka-transactions.sh and kafka-dump-log.sh (on the partitions'
// .txnindex files) run in this JVM.
// Args: bootstrap topic transactional.id data-dir
public class TxnFencing {
    static KafkaProducer<String, String> producer(String bootstrap, String id) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        return new KafkaProducer<>(p);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], id = args[2];
        KafkaProducer<String, String> a = producer(bootstrap, id);
        a.initTransactions();
        a.beginTransaction();
        for (int i = 0; i < 10; i++) a.send(new ProducerRecord<>(topic, "k" + i, "a-" + i));
        a.commitTransaction();
        a.beginTransaction();
        for (int i = 0; i < 5; i++) a.send(new ProducerRecord<>(topic, "k" + i, "zombie-" + i));
        a.flush();

        KafkaProducer<String, String> b = producer(bootstrap, id);
        b.initTransactions();
        b.beginTransaction();
        for (int i = 0; i < 7; i++) b.send(new ProducerRecord<>(topic, "k" + i, "b-" + i));
        b.commitTransaction();

        String fenced = "not fenced";
        try {
            a.send(new ProducerRecord<>(topic, "k", "zombie-late")).get();
            a.commitTransaction();
        } catch (Exception e) {
            Throwable c = e;
            while (c != null && !(c instanceof ProducerFencedException) && !(c instanceof InvalidProducerEpochException)) c = c.getCause();
            fenced = c != null ? c.getClass().getSimpleName() : "other: " + e;
        }
        System.out.println("FENCED " + fenced);
        try { a.close(Duration.ofSeconds(5)); } catch (KafkaException ignored) {}
        b.close();

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "txn-fencing-check");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (got.size() < 17 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
            }
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
        }
        java.util.Collections.sort(got);
        System.out.println("READ " + String.join(",", got));

        // kafka-transactions.sh, in this JVM: its main() with Exit.exit
        // turned into an exception, its output between markers.
        org.apache.kafka.common.utils.internals.Exit.setExitProcedure((code, msg) -> { throw new ToolExit(code); });
        String[][] tools = {
            {"list"},
            {"describe", "--transactional-id", id},
            {"describe-producers", "--topic", topic, "--partition", "0"},
        };
        for (String[] t : tools) {
            String[] argv = new String[t.length + 2];
            argv[0] = "--bootstrap-server";
            argv[1] = bootstrap;
            System.arraycopy(t, 0, argv, 2, t.length);
            System.out.println("TOOL " + t[0]);
            int code = 0;
            try {
                org.apache.kafka.tools.TransactionsCommand.main(argv);
            } catch (ToolExit e) {
                code = e.code;
            }
            System.out.println("EXIT " + code);
        }
        // kafka-dump-log.sh on the aborted-transaction indexes.
        List<String> indexes = new ArrayList<>();
        java.io.File[] dirs = new java.io.File(args[3]).listFiles();
        if (dirs != null) {
            for (java.io.File d : dirs) {
                if (!d.getName().startsWith(topic + "-")) continue;
                java.io.File[] fs = d.listFiles((dir, name) -> name.endsWith(".txnindex"));
                if (fs != null) for (java.io.File f : fs) indexes.add(f.getPath());
            }
        }
        System.out.println("TOOL dump-log");
        int code = 0;
        try {
            if (indexes.isEmpty()) throw new ToolExit(99);
            org.apache.kafka.tools.DumpLogSegments.main(new String[]{"--files", String.join(",", indexes)});
        } catch (ToolExit e) {
            code = e.code;
        }
        System.out.println("EXIT " + code);
        System.out.println("TXN DONE");
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;
        ToolExit(int code) { super("exit " + code); this.code = code; }
    }
}
