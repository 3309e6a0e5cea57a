"""Conformance of librdkafka (through Python confluent-kafka) against a broker.

Run by broker/conformance/python_test.go, with the venv python that
scripts/python-deps.sh makes, against the real tributary binary:

    python conformance.py <bootstrap> <topic-prefix> <records>

Steps, each with librdkafka's defaults plus what the step needs:
  1. AdminClient.create_topics: <prefix>-main with 3 partitions and one
     topic per codec; list_topics and describe_topics show them back;
  2. an idempotent Producer (enable.idempotence=true, acks=all, as Java's
     default) sends <records> keyed records with headers and explicit
     timestamps; every delivery report is kept;
  3. a Consumer with assign() from OFFSET_BEGINNING (librdkafka insists on a
     group.id; it is set, but nothing here subscribes or commits) reads every
     record back: in each partition's order, at the offsets the producer was
     told, with its key, value, headers and timestamp; the watermarks must
     match too;
  4. for each of gzip, snappy, lz4, zstd: a Producer with librdkafka's
     defaults and that compression.type writes to <prefix>-<codec>, and a
     consumer reads everything back and checks it the same way.
Every error the client reports (error_cb, and the log at warning or above)
counts as a failure. Exit status 0 and "CONFORMANCE OK" on success;
otherwise "FAIL:" lines (the first few) and exit status 1.
"""

import sys
import time

import confluent_kafka
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

MAX_FAILURES = 20
BASE_TS = 1_700_000_000_000
CODECS = ["gzip", "snappy", "lz4", "zstd"]
T0 = time.monotonic()

failures = 0
client_errors = []


def fail(msg):
    global failures
    failures += 1
    if failures <= MAX_FAILURES:
        print("FAIL: " + msg, flush=True)
    elif failures == MAX_FAILURES + 1:
        print("FAIL: (more failures not shown)", flush=True)


def step(msg):
    print("[%6.2fs] %s" % (time.monotonic() - T0, msg), flush=True)


def on_error(err):
    client_errors.append("error_cb: %s" % err)


class LogCatcher:
    """A logging.Logger look-alike for librdkafka's log (confluent-kafka maps
    syslog levels to logging's: ERR 40, WARNING 30, NOTICE and INFO 20).
    Warnings and errors are failures: librdkafka logs a response it cannot
    parse at ERROR ("Protocol parse failure for Fetch v16") and retries, so
    the records still arrive. So is the one notice that says the client
    quietly stopped compressing."""

    def log(self, level, fmt, *args):
        msg = fmt % args if args else fmt
        if level >= 30 or "not compressing batch" in msg:
            client_errors.append("log level %d: %s" % (level, msg))


def base_conf(bootstrap):
    return {
        "bootstrap.servers": bootstrap,
        "error_cb": on_error,
        "logger": LogCatcher(),
    }


class Sent:
    __slots__ = ("index", "key", "value", "headers", "timestamp", "partition", "offset")

    def __init__(self, index, key, value, headers, timestamp):
        self.index, self.key, self.value = index, key, value
        self.headers, self.timestamp = headers, timestamp
        self.partition, self.offset = -1, -1


def record(tag, i):
    """Record i of a run: keyed, with headers (some repeated, empty, null)."""
    key = ("key-%d-%d" % (i % 997, i)).encode()
    if i % 1000 == 0:
        value = None  # a tombstone
    elif i % 1000 == 1:
        value = b""
    else:
        value = ("%s value %d %s" % (tag, i, "abcdefghij" * (i % 13))).encode()
    headers = [("index", str(i).encode()), ("tag", tag.encode())]
    if i % 3 == 0:
        headers.append(("tag", ("repeated-%d" % i).encode()))
    if i % 7 == 0:
        headers.append(("empty", b""))
    if i % 11 == 0:
        headers.append(("null", None))
    if i % 17 == 0:
        headers.append(("bin", bytes([0, 0xFF, i & 0xFF, 10])))
    ts = BASE_TS + i * 7 - (3 if i % 5 == 0 else 0)  # not monotonic
    return Sent(i, key, value, headers, ts)


