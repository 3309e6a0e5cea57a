"""librdkafka (confluent-kafka) against a SASL_SSL listener: each case
produces a record and reads it back in a consumer group, or expects the
authentication error. Prints one line per case and SECURITY OK at the end.

usage: security_rdkafka.py BOOTSTRAP CA_FILE
"""
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer

bootstrap, ca = sys.argv[1], sys.argv[2]


def conf(mech, user, password):
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": mech,
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": ca,
    }


def round_trip(mech, user, password):
    topic = "rdkafka-" + mech.lower()
    errors = []
    p = Producer(dict(conf(mech, user, password), error_cb=errors.append))
    delivered = []
    p.produce(topic, b"v-" + mech.encode(), on_delivery=lambda err, m: delivered.append(err))
    left = p.flush(20)
    if left or delivered != [None]:
        raise SystemExit("%s: produce failed: %s %s" % (mech, delivered, errors))
    c = Consumer(dict(conf(mech, user, password), **{
        "group.id": "rdkafka-" + uuid.uuid4().hex, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    deadline = time.time() + 30
    try:
        while time.time() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                raise SystemExit("%s: consume: %s" % (mech, m.error()))
            if m.value() == b"v-" + mech.encode():
                print("%s: produced and consumed in a group" % mech)
                return
    finally:
        c.close()
    raise SystemExit("%s: the record was not consumed in 30 s" % mech)


def refused(mech, user, password):
    """librdkafka retries a failed authentication as it retries any
    connection; what the user sees is the _AUTHENTICATION error, at once."""
    errors = []
    p = Producer(dict(conf(mech, user, password), error_cb=errors.append, log_level=0))
    began = time.time()
    # The bound detects a hang; the time taken is printed.
    while time.time() - began < 30:
        p.poll(0.1)
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        if auth:
            print("%s wrong password: %s after %.1fs" % (mech, auth[0].str(), time.time() - began))
            return
    raise SystemExit("%s with a wrong password: no authentication error in 30 s, got %s" % (mech, errors))


round_trip("PLAIN", "carol", "carol-secret")
round_trip("SCRAM-SHA-256", "alice", "alice-secret")
round_trip("SCRAM-SHA-512", "alice", "alice-secret")
refused("SCRAM-SHA-256", "alice", "wrong")
refused("PLAIN", "carol", "wrong")
print("SECURITY OK")
