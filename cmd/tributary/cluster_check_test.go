package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// v2Batch is a magic-2 record batch of n records from base, each with
// value payload, as broker/record builds it (correct CRC).
func v2Batch(base int64, n int32, payload string) []byte {
	kvs := make([]record.KV, n)
	for i := range kvs {
		kvs[i].Value = []byte(payload)
	}
	b, err := record.Build(record.DefaultBuildOptions(), record.NewRecords(kvs...))
	if err != nil {
		panic(err)
	}
	b.SetBaseOffset(base)
	return b
}

// v1Message is a magic-1 message set entry with a correct CRC.
func v1Message(offset int64, value string) []byte {
	b := make([]byte, 12+4+1+1+8+4+4+len(value))
	binary.BigEndian.PutUint64(b[0:], uint64(offset))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	b[16] = 1
	binary.BigEndian.PutUint32(b[26:], 0xffffffff) // null key
	binary.BigEndian.PutUint32(b[30:], uint32(len(value)))
	copy(b[34:], value)
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func TestCheckParseBatchHeaders(t *testing.T) {
	a, b := v2Batch(0, 3, "abc"), v2Batch(3, 2, "de")
	all := append(append([]byte{}, a...), b...)

	got, err := parseBatchHeaders(all)
	if err != nil || len(got) != 2 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got[0].Base != 0 || got[0].Last != 2 || got[1].Base != 3 || got[1].Last != 4 || got[0].Corrupt || got[1].Corrupt {
		t.Errorf("got %+v", got)
	}
	if got[0].CRC != binary.BigEndian.Uint32(a[17:]) {
		t.Errorf("crc %08x, want the header's", got[0].CRC)
	}

	// A batch cut by the broker's max bytes is left for the next fetch.
	if got, err := parseBatchHeaders(all[:len(all)-1]); err != nil || len(got) != 1 {
		t.Errorf("partial batch: %+v, %v", got, err)
	}
	if got, err := parseBatchHeaders(all[:len(a)+5]); err != nil || len(got) != 1 {
		t.Errorf("partial length field: %+v, %v", got, err)
	}

	// A flipped payload byte keeps the stored CRC but is caught.
	bad := append([]byte{}, all...)
	bad[len(a)-1] ^= 1
	if got, _ := parseBatchHeaders(bad); !got[0].Corrupt || got[1].Corrupt || got[0].CRC != binary.BigEndian.Uint32(a[17:]) {
		t.Errorf("flipped byte: %+v", got)
	}

	m := v1Message(7, "old")
	if got, err := parseBatchHeaders(m); err != nil || len(got) != 1 || got[0].Base != 7 || got[0].Last != 7 || got[0].Corrupt {
		t.Errorf("magic 1: %+v, %v", got, err)
	}

	unknown := append([]byte{}, a...)
	unknown[16] = 9
	if _, err := parseBatchHeaders(unknown); err == nil || !strings.Contains(err.Error(), "magic 9") {
		t.Errorf("magic 9: err = %v", err)
	}
	short := append([]byte{}, a...)
	binary.BigEndian.PutUint32(short[8:], 3)
	if _, err := parseBatchHeaders(short); err == nil || !strings.Contains(err.Error(), "length 3") {
		t.Errorf("length 3: err = %v", err)
	}
}

func TestCheckCompareReplicas(t *testing.T) {
	b := func(base, last int64, crc uint32) batchInfo { return batchInfo{Base: base, Last: last, CRC: crc} }
	good := []batchInfo{b(0, 9, 0xa), b(10, 19, 0xb), b(20, 24, 0xc)}
	with := func(i int, x batchInfo) []batchInfo {
		l := append([]batchInfo{}, good...)
		l[i] = x
		return l
	}
	corrupt := b(10, 19, 0xb)
	corrupt.Corrupt = true

	for _, c := range []struct {
		name  string
		lists map[int32][]batchInfo
		n     int
		want  string // the divergence printed; "" for none
	}{
		{"equal", map[int32][]batchInfo{1: good, 2: good, 3: good}, 3, ""},
		{"one replica", map[int32][]batchInfo{1: good}, 3, ""},
		{"empty", map[int32][]batchInfo{1: nil, 2: {}, 3: nil}, 0, ""},
		{"crc differs", map[int32][]batchInfo{1: good, 2: with(1, b(10, 19, 0xbad)), 3: good}, 1,
			"DIVERGED at offset 10: replica 1 10-19 crc 0000000b, replica 2 10-19 crc 00000bad, replica 3 10-19 crc 0000000b"},
		{"last offset differs", map[int32][]batchInfo{1: good, 2: good, 3: with(2, b(20, 22, 0xc))}, 2,
			"DIVERGED at offset 20: replica 1 20-24 crc 0000000c, replica 2 20-24 crc 0000000c, replica 3 20-22 crc 0000000c"},
		{"base differs", map[int32][]batchInfo{1: with(0, b(1, 9, 0xa)), 2: good, 3: good}, 0,
			"DIVERGED at offset 0: replica 1 1-9 crc 0000000a, replica 2 0-9 crc 0000000a, replica 3 0-9 crc 0000000a"},
		{"missing batches", map[int32][]batchInfo{1: good, 2: good[:1], 3: good}, 1,
			"DIVERGED at offset 10: replica 1 10-19 crc 0000000b, replica 2 has no batch, replica 3 10-19 crc 0000000b"},
		{"missing replica", map[int32][]batchInfo{1: good, 3: good}, 0,
			"DIVERGED at offset 0: replica 1 0-9 crc 0000000a, replica 2 has no batch, replica 3 0-9 crc 0000000a"},
		{"corrupt on one", map[int32][]batchInfo{1: good, 2: with(1, corrupt), 3: good}, 1,
			"DIVERGED at offset 10: replica 1 10-19 crc 0000000b, replica 2 10-19 crc 0000000b (CORRUPT: bytes do not match the crc), replica 3 10-19 crc 0000000b"},
		{"corrupt on the only replica", map[int32][]batchInfo{1: with(1, corrupt)}, 1,
			"DIVERGED at offset 10: replica 1 10-19 crc 0000000b (CORRUPT: bytes do not match the crc)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var replicas []int32
			for r := int32(1); r <= 3; r++ {
				if _, ok := c.lists[r]; ok || c.name == "missing replica" {
					replicas = append(replicas, r)
				}
			}
			n, d := compareReplicas(replicas, c.lists)
			got := ""
			if d != nil {
				got = d.String(replicas)
			}
			if n != c.n || got != c.want {
				t.Errorf("got %d, %q\nwant %d, %q", n, got, c.n, c.want)
			}
		})
	}
}

