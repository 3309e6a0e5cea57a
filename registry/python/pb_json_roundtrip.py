"""Confluent's Python ProtobufSerializer/Deserializer and
JSONSerializer/Deserializer against Tributary's schema registry.

Protobuf: the message is the second of its file (message index [1], not
the short [0] form), imports a file of its own (registered by the
serializer as a reference under the subject "shop/money.proto") and a
well-known type (built in, no reference). The deserializer fetches the
writer's schema as a serialized descriptor. A field number reused with
another type is refused with 409. JSON: two versions, the second adding an
optional property; a required property added is refused with 409. Prints
one JSON line of what it saw; registry/python_test.go judges it."""

import argparse
import json

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401  (puts the well-known file in the default pool)

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

F = descriptor_pb2.FieldDescriptorProto


def message_classes():
    pool = descriptor_pool.Default()
    money = descriptor_pb2.FileDescriptorProto(name="shop/money.proto", package="shop", syntax="proto3")
    m = money.message_type.add(name="Money")
    m.field.add(name="cents", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    pool.Add(money)
    order = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3",
                                               dependency=["shop/money.proto", "google/protobuf/timestamp.proto"])
    order.message_type.add(name="Header").field.add(name="x", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    o = order.message_type.add(name="Order")
    o.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    o.field.add(name="total", number=2, type=F.TYPE_MESSAGE, type_name=".shop.Money", label=F.LABEL_OPTIONAL)
    o.field.add(name="at", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp", label=F.LABEL_OPTIONAL)
    pool.Add(order)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


PB_BAD = 'syntax = "proto3"; package shop; message Header { string x = 1; } message Order { int64 id = 1; }'

# Closed content models (additionalProperties false), as a Confluent user
# writes them: Confluent's rules call a property added to an open model
# incompatible, since an old document may already carry it with any value.
J1 = json.dumps({"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"],
                 "additionalProperties": False})
J2 = json.dumps({"type": "object", "properties": {"user": {"type": "string"}, "plan": {"type": "string"}},
                 "required": ["user"], "additionalProperties": False})
J_BAD = json.dumps({"type": "object", "properties": {"user": {"type": "string"}, "plan": {"type": "string"},
                                                     "seats": {"type": "integer"}}, "required": ["user", "seats"],
                    "additionalProperties": False})


def consume(bootstrap, topic, count, de):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    # Assigned, not subscribed: no group join to wait for (the topics have one partition).
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got, idle = [], 0
    while len(got) < count and idle < 100:
        m = c.poll(0.2)
        if m is None or m.error():
            idle += 1
            continue
        got.append((m.value(), de(m.value(), SerializationContext(topic, MessageField.VALUE))))
    c.close()
    return got


def refused(sr, subject, schema):
    try:
        sr.register_schema(subject, schema)
        return "registered"
    except SchemaRegistryError as e:
        return {"status": e.http_status_code, "code": e.error_code}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--count", type=int, default=50)
    a = ap.parse_args()
    sr = SchemaRegistryClient({"url": a.registry})
    out = {}
    p = Producer({"bootstrap.servers": a.bootstrap})

    Order = message_classes()
    ser = ProtobufSerializer(Order, sr)
    ctx = SerializationContext("orders", MessageField.VALUE)
    for n in range(a.count):
        o = Order(id="o%d" % n)
        o.total.cents = n * 100
        o.at.seconds = 1700000000 + n
        p.produce("orders", value=ser(o, ctx))
    p.flush(30)
    got = consume(a.bootstrap, "orders", a.count, ProtobufDeserializer(Order, {}, sr))
    out["pb_consumed"] = len(got)
    out["pb_last"] = {"id": got[-1][1].id, "cents": got[-1][1].total.cents, "seconds": got[-1][1].at.seconds} if got else None
    out["pb_frame"] = list(got[0][0][:7]) if got else None
    out["pb_incompatible"] = refused(sr, "orders-value", Schema(PB_BAD, "PROTOBUF"))
    out["pb_subjects"] = sorted(sr.get_subjects())

    for i, js in enumerate([J1, J2]):
        jser = JSONSerializer(js, sr)
        for n in range(a.count // 2):
            v = {"user": "u%d" % n}
            if i == 1:
                v["plan"] = "p%d" % n
            p.produce("signups", value=jser(v, SerializationContext("signups", MessageField.VALUE)))
    p.flush(30)
    got = consume(a.bootstrap, "signups", a.count, JSONDeserializer(None, schema_registry_client=sr))
    out["json_consumed"] = len(got)
    out["json_with_plan"] = sum(1 for _, v in got if v.get("plan"))
    out["json_incompatible"] = refused(sr, "signups-value", Schema(J_BAD, "JSON"))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
