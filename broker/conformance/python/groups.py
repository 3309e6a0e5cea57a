"""Consumer groups with librdkafka (Python confluent-kafka) against a broker.

Run by broker/conformance/groups_clients_test.go (TestGroupsLibrdkafka):

    python groups.py <bootstrap> <topic> <group> [classic|consumer]

With "consumer" the members use the KIP-848 protocol (group.protocol=consumer:
the broker assigns, incrementally, and sets the heartbeat interval and the
session timeout).

Creates <topic> with 4 partitions, produces 200 records, then runs two
Consumers (subscribe, librdkafka's default assignors "range,roundrobin",
enable.auto.commit=false) in <group>, polled in turn from this thread.
Each processes a batch and then commits it synchronously (commit after
process); on revocation the processed offsets are committed. More records
are produced until both members have processed some, then 200 more. Every
produced record must be processed; a record is processed again only if its
offset was not committed; the committed offsets (Consumer.committed) must
reach the end offsets. Client errors (error_cb, the log at WARNING and
above) fail the run. Prints "END p=o ..." (the end offsets) and
"GROUPS OK", exit status 0; otherwise "FAIL:" lines and exit status 1.
"""

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4
T0 = time.monotonic()
failures = []
client_errors = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 20:
        print("FAIL: " + msg, flush=True)


def step(msg):
    print("[%6.2fs] %s" % (time.monotonic() - T0, msg), flush=True)


def on_error(err):
    client_errors.append("error_cb: %s" % err)


class LogCatcher:
    def log(self, level, fmt, *args):
        msg = fmt % args if args else fmt
        if level >= 30:
            client_errors.append("log level %d: %s" % (level, msg))


def base_conf(bootstrap):
    return {"bootstrap.servers": bootstrap, "error_cb": on_error, "logger": LogCatcher()}


class Member:
    def __init__(self, name, bootstrap, topic, group, tracker, protocol):
        self.name = name
        self.tracker = tracker
        self.pending = {}  # partition -> next offset to commit
        self.processed = 0
        self.assigned = set()
        conf = base_conf(bootstrap)
        conf.update({
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        })
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"heartbeat.interval.ms": 500, "session.timeout.ms": 10000})
        self.c = Consumer(conf)
        self.c.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost)

    def commit(self, parts=None):
        offs = [TopicPartition(self.tracker.topic, p, o) for p, o in self.pending.items() if parts is None or p in parts]
        if not offs:
            return
        try:
            res = self.c.commit(offsets=offs, asynchronous=False)
        except KafkaException as e:
            err = e.args[0]
            if err.code() in (KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION, KafkaError._NO_OFFSET):
                step("%s: commit refused: %s" % (self.name, err))
                return
            raise
        for tp in res:
            if tp.error is not None:
                step("%s: commit of %d refused: %s" % (self.name, tp.partition, tp.error))
                continue
            self.tracker.committed[tp.partition] = max(self.tracker.committed.get(tp.partition, 0), tp.offset)
            if self.pending.get(tp.partition) == tp.offset:
                del self.pending[tp.partition]

    def on_assign(self, c, parts):
        for tp in parts:
            owner = self.tracker.owner.get(tp.partition)
            if owner is not None:
                fail("%s was assigned partition %d while %s owns it" % (self.name, tp.partition, owner))
            self.tracker.owner[tp.partition] = self.name
            self.assigned.add(tp.partition)
        step("%s: assigned %s" % (self.name, sorted(tp.partition for tp in parts)))

    def on_revoke(self, c, parts):
        ps = {tp.partition for tp in parts}
        self.commit(ps)
        self.release(ps, "revoked")

    def on_lost(self, c, parts):
        self.release({tp.partition for tp in parts}, "lost")

    def release(self, ps, how):
        for p in ps:
            if self.tracker.owner.get(p) != self.name:
                fail("%s: partition %d %s but its owner is %s" % (self.name, p, how, self.tracker.owner.get(p)))
            self.tracker.owner.pop(p, None)
            self.pending.pop(p, None)
            self.assigned.discard(p)
        step("%s: %s %s" % (self.name, how, sorted(ps)))

    def poll(self):
        msgs = self.c.consume(num_messages=200, timeout=0.05)
        for m in msgs:
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                fail("%s: consume error: %s" % (self.name, m.error()))
                continue
            self.tracker.process(self.name, m)
            self.processed += 1
            self.pending[m.partition()] = m.offset() + 1
        self.commit()


