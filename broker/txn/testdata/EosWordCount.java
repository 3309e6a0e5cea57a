import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;

/**
 * A stateful Kafka Streams application with processing.guarantee=exactly_once_v2,
 * for TestKafkaStreamsExactlyOnce: input records "<word>" (any key) are
 * re-keyed by word (a repartition topic), counted in a store backed by a
 * changelog topic, and every count update goes to the output topic.
 *
 * The record cache is off, so each input record yields exactly one output
 * record: a word seen n times shows, read_committed, exactly the counts
 * 1..n once each, in order, whatever was killed while it ran. A duplicate
 * shows as a repeated count, a lost record as a short sequence, a lost store
 * update (changelog not restored) as a count starting over.
 *
 * The store is in memory, so its state after a kill -9 comes only from the
 * changelog, read read_committed: the restore itself is under test.
 *
 * Usage: EosWordCount bootstrap application.id instance-id state.dir input output [replication.factor]
 * Prints "STATE RUNNING" on stdout whenever the instance is running, after
 * "THREAD <name>" for each of its stream threads.
 */
public class EosWordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], instance = args[2], stateDir = args[3];
        String input = args[4], output = args[5];

        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        // Transactions stay open up to a second after their records: a
        // fault the test times by an open transaction lands inside one.
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, args.length > 6 ? Integer.parseInt(args[6]) : 1);
        // Static membership: a restarted instance takes its place back at
        // once instead of waiting for the killed one's session to expire.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), instance);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        // An instance killed mid-transaction holds the LSO of the partitions
        // it wrote until its transaction times out or its restart fences it.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 5000);
        p.put(StreamsConfig.RETRY_BACKOFF_MS_CONFIG, 100);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG), 20000);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG), 5000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG), 5000);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .map((k, v) -> KeyValue.pair(v, v))
                .groupByKey(Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        // A broker killed under the application fails a thread's
        // transaction now and then; Streams then replaces the thread, which
        // aborts and restores, as a production deployment would configure.
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("THREAD FAILED " + e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                // The thread names carry the process id, which the
                // transactional ids of exactly_once_v2 carry too.
                for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                    System.out.println("THREAD " + t.threadName());
                }
            }
            System.out.println("STATE " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(5))));
        streams.start();
        done.await();
    }
}