// On one broker every partition has one replica, which must read back as
// ok up to its high watermark; this is the whole read path (metadata,
// start offsets, Fetch to the replica's broker, batch parsing) today.
func TestCheckReplicasSingleBroker(t *testing.T) {
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "checked", 2)
	testbroker.CreateTopic(t, b.Addr(), "empty", 1)
	for i := range 3 { // three produce calls: several batches per partition
		var lines strings.Builder
		for j := range 40 {
			fmt.Fprintf(&lines, "record %d-%d\n", i, j)
		}
		mustRunCLI(t, lines.String(), "produce", "checked", "-b", b.Addr())
	}
	hw := testbroker.HighWatermarks(t, b.Addr(), "checked")

	out := mustRunCLI(t, "", "cluster", "check-replicas", "-b", b.Addr(), "--topic", "checked", "--topic", "empty")
	total := int64(0)
	for p := range int32(2) {
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^checked +%d +1 +1 +ok \((\d+) batches up to offset %d\)$`, p, hw[p])).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("partition %d (high watermark %d) not ok:\n%s", p, hw[p], out)
		}
		if n, _ := strconv.Atoi(m[1]); n == 0 {
			t.Errorf("partition %d: no batch compared:\n%s", p, out)
		}
		total += hw[p]
	}
	if total != 120 {
		t.Errorf("high watermarks %v, want 120 records in all", hw)
	}
	if !regexp.MustCompile(`(?m)^empty +0 +1 +1 +ok \(0 batches up to offset 0\)$`).MatchString(out) {
		t.Errorf("empty topic not ok:\n%s", out)
	}

	// Every topic when none is named.
	out = mustRunCLI(t, "", "cluster", "check-replicas", "-b", b.Addr())
	if !strings.Contains(out, "checked ") || !strings.Contains(out, "empty ") || strings.Contains(out, "DIVERGED") || strings.Contains(out, "unreadable") {
		t.Errorf("all topics:\n%s", out)
	}

	wantCLIError(t, "", []string{`--topic "nope"`, "does not exist"}, "cluster", "check-replicas", "-b", b.Addr(), "--topic", "nope")
	wantCLIError(t, "", []string{`--topic ""`}, "cluster", "check-replicas", "-b", b.Addr(), "--topic", "")
}
