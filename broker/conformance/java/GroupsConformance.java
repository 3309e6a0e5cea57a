// Consumer-group conformance of Apache Kafka's Java client (kafka-clients
// 4.4.0, classic group protocol: JoinGroup/SyncGroup/Heartbeat/LeaveGroup/
// OffsetCommit/OffsetFetch) against a broker. Run by
// broker/conformance/groups_java_test.go, against tributary or, to check
// this program itself, a real Kafka 4.4.0.
//
//   java -cp "$classes:$lib/*" GroupsConformance rebalance <bootstrap> <topic> <group> default|cooperative-sticky
//   java -cp "$classes:$lib/*" GroupsConformance static <bootstrap> <topic> <group> [classic|consumer]
//   java -cp "$classes:$lib/*" GroupsConformance migrate <bootstrap> <topic> <group> [default|cooperative-sticky]
//
// Both modes create <topic> with 6 partitions and keep a producer writing
// numbered records to it while KafkaConsumers (subscribe(), no auto
// commit) process every record and then commitSync() what they processed
// (commit-after-process; on revocation the revoked partitions' processed
// offsets are committed in onPartitionsRevoked). A shared tracker checks,
// all the time:
//   - no partition is assigned to a member while another still owns it;
//   - a newly assigned partition starts at its last committed offset: not
//     before it (a committed offset lost: committed records reprocessed),
//     not after the next unprocessed offset (records skipped);
//   - a record is processed again only if its offset was never committed;
// and at the end: every produced record was processed, the group's
// committed offsets (Admin) are the end offsets.
//
// rebalance: members m1, m2, m3 join; once each owns 2 partitions m3 leaves
// (close(): LeaveGroup) and m1, m2 must own 3 each; then m4 joins and
// m1, m2, m4 must own 2 each; Admin.describeConsumerGroups must then show
// a CLASSIC, STABLE group of 3 members with the assignor chosen and each
// member's assignment as the members see it. Default assignors ([Range,
// CooperativeSticky], so eager Range) or CooperativeStickyAssignor alone
// (then m3's leave must revoke nothing from m1 and m2, and nothing is lost).
//
// static: members s1 (first, so the leader) and s2 with group.instance.id;
// once both own 3 partitions s2 is closed (a static member sends no
// LeaveGroup) and a new consumer with s2's group.instance.id starts within
// the session timeout; then the same for s1, the leader. Each must get its
// partitions back with no rebalance: the other member's callbacks are not
// called again and the generation does not change.
//
// migrate: KIP-848's online migration. A classic group of three members
// (default assignors) is upgraded member by member: each classic member is
// closed and a group.protocol=consumer member started in its place; the
// group must be a CONSUMER group from the first upgrade on, with classic
// and consumer members side by side, and every step ends with 2 partitions
// each. Then it is downgraded the same way, member by member, back to a
// CLASSIC group. Nothing may be processed twice: every member commits on
// revocation, and the broker reassigns only what was revoked.
//
// Exit status 0 and "GROUPS OK" on success; otherwise "FAIL:" lines and 1.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GroupsConformance {
    static final int PARTITIONS = 6;
    static final int MAX_FAILURES = 20;
    static final long t0 = System.nanoTime();
    static final AtomicInteger failures = new AtomicInteger();

    static String bootstrap, topic, group;

    static void fail(String msg) {
        int n = failures.incrementAndGet();
        if (n <= MAX_FAILURES) {
            System.out.println("FAIL: " + msg);
        } else if (n == MAX_FAILURES + 1) {
            System.out.println("FAIL: (more failures not shown)");
        }
        System.out.flush();
    }

    static void step(String msg) {
        System.out.printf("[%6.2fs] %s%n", (System.nanoTime() - t0) / 1e9, msg);
        System.out.flush();
    }

    static void waitFor(String what, long seconds, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + seconds + "s waiting for " + what + "; " + Tracker.ownersString());
            }
            Thread.sleep(20);
        }
        step("ok: " + what);
    }

    // ---------------------------------------------------------------- tracker

    // Tracker is what all members share: who owns each partition, what was
    // processed and what was committed.
    static final class Tracker {
        static final Map<Integer, String> owner = new HashMap<>();              // partition -> member
        static final Map<Integer, Long> committed = new HashMap<>();            // partition -> last acknowledged commit
        static final Map<Integer, Long> nextUnprocessed = new HashMap<>();      // partition -> max processed + 1
        static final Map<Long, Integer> processedTimes = new HashMap<>();       // partition<<40|offset -> times
        static final Set<String> processedValues = new HashSet<>();
        static int reprocessed;

        static synchronized void assigned(String member, Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) {
                String prev = owner.get(tp.partition());
                if (prev != null) {
                    fail(member + " was assigned " + tp + " while " + prev + " still owns it");
                }
                owner.put(tp.partition(), member);
            }
        }

        static synchronized void released(String member, Collection<TopicPartition> parts, String how) {
            for (TopicPartition tp : parts) {
                String prev = owner.get(tp.partition());
                if (!member.equals(prev)) {
                    fail(member + ": " + tp + " " + how + " but the owner is " + prev);
                } else {
                    owner.remove(tp.partition());
                }
            }
        }

        // started checks where a newly assigned partition starts.
        static synchronized void started(String member, TopicPartition tp, long position) {
            long c = committed.getOrDefault(tp.partition(), 0L);
            long next = nextUnprocessed.getOrDefault(tp.partition(), 0L);
            if (position < c) {
                fail(member + ": " + tp + " starts at " + position + ", before its acknowledged committed offset " + c + " (a committed offset was lost)");
            }
            if (position > next) {
                fail(member + ": " + tp + " starts at " + position + " but offsets from " + next + " were never processed (records skipped)");
            }
        }

        static synchronized void processed(String member, ConsumerRecord<String, String> r) {
            long key = ((long) r.partition() << 40) | r.offset();
            int times = processedTimes.merge(key, 1, Integer::sum);
            if (times > 1) {
                reprocessed++;
                long c = committed.getOrDefault(r.partition(), 0L);
                if (r.offset() < c) {
                    fail(member + " processed " + r.partition() + "/" + r.offset() + " again, though offset " + c + " was committed");
                }
            }
            nextUnprocessed.merge(r.partition(), r.offset() + 1, Math::max);
            processedValues.add(r.value());
        }

        static synchronized void committedOk(Map<TopicPartition, OffsetAndMetadata> offs) {
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offs.entrySet()) {
                committed.merge(e.getKey().partition(), e.getValue().offset(), Math::max);
            }
        }

        static synchronized Map<String, Integer> ownedCounts() {
            Map<String, Integer> n = new TreeMap<>();
            for (String m : owner.values()) {
                n.merge(m, 1, Integer::sum);
            }
            return n;
        }

        static synchronized Set<Integer> ownedBy(String member) {
            Set<Integer> s = new TreeSet<>();
            owner.forEach((p, m) -> { if (m.equals(member)) s.add(p); });
            return s;
        }

        static synchronized String ownersString() {
            return "owners " + new TreeMap<>(owner) + ", committed " + new TreeMap<>(committed) + ", processed up to " + new TreeMap<>(nextUnprocessed);
        }

        static synchronized boolean allProcessed(Set<String> values) {
            return processedValues.containsAll(values);
        }

        static synchronized boolean committedAtLeast(Map<Integer, Long> end) {
            for (Map.Entry<Integer, Long> e : end.entrySet()) {
                if (committed.getOrDefault(e.getKey(), 0L) < e.getValue()) {
                    return false;
                }
            }
            return true;
        }
    }

    // --------------------------------------------------------------- producer

    static final class Producer extends Thread {
        final KafkaProducer<String, String> p;
        final AtomicBoolean stop = new AtomicBoolean();
        final Set<String> acked = ConcurrentHashMap.newKeySet();
        final Map<Integer, Long> end = new ConcurrentHashMap<>();
        volatile Exception error;

        Producer() {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ProducerConfig.CLIENT_ID_CONFIG, "groups-producer");
            props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
        }

        @Override
        public void run() {
            // About 1,000 records a second, keyed over all partitions.
            for (int id = 0; !stop.get() && error == null; id++) {
                String v = topic + "/" + id;
                p.send(new ProducerRecord<>(topic, "k" + (id % 97), v), (md, e) -> {
                    if (e != null) {
                        error = e;
                        return;
                    }
                    acked.add(v);
                    end.merge(md.partition(), md.offset() + 1, Math::max);
                });
                if (id % 20 == 19) {
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            p.flush();
        }

        void finish() throws Exception {
            stop.set(true);
            join();
            p.close(Duration.ofSeconds(10));
            if (error != null) {
                throw error;
            }
            step("producer: " + acked.size() + " records acknowledged, end offsets " + new TreeMap<>(end));
        }
    }

    // ----------------------------------------------------------------- member

    static final class Member extends Thread implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> c;
        final AtomicBoolean stop = new AtomicBoolean();
        final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
        final AtomicInteger assignedCalls = new AtomicInteger(), revokedCalls = new AtomicInteger(), lostCalls = new AtomicInteger();
        final AtomicInteger nonEmptyRevocations = new AtomicInteger();
        final AtomicInteger commitFailures = new AtomicInteger();
        volatile int generation = -1;
        volatile String memberId = "";
        final boolean kip848;
        volatile Throwable error;
        int processed;

        Member(String name, Properties extra) {
            super(name);
            this.name = name;
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
            props.putAll(extra);
            kip848 = "consumer".equals(props.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG));
            if (kip848) {
                // KIP-848: the broker sets the heartbeat interval and the
                // session timeout; the client refuses them.
                props.remove(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
                props.remove(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
            }
            c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        }

        @Override
        public void run() {
            try {
                c.subscribe(List.of(topic), this);
                while (!stop.get()) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
                    generation = c.groupMetadata().generationId();
                    memberId = c.groupMetadata().memberId();
                    for (ConsumerRecord<String, String> r : recs) {
                        Tracker.processed(name, r);
                        processed++;
                        pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    commit(pending.keySet());
                }
                step(name + ": closing (processed " + processed + ", assigned/revoked/lost callbacks "
                        + assignedCalls + "/" + revokedCalls + "/" + lostCalls + ", failed commits " + commitFailures + ")");
                c.close(CloseOptions.timeout(Duration.ofSeconds(20)));
            } catch (WakeupException e) {
                // stop
            } catch (Throwable e) {
                error = e;
                fail(name + ": " + e);
                e.printStackTrace(System.out);
                try {
                    c.close(CloseOptions.timeout(Duration.ofSeconds(5)));
                } catch (Throwable ignored) {
                    // already failing
                }
            }
        }

        // commit commits the pending offsets of parts, synchronously.
        void commit(Collection<TopicPartition> parts) {
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            for (TopicPartition tp : parts) {
                if (pending.containsKey(tp)) {
                    offs.put(tp, pending.get(tp));
                }
            }
            if (offs.isEmpty()) {
                return;
            }
            try {
                c.commitSync(offs, Duration.ofSeconds(15));
                Tracker.committedOk(offs);
                offs.keySet().forEach(pending::remove);
            } catch (RebalanceInProgressException | CommitFailedException e) {
                // The group is rebalancing: the records stay pending, to be
                // committed after the rebalance or on revocation; if the
                // partition moves first, they may be processed again.
                if (commitFailures.incrementAndGet() <= 3) {
                    step(name + ": commit of " + offs.keySet() + " failed: " + e.getClass().getSimpleName() + " (first 3 shown)");
                }
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            revokedCalls.incrementAndGet();
            if (parts.isEmpty()) {
                return;
            }
            nonEmptyRevocations.incrementAndGet();
            commit(parts);
            parts.forEach(pending::remove);
            Tracker.released(name, parts, "revoked");
            step(name + ": revoked " + parts);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> parts) {
            lostCalls.incrementAndGet();
            parts.forEach(pending::remove);
            Tracker.released(name, parts, "lost");
            step(name + ": lost " + parts);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            assignedCalls.incrementAndGet();
            generation = c.groupMetadata().generationId();
            memberId = c.groupMetadata().memberId();
            if (parts.isEmpty()) {
                return;
            }
            Tracker.assigned(name, parts);
            for (TopicPartition tp : parts) {
                Tracker.started(name, tp, c.position(tp, Duration.ofSeconds(15)));
            }
            step(name + ": assigned " + parts + " in generation " + generation);
        }

        void finish() throws Exception {
            stop.set(true);
            join(30000);
            if (isAlive()) {
                c.wakeup();
                join(10000);
                fail(name + " did not stop within 30s");
            }
        }

        void check() {
            if (error != null) {
                throw new IllegalStateException(name + " failed", error);
            }
        }
    }

    static void waitOwned(String what, Map<String, Integer> want, Member... live) throws InterruptedException {
        waitFor(what, 45, () -> {
            for (Member m : live) {
                m.check();
            }
            return Tracker.ownedCounts().equals(want);
        });
    }

    // ------------------------------------------------------------------- main

    static Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(props);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: GroupsConformance rebalance|static <bootstrap> <topic> <group> [default|cooperative-sticky]");
            System.exit(2);
        }
        String mode = args[0];
        bootstrap = args[1];
        topic = args[2];
        group = args[3];
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);
            step("created " + topic + " with " + PARTITIONS + " partitions");
            Producer producer = new Producer();
            producer.start();
            List<Member> all = new ArrayList<>();
            try {
                if (mode.equals("rebalance")) {
                    rebalance(admin, args.length > 4 ? args[4] : "default", all);
                } else if (mode.equals("migrate")) {
                    migrate(admin, all, args.length > 4 ? args[4] : "default");
                } else if (mode.equals("static")) {
                    staticMembers(all, args.length > 4 ? args[4] : "classic");
                } else {
                    throw new IllegalArgumentException("unknown mode " + mode);
                }
                producer.finish();
                waitFor("every acknowledged record processed", 45, () -> Tracker.allProcessed(producer.acked));
                Map<Integer, Long> end = new HashMap<>(producer.end);
                waitFor("commits up to the end offsets " + new TreeMap<>(end), 30, () -> Tracker.committedAtLeast(end));
                // The group's committed offsets, as the broker has them.
                Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                for (int p = 0; p < PARTITIONS; p++) {
                    OffsetAndMetadata o = offs.get(new TopicPartition(topic, p));
                    long want = end.getOrDefault(p, 0L);
                    if (want > 0 && (o == null || o.offset() != want)) {
                        fail("the broker has committed offset " + o + " for partition " + p + ", want " + want);
                    }
                }
                Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
                }
                admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> {
                    if (info.offset() != end.getOrDefault(tp.partition(), 0L)) {
                        fail("end offset of " + tp + " is " + info.offset() + ", the producer was told " + end.get(tp.partition()));
                    }
                });
                step("processed " + producer.acked.size() + " records, " + Tracker.reprocessed + " of them again (never committed before the partition moved)");
                if ((mode.equals("migrate") || args.length > 4 && args[4].equals("consumer")) && Tracker.reprocessed > 0) {
                    // KIP-848 revokes before it reassigns, and the members
                    // commit on revocation: nothing may be processed twice.
                    fail("consumer protocol: " + Tracker.reprocessed + " records processed twice");
                }
            } catch (Exception e) {
                fail(e.toString());
                e.printStackTrace(System.out);
            } finally {
                // Every member stops at once: with the consumer protocol a
                // member that leaves gives its partitions to the others at
                // their next heartbeat, and a member that stops polling just
                // then could not run the callback of that assignment before
                // its close ("Reconciliation failed").
                for (Member m : all) {
                    m.stop.set(true);
                }
                for (Member m : all) {
                    if (m.isAlive()) {
                        m.finish();
                    }
                }
                if (producer.isAlive()) {
                    producer.stop.set(true);
                }
            }
        }
        if (failures.get() > 0) {
            System.out.println(failures.get() + " failures");
            System.exit(1);
        }
        System.out.println("GROUPS OK");
        System.exit(0);
    }

    static void rebalance(Admin admin, String strategy, List<Member> all) throws Exception {
        Properties extra = new Properties();
        boolean kip848 = strategy.equals("consumer");
        if (strategy.equals("cooperative-sticky")) {
            extra.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        } else if (kip848) {
            // The KIP-848 protocol, with the broker's default assignor.
            extra.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        } else if (!strategy.equals("default")) {
            throw new IllegalArgumentException("unknown strategy " + strategy);
        }
        step("strategy " + strategy);
        Member m1 = new Member("m1", extra), m2 = new Member("m2", extra), m3 = new Member("m3", extra);
        all.addAll(List.of(m1, m2, m3));
        m1.start();
        m2.start();
        m3.start();
        waitOwned("m1, m2, m3 own 2 partitions each", Map.of("m1", 2, "m2", 2, "m3", 2), m1, m2, m3);
        Thread.sleep(1000);
        m3.finish();
        m3.check();
        int m1Revoked = m1.nonEmptyRevocations.get(), m2Revoked = m2.nonEmptyRevocations.get();
        waitOwned("m3 left: m1, m2 own 3 partitions each", Map.of("m1", 3, "m2", 3), m1, m2);
        if (!strategy.equals("default") && (m1.nonEmptyRevocations.get() != m1Revoked || m2.nonEmptyRevocations.get() != m2Revoked)) {
            fail("cooperative: m1 or m2 had partitions revoked when m3 left; they should only have gained m3's");
        }
        Thread.sleep(1000);
        Member m4 = new Member("m4", extra);
        all.add(m4);
        m4.start();
        waitOwned("m4 joined: m1, m2, m4 own 2 partitions each", Map.of("m1", 2, "m2", 2, "m4", 2), m1, m2, m4);
        Thread.sleep(1000);
        step("generations: m1 " + m1.generation + ", m2 " + m2.generation + ", m4 " + m4.generation);
        // What the broker says of the stable group: classic, Stable, three
        // members, and the assignor the members chose (the first of their
        // common preferences: range for the default [range,
        // cooperative-sticky]).
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
        String wantAssignor = strategy.equals("default") ? "range" : kip848 ? "uniform" : "cooperative-sticky";
        GroupType wantType = kip848 ? GroupType.CONSUMER : GroupType.CLASSIC;
        step("describe: type " + d.type() + ", state " + d.groupState() + ", assignor " + d.partitionAssignor() + ", " + d.members().size() + " members");
        if (d.type() != wantType || d.groupState() != GroupState.STABLE || d.members().size() != 3 || !wantAssignor.equals(d.partitionAssignor())) {
            fail("describeConsumerGroups: type " + d.type() + ", state " + d.groupState() + ", assignor " + d.partitionAssignor() + ", "
                    + d.members().size() + " members; want " + wantType + ", STABLE, " + wantAssignor + ", 3 members");
        }
        if (kip848) {
            // The group lists as a consumer group, and with commit after
            // process and commits on revocation nothing is processed twice.
            boolean listed = admin.listGroups().all().get(30, TimeUnit.SECONDS).stream()
                    .anyMatch(l -> l.groupId().equals(group) && l.type().orElse(null) == GroupType.CONSUMER);
            if (!listed) {
                fail("listGroups does not list " + group + " as a CONSUMER group");
            }
        }
        for (MemberDescription md : d.members()) {
            Set<Integer> parts = new TreeSet<>();
            md.assignment().topicPartitions().forEach(tp -> parts.add(tp.partition()));
            if (!parts.equals(Tracker.ownedBy(md.clientId()))) {
                fail("describeConsumerGroups: member " + md.clientId() + " is assigned " + parts + " but owns " + Tracker.ownedBy(md.clientId()));
            }
        }
        if (m1.generation != m4.generation || m2.generation != m4.generation) {
            fail("members of the stable group report different generations: m1 " + m1.generation + ", m2 " + m2.generation + ", m4 " + m4.generation);
        }
        if (!strategy.equals("default")) {
            // Cooperative: a member keeps what it owns; nothing is lost.
            for (Member m : List.of(m1, m2, m4)) {
                if (m.lostCalls.get() > 0) {
                    fail(m.name + ": onPartitionsLost was called " + m.lostCalls + " times");
                }
            }
        }
    }

    static void staticMembers(List<Member> all, String protocol) throws Exception {
        Properties p1 = new Properties(), p2 = new Properties();
        p1.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1");
        p2.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-2");
        if (protocol.equals("consumer")) {
            // KIP-848: a static member leaves with epoch -2 and its
            // successor takes its place, epoch and partitions over.
            p1.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            p2.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        }
        // Each restart below takes a few seconds; the session timeout is
        // well above that.
        p1.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 30000);
        p2.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 30000);
        // s1 first, alone: it is the group's leader and owns all 6
        // partitions; when s2 joins, s1 rejoins with those 6 in its
        // subscription's owned partitions. So s1's last JoinGroup metadata
        // differs from what a fresh consumer with its instance id sends.
        Member s1 = new Member("s1", p1);
        all.add(s1);
        s1.start();
        waitOwned("s1 (the leader) owns all 6 partitions", Map.of("s1", 6), s1);
        Member s2 = new Member("s2", p2);
        all.add(s2);
        s2.start();
        waitOwned("s1, s2 own 3 partitions each", Map.of("s1", 3, "s2", 3), s1, s2);
        Thread.sleep(1000);
        // First the follower, then the leader, each restarted within the
        // session timeout: neither may cause a rebalance (Kafka rebalances
        // a Stable group for a rejoining static member only if the group's
        // selected protocol would change; for a leader it answers with
        // skip_assignment, KIP-814).
        Member s2b = restartStatic(all, s2, "s2b", p2, s1);
        restartStatic(all, s1, "s1b", p1, s2b);
    }

    // restartStatic closes member old (static: no LeaveGroup), starts a new
    // consumer with its group.instance.id, and checks it gets old's
    // partitions back with no rebalance.
    static Member restartStatic(List<Member> all, Member old, String newName, Properties props, Member other) throws Exception {
        int gen = other.generation;
        if (old.generation != gen) {
            fail(old.name + " is in generation " + old.generation + ", " + other.name + " in " + gen);
        }
        Set<Integer> before = Tracker.ownedBy(old.name);
        int assigned = other.assignedCalls.get(), revoked = other.revokedCalls.get(), lost = other.lostCalls.get();
        String oldId = old.memberId;
        step("generation " + gen + "; restarting " + old.name + " (" + oldId + ", partitions " + before + ")");
        old.finish();
        old.check();
        Thread.sleep(1000);
        Member b = new Member(newName, props);
        all.add(b);
        b.start();
        Set<Integer> otherParts = Tracker.ownedBy(other.name);
        waitOwned(newName + " (" + props.get(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG) + " again) owns " + old.name + "'s partitions",
                Map.of(other.name, otherParts.size(), newName, before.size()), other, b);
        Thread.sleep(2000);
        Set<Integer> after = Tracker.ownedBy(newName);
        step(newName + ": member " + b.memberId + ", generation " + b.generation + ", partitions " + after);
        if (!after.equals(before)) {
            fail(old.name + " had partitions " + before + " and " + newName + " got " + after + " after the restart");
        }
        if (other.generation != gen || b.generation != gen) {
            fail("the restart of static member " + old.name + " changed the generation: " + gen + " before, " + other.name + " "
                    + other.generation + " and " + newName + " " + b.generation + " after (a rebalance)");
        }
        if (other.assignedCalls.get() != assigned || other.revokedCalls.get() != revoked || other.lostCalls.get() != lost) {
            fail(other.name + "'s rebalance callbacks were called during the restart of " + old.name + " (assigned " + assigned + "->"
                    + other.assignedCalls + ", revoked " + revoked + "->" + other.revokedCalls + ", lost " + lost + "->" + other.lostCalls + "): a rebalance");
        }
        if (b.memberId.equals(oldId)) {
            fail(newName + " has the old member id " + oldId + "; a rejoining static member gets a new one");
        }
        return b;
    }

    static void migrate(Admin admin, List<Member> all, String strategy) throws Exception {
        Properties classic = new Properties(), consumer = new Properties();
        if (strategy.equals("cooperative-sticky")) {
            classic.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        } else if (!strategy.equals("default")) {
            throw new IllegalArgumentException("unknown strategy " + strategy);
        }
        consumer.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Member[] cur = {new Member("m1", classic), new Member("m2", classic), new Member("m3", classic)};
        for (Member m : cur) {
            all.add(m);
            m.start();
        }
        waitOwned("classic m1, m2, m3 own 2 partitions each", Map.of("m1", 2, "m2", 2, "m3", 2), cur);
        expectType(admin, GroupType.CLASSIC, "before the upgrade");
        replaceEach(admin, cur, "c", consumer, all, GroupType.CONSUMER, "upgrade");
        replaceEach(admin, cur, "k", classic, all, GroupType.CLASSIC, "downgrade");
    }

    // replaceEach closes each member of cur in turn and starts one named
    // prefix+i with props in its place, waiting for 2 partitions each.
    // The group must have type want from the first replacement on (an
    // upgrade) or after the last (a downgrade).
    static void replaceEach(Admin admin, Member[] cur, String prefix, Properties props, List<Member> all, GroupType want, String what) throws Exception {
        for (int i = 0; i < cur.length; i++) {
            Thread.sleep(1000);
            step(what + ": replacing " + cur[i].name);
            cur[i].finish();
            cur[i].check();
            Member n = new Member(prefix + (i + 1), props);
            all.add(n);
            n.start();
            cur[i] = n;
            Map<String, Integer> wantOwned = new TreeMap<>();
            for (Member m : cur) {
                wantOwned.put(m.name, 2);
            }
            waitOwned(what + " step " + (i + 1) + ": " + wantOwned.keySet() + " own 2 partitions each", wantOwned, cur);
            if (want == GroupType.CONSUMER || i == cur.length - 1) {
                expectType(admin, want, what + " step " + (i + 1));
            }
        }
    }

    static void expectType(Admin admin, GroupType want, String when) throws Exception {
        // The describe can see the group a moment before its last member
        // reconciled: wait for Stable. The bound detects a hang: a loaded
        // machine stretches the members' reconciliation.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(45);
        ConsumerGroupDescription d;
        do {
            d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            if (d.type() == want && d.groupState() == GroupState.STABLE && d.members().size() == 3) {
                step(when + ": group type " + d.type() + ", " + d.groupState());
                return;
            }
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        fail(when + ": group type " + d.type() + ", state " + d.groupState() + ", " + d.members().size() + " members; want " + want + ", STABLE, 3 members");
    }
}
