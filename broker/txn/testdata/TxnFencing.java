import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;

// Two instances of Kafka's Java producer with one transactional.id: the
// second's initTransactions fences the first and aborts its open
// transaction; the first's next commit fails as fenced; a read_committed
// consumer reads exactly the two committed transactions.
// Then kafka-transactions.sh and kafka-dump-log.sh (on the partitions'
// .txnindex files) run in this JVM.
// Args: bootstrap topic transactional.id data-dir
public class TxnFencing {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], id = args[2];
        KafkaProducer<String, String> a = TxnClients.producer(bootstrap, id);
        a.initTransactions();
        a.beginTransaction();
        for (int i = 0; i < 10; i++) a.send(new ProducerRecord<>(topic, "k" + i, "a-" + i));
        a.commitTransaction();
        a.beginTransaction();
        for (int i = 0; i < 5; i++) a.send(new ProducerRecord<>(topic, "k" + i, "zombie-" + i));
        a.flush();

        KafkaProducer<String, String> b = TxnClients.producer(bootstrap, id);
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

        List<String> got = TxnClients.readCommitted(bootstrap, topic, "txn-fencing-check", 17);
        System.out.println("READ " + String.join(",", got));

        // kafka-transactions.sh, in this JVM.
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
            TxnClients.tool(t[0], org.apache.kafka.tools.TransactionsCommand::main, argv);
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
        TxnClients.tool("dump-log", files -> {
            if (indexes.isEmpty()) throw new TxnClients.ToolExit(99);
            org.apache.kafka.tools.DumpLogSegments.main(files);
        }, "--files", String.join(",", indexes));
        System.out.println("TXN DONE");
        TxnClients.halt();
    }
}