def create_topics(bootstrap, topics):
    admin = AdminClient(base_conf(bootstrap))
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=n, replication_factor=1) for name, n in topics.items()],
        request_timeout=15,
        operation_timeout=15,
    )
    for name, f in futures.items():
        try:
            f.result(30)
        except Exception as e:  # noqa: BLE001
            fail("create_topics %s: %r" % (name, e))
    step("admin: created %s" % topics)

    md = admin.list_topics(timeout=15)
    for name, n in topics.items():
        t = md.topics.get(name)
        if t is None or t.error is not None:
            fail("list_topics: %s: %r" % (name, t and t.error))
            continue
        if len(t.partitions) != n:
            fail("list_topics: %s has %d partitions, want %d" % (name, len(t.partitions), n))
        for p in t.partitions.values():
            if p.error is not None or p.leader != 1 or p.replicas != [1] or p.isrs != [1]:
                fail("list_topics: %s-%d: leader %s replicas %s isr %s error %s"
                     % (name, p.id, p.leader, p.replicas, p.isrs, p.error))
    step("admin: list_topics shows %s" % {n: len(md.topics[n].partitions) for n in topics if n in md.topics})

    desc = admin.describe_topics(
        confluent_kafka.TopicCollection(list(topics)), request_timeout=15)
    for name, f in desc.items():
        try:
            d = f.result(30)
        except Exception as e:  # noqa: BLE001
            fail("describe_topics %s: %r" % (name, e))
            continue
        if len(d.partitions) != topics[name]:
            fail("describe_topics: %s has %d partitions, want %d" % (name, len(d.partitions), topics[name]))
    step("admin: describe_topics done")


def produce(bootstrap, topic, tag, n, extra):
    conf = base_conf(bootstrap)
    conf.update(extra)
    producer = Producer(conf)
    sent = [record(tag, i) for i in range(n)]
    errors = {}

    def report(s):
        def cb(err, msg):
            if err is not None:
                errors.setdefault(str(err), "record %d" % s.index)
                return
            s.partition, s.offset = msg.partition(), msg.offset()
            ts_type, ts = msg.timestamp()
            if ts_type != TIMESTAMP_CREATE_TIME or ts != s.timestamp:
                errors.setdefault("record %d: delivery timestamp %s, want %s" % (s.index, (ts_type, ts), s.timestamp), "")
        return cb

    for s in sent:
        while True:
            try:
                producer.produce(topic, key=s.key, value=s.value, headers=s.headers,
                                 timestamp=s.timestamp, on_delivery=report(s))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(30)
    if left:
        fail("produce %s: %d messages still queued after flush(30)" % (topic, left))
    for err, where in errors.items():
        fail("produce %s: %s %s" % (topic, err, where))
    # Each partition's offsets follow the order of the produce() calls.
    last = {}
    for s in sent:
        if s.offset < 0:
            continue
        prev = last.get(s.partition)
        want = 0 if prev is None else prev + 1
        if s.offset != want:
            fail("produce %s: record %d got offset %d@%d, want %d" % (topic, s.index, s.partition, s.offset, want))
        last[s.partition] = s.offset
    step("produce %s %s: %d records delivered, last offset per partition %s"
         % (topic, extra, n, dict(sorted(last.items()))))
    return sent


def show(b):
    return "None" if b is None else repr(bytes(b))


def check_record(where, w, m):
    at = "%s@%d (record %d)" % (where, m.offset(), w.index)
    if m.offset() != w.offset:
        fail("%s: offset %d, want %d" % (at, m.offset(), w.offset))
    if m.key() != w.key:
        fail("%s: key %s, want %s" % (at, show(m.key()), show(w.key)))
    if m.value() != w.value:
        fail("%s: value %s, want %s" % (at, show(m.value()), show(w.value)))
    if m.timestamp() != (TIMESTAMP_CREATE_TIME, w.timestamp):
        fail("%s: timestamp %s, want (CreateTime, %d)" % (at, m.timestamp(), w.timestamp))
    got = m.headers() or []
    if list(got) != w.headers:
        fail("%s: headers %s, want %s" % (at, got, w.headers))
    if m.leader_epoch() is None:
        fail("%s: no leader epoch" % at)