class Tracker:
    def __init__(self, topic):
        self.topic = topic
        self.owner = {}
        self.committed = {}
        self.times = {}
        self.values = set()
        self.again = 0

    def process(self, member, m):
        at = (m.partition(), m.offset())
        self.times[at] = self.times.get(at, 0) + 1
        if self.times[at] > 1:
            self.again += 1
            if m.offset() < self.committed.get(m.partition(), 0):
                fail("%s processed %d/%d again, though offset %d was committed" % (member, at[0], at[1], self.committed[m.partition()]))
        self.values.add(m.value().decode())


def main():
    bootstrap, topic, group = sys.argv[1:4]
    protocol = sys.argv[4] if len(sys.argv) > 4 else "classic"
    admin = AdminClient(base_conf(bootstrap))
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        f.result(30)
    step("created %s with %d partitions" % (topic, PARTITIONS))

    acked = set()
    end = {}

    def on_delivery(err, msg):
        if err is not None:
            fail("delivery: %s" % err)
            return
        acked.add(msg.value().decode())
        end[msg.partition()] = max(end.get(msg.partition(), 0), msg.offset() + 1)

    prod = Producer(dict(base_conf(bootstrap), **{"linger.ms": 5}))
    next_id = [0]

    def produce(n):
        for _ in range(n):
            i = next_id[0]
            next_id[0] += 1
            prod.produce(topic, key=("k%d" % (i % 101)).encode(), value=("%s/%d" % (topic, i)).encode(), on_delivery=on_delivery)
        if prod.flush(30) != 0:
            fail("producer flush left records")

    tracker = Tracker(topic)
    produce(200)
    members = [Member("rdkafka-1", bootstrap, topic, group, tracker, protocol), Member("rdkafka-2", bootstrap, topic, group, tracker, protocol)]

    def poll_until(what, cond, timeout, tick=None):
        deadline = time.monotonic() + timeout
        last_tick = 0.0
        while not cond():
            if time.monotonic() > deadline or len(failures) > 0:
                raise RuntimeError("timed out waiting for %s: processed %s, owners %s, committed %s"
                                   % (what, [m.processed for m in members], tracker.owner, tracker.committed))
            for m in members:
                m.poll()
            if tick and time.monotonic() - last_tick > 0.1:
                tick()
                last_tick = time.monotonic()
        step("ok: " + what)

    try:
        poll_until("both members processing", lambda: all(m.processed > 0 for m in members), 60, tick=lambda: produce(20))
        produce(200)
        poll_until("every record processed", lambda: acked <= tracker.values, 60)
        poll_until("commits up to the end offsets %s" % end,
                   lambda: all(tracker.committed.get(p, 0) >= o for p, o in end.items()), 30)
        # What the broker has committed (OffsetFetch).
        got = members[0].c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        for tp in got:
            want = end.get(tp.partition, 0)
            if want > 0 and tp.offset != want:
                fail("committed offset of partition %d is %d, want %d" % (tp.partition, tp.offset, want))
        step("%d records, processed %s, %d again" % (len(acked), [m.processed for m in members], tracker.again))
    except Exception as e:  # noqa: BLE001 - report and fail
        fail(str(e))
    finally:
        for m in members:
            m.c.close()
    for e in client_errors:
        fail("client: " + e)
    print("END " + " ".join("%d=%d" % (p, o) for p, o in sorted(end.items())), flush=True)
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("GROUPS OK")


if __name__ == "__main__":
    main()
