package compat

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

func pb(body string) Schema {
	return Schema{Type: Protobuf, Text: `syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto";
message Order { google.protobuf.Timestamp at = 15; ` + body + ` }`}
}

func TestProtobuf(t *testing.T) {
	t.Parallel()
	v1 := pb(`string id = 1; int32 qty = 2;`)
	cases := []struct {
		name, body string
		want       string // a difference both directions report; "" compatible
	}{
		{"field added", `string id = 1; int32 qty = 2; string note = 3;`, ""},
		{"field removed", `string id = 1;`, ""},
		{"field renamed", `string id = 1; int32 quantity = 2;`, ""},
		{"int32 to int64", `string id = 1; int64 qty = 2;`, ""},
		{"string to bytes", `bytes id = 1; int32 qty = 2;`, ""},
		{"number reused with another type", `string id = 1; string qty = 2;`, "FIELD_SCALAR_KIND_CHANGED"},
		{"int32 to sint32", `string id = 1; sint32 qty = 2;`, "FIELD_SCALAR_KIND_CHANGED"},
		{"made repeated", `string id = 1; repeated int32 qty = 2;`, "FIELD_KIND_CHANGED"},
		{"scalar to message", `string id = 1; Order qty = 2;`, "FIELD_KIND_CHANGED"},
		{"two fields into a oneof", `oneof k { string id = 1; int32 qty = 2; }`, "MULTIPLE_FIELDS_MOVED_TO_ONEOF"},
	}
	for _, c := range cases {
		msgs, err := Check(Backward, pb(c.body), []Schema{v1})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := strings.Join(msgs, "; "); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if msgs, _ := Check(Backward, Schema{Type: Protobuf, Text: `syntax = "proto3"; package shop; message Other { string id = 1; }`}, []Schema{v1}); len(msgs) == 0 || !strings.Contains(msgs[0], "MESSAGE_REMOVED") {
		t.Errorf("message removed: %v", msgs)
	}
	if _, err := Canonical(Schema{Type: Protobuf, Text: `syntax = "proto3"; message X { strin id = 1; }`}); err == nil || !strings.Contains(err.Error(), "strin") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestProtobufReferencesAndDescriptor(t *testing.T) {
	t.Parallel()
	common := Ref{Name: "shop/common.proto", Text: `syntax = "proto3"; package shop; message Money { int64 cents = 1; }`}
	s := Schema{Type: Protobuf, Text: `syntax = "proto3"; package shop; import "shop/common.proto"; message Order { Money total = 1; }`, Refs: []Ref{common}}
	fd, err := ParseProto(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProto(Schema{Type: Protobuf, Text: s.Text}); err == nil {
		t.Fatal("an import without its reference compiled")
	}
	// The same schema as a base64 FileDescriptorProto, as confluent-kafka's
	// Python serializer sends it.
	b, _ := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	again := Schema{Type: Protobuf, Text: base64.StdEncoding.EncodeToString(b), Refs: []Ref{common}}
	fd2, err := ParseProto(again)
	if err != nil {
		t.Fatal(err)
	}
	md, err := ProtoMessage(fd2, []int{0})
	if err != nil || md.FullName() != "shop.Order" {
		t.Fatalf("message 0: %v %v", md, err)
	}
	if msgs, err := Check(Full, again, []Schema{s}); err != nil || len(msgs) != 0 {
		t.Fatalf("descriptor against its text: %v %v", msgs, err)
	}
}