def consume_and_check(bootstrap, topic, partitions, sent):
    want = {p: [] for p in range(partitions)}
    for s in sent:
        if s.partition >= 0:
            want[s.partition].append(s)
    conf = base_conf(bootstrap)
    conf.update({
        # librdkafka's consumer does not start without a group.id; with
        # assign() and no commits it is not sent to the broker.
        "group.id": "conformance-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    })
    consumer = Consumer(conf)
    got = {p: [] for p in range(partitions)}
    total = 0
    try:
        tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        consumer.assign(tps)
        for p in range(partitions):
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
            if lo != 0 or hi != len(want[p]):
                fail("watermarks %s-%d = (%d, %d), want (0, %d)" % (topic, p, lo, hi, len(want[p])))
        deadline = time.monotonic() + 30
        while total < len(sent) and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.5):
                if m.error() is not None:
                    fail("consume %s: %s" % (topic, m.error()))
                    continue
                got.setdefault(m.partition(), []).append(m)
                total += 1
        # Idle at the end of every partition for longer than
        # fetch.wait.max.ms (500): the broker answers fetches that find no
        # new records, which the client must parse without complaint, and
        # nothing beyond what was sent may come back.
        idle_until = time.monotonic() + 1.2
        while time.monotonic() < idle_until:
            for m in consumer.consume(num_messages=1000, timeout=0.2):
                if m.error() is None:
                    got.setdefault(m.partition(), []).append(m)
                    total += 1
                elif m.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                    fail("consume %s: %s" % (topic, m.error()))
    finally:
        consumer.close()
    if total != len(sent):
        fail("consume %s: got %d records, want %d" % (topic, total, len(sent)))
    for p, ws in want.items():
        gs = got.get(p, [])
        if len(gs) != len(ws):
            fail("consume %s-%d: got %d records, want %d" % (topic, p, len(gs), len(ws)))
        for w, m in zip(ws, gs):
            check_record("%s-%d" % (topic, p), w, m)
    step("consume %s: %d records read back and checked, per partition %s"
         % (topic, total, {p: len(g) for p, g in sorted(got.items())}))


def main():
    if len(sys.argv) != 4:
        print("usage: conformance.py <bootstrap> <topic-prefix> <records>", file=sys.stderr)
        sys.exit(2)
    bootstrap, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    step("confluent-kafka %s, librdkafka %s" % (confluent_kafka.__version__, confluent_kafka.libversion()[0]))
    codec_records = max(1, n // 5)
    try:
        topics = {prefix + "-main": 3}
        for c in CODECS:
            topics[prefix + "-" + c] = 1
        create_topics(bootstrap, topics)

        main_topic = prefix + "-main"
        sent = produce(bootstrap, main_topic, "main", n, {"enable.idempotence": True})
        consume_and_check(bootstrap, main_topic, 3, sent)

        for c in CODECS:
            topic = prefix + "-" + c
            # librdkafka's default linger.ms is 5: batches hold many records.
            cs = produce(bootstrap, topic, c, codec_records, {"compression.type": c})
            consume_and_check(bootstrap, topic, 1, cs)
    except (KafkaException, Exception) as e:  # noqa: BLE001
        import traceback

        fail("exception: %r" % (e,))
        traceback.print_exc(file=sys.stdout)
    for e in client_errors[:MAX_FAILURES]:
        fail("client reported: " + e)
    if len(client_errors) > MAX_FAILURES:
        fail("client reported %d errors in all" % len(client_errors))
    if failures:
        print("CONFORMANCE FAILED: %d problem(s)" % failures, flush=True)
        sys.exit(1)
    step("CONFORMANCE OK")


if __name__ == "__main__":
    main()
