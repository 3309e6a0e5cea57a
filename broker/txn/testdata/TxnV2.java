import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;

// Kafka's Java producer with transactions v2 (KIP-890 part 2), the same
// scenario against Tributary and against Apache Kafka 4.4, printing what a
// user sees: the finalized transaction.version, how the producer epoch
// moves across commits and aborts (v2: one bump per transaction), the
// error a fenced instance gets for its late send and for its commit, and
// what read_committed reads.
// Args: bootstrap topic transactional.id
public class TxnV2 {
    static String root(Throwable e) {
        Throwable c = e;
        while (c.getCause() != null && !(c instanceof org.apache.kafka.common.errors.ApiException)) c = c.getCause();
        return c.getClass().getSimpleName();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], id = args[2];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            FinalizedVersionRange tv = admin.describeFeatures().featureMetadata().get().finalizedFeatures().get("transaction.version");
            System.out.println("TV " + (tv == null ? 0 : tv.maxVersionLevel()));

            KafkaProducer<String, String> a = TxnClients.producer(bootstrap, id);
            a.initTransactions();
            int first = admin.describeTransactions(List.of(id)).description(id).get().producerEpoch();
            String[] plan = {"commit", "commit", "abort", "commit"};
            StringBuilder epochs = new StringBuilder();
            for (int t = 0; t < plan.length; t++) {
                a.beginTransaction();
                for (int i = 0; i < 3; i++) a.send(new ProducerRecord<>(topic, "k" + i, "t" + t + "-" + i));
                if (plan[t].equals("commit")) a.commitTransaction(); else a.abortTransaction();
                TransactionDescription d = admin.describeTransactions(List.of(id)).description(id).get();
                epochs.append(" ").append(plan[t]).append(":+").append(d.producerEpoch() - first).append(":").append(d.state());
            }
            System.out.println("EPOCHS" + epochs);

            // A zombie: its open transaction is aborted by the second
            // instance's initTransactions.
            a.beginTransaction();
            for (int i = 0; i < 3; i++) a.send(new ProducerRecord<>(topic, "k" + i, "zombie-" + i));
            a.flush();
            KafkaProducer<String, String> b = TxnClients.producer(bootstrap, id);
            b.initTransactions();
            b.beginTransaction();
            for (int i = 0; i < 3; i++) b.send(new ProducerRecord<>(topic, "k" + i, "b-" + i));
            b.commitTransaction();
            String late = "accepted", commit = "committed";
            try {
                a.send(new ProducerRecord<>(topic, "k", "zombie-late")).get();
            } catch (Exception e) {
                late = root(e);
            }
            try {
                a.commitTransaction();
            } catch (Exception e) {
                commit = root(e);
            }
            System.out.println("ZOMBIE send " + late + " commit " + commit);
            try { a.close(Duration.ofSeconds(5)); } catch (KafkaException ignored) {}
            b.close();
        }

        List<String> got = TxnClients.readCommitted(bootstrap, topic, "txn-v2-check", 12);
        System.out.println("READ " + String.join(",", got));
        System.out.println("TXN DONE");
        TxnClients.halt();
    }
}
