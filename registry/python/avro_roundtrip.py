"""Confluent's Python client against Tributary's schema registry: the
AvroSerializer registers the writer's schema and frames each record with
its id, the AvroDeserializer fetches the schema by id and decodes, and an
incompatible version is refused with 409. Prints one JSON line of what it
saw; registry/python_test.go judges it."""

import argparse
import json
import struct

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

V1 = json.dumps({
    "type": "record", "name": "PageView", "namespace": "web",
    "fields": [{"name": "url", "type": "string"}, {"name": "ms", "type": "long"}],
})
V2 = json.dumps({
    "type": "record", "name": "PageView", "namespace": "web",
    "fields": [{"name": "url", "type": "string"}, {"name": "ms", "type": "long"},
               {"name": "referrer", "type": ["null", "string"], "default": None}],
})
BAD = json.dumps({
    "type": "record", "name": "PageView", "namespace": "web",
    "fields": [{"name": "url", "type": "int"}],
})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, default=200)
    a = ap.parse_args()

    sr = SchemaRegistryClient({"url": a.registry})
    out = {}
    p = Producer({"bootstrap.servers": a.bootstrap})
    ids = set()
    for i, schema in enumerate([V1, V2]):
        ser = AvroSerializer(sr, schema)
        for n in range(a.count // 2):
            v = {"url": "/p/%d" % n, "ms": n}
            if schema == V2:
                v["referrer"] = "r%d" % n
            data = ser(v, SerializationContext(a.topic, MessageField.VALUE))
            magic, sid = struct.unpack(">bI", data[:5])
            assert magic == 0, magic
            ids.add(sid)
            p.produce(a.topic, value=data)
    p.flush(30)
    out["ids"] = sorted(ids)

    try:
        sr.register_schema(a.topic + "-value", Schema(BAD, "AVRO"))
        out["incompatible"] = "registered"
    except SchemaRegistryError as e:
        out["incompatible"] = {"status": e.http_status_code, "code": e.error_code}

    de = AvroDeserializer(sr)
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "py-avro",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([a.topic])
    got = []
    idle = 0
    while len(got) < a.count and idle < 100:
        m = c.poll(0.2)
        if m is None or m.error():
            idle += 1
            continue
        got.append(de(m.value(), SerializationContext(a.topic, MessageField.VALUE)))
    c.close()
    out["consumed"] = len(got)
    out["with_referrer"] = sum(1 for g in got if g.get("referrer"))
    out["last"] = got[-1] if got else None
    print(json.dumps(out))


if __name__ == "__main__":
    main()
