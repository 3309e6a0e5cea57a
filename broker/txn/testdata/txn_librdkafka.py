"""librdkafka's transactional producer (confluent-kafka) against the broker:
one transaction committed, one aborted, then a read_committed consumer must
read exactly the committed one. Args: bootstrap topic. Prints TXN OK."""
import sys

from confluent_kafka import Consumer, Producer

bootstrap, topic = sys.argv[1], sys.argv[2]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "rdkafka-tx",
              "transaction.timeout.ms": 30000})
p.init_transactions(30)
p.begin_transaction()
for i in range(20):
    p.produce(topic, key=f"k{i}", value=f"commit-{i}")
p.commit_transaction(30)
p.begin_transaction()
for i in range(15):
    p.produce(topic, key=f"k{i}", value=f"abort-{i}")
p.flush(30)
p.abort_transaction(30)
p.begin_transaction()
p.produce(topic, key="last", value="commit-last")
p.commit_transaction(30)

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rdkafka-check", "auto.offset.reset": "earliest",
              "isolation.level": "read_committed", "enable.partition.eof": False})
c.subscribe([topic])
got = []
import time
deadline = time.time() + 30
while len(got) < 21 and time.time() < deadline:
    m = c.poll(0.2)
    if m is None or m.error():
        continue
    got.append(m.value().decode())
end = time.time() + 1
while time.time() < end:
    m = c.poll(0.2)
    if m is not None and not m.error():
        got.append(m.value().decode())
c.close()
want = sorted([f"commit-{i}" for i in range(20)] + ["commit-last"])
if sorted(got) != want:
    print(f"read_committed read {sorted(got)}, want {want}")
    sys.exit(1)
print("TXN OK")
