package dump

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tributary-io/tributary/broker/record"
)

// BatchInfo is a batch header as printed, in Kafka's field names.
type BatchInfo struct {
	BaseOffset           int64  `json:"baseOffset"`
	LastOffset           int64  `json:"lastOffset"`
	Count                int32  `json:"count"`
	BaseSequence         int32  `json:"baseSequence"`
	LastSequence         int32  `json:"lastSequence"`
	ProducerID           int64  `json:"producerId"`
	ProducerEpoch        int16  `json:"producerEpoch"`
	PartitionLeaderEpoch int32  `json:"partitionLeaderEpoch"`
	Transactional        bool   `json:"isTransactional"`
	Control              bool   `json:"isControl"`
	DeleteHorizonMs      *int64 `json:"deleteHorizonMs,omitempty"`
	Position             int64  `json:"position"`
	TimestampType        string `json:"timestampType"`
	MaxTimestamp         int64  `json:"maxTimestamp"`
	Size                 int    `json:"size"`
	Magic                int8   `json:"magic"`
	Codec                string `json:"compresscodec"`
	CRC                  uint32 `json:"crc"`
	// Valid is Kafka's isvalid: the CRC matches. --verify checks the rest.
	Valid bool `json:"isValid"`
}

func timestampType(b record.Batch) string {
	if b.LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// sequenceAt is Kafka's DefaultRecordBatch.incrementSequence: producer
// sequences wrap from MaxInt32 to 0; -1 means no sequence.
func sequenceAt(base int32, delta int32) int32 {
	if base < 0 {
		return -1
	}
	if base > 1<<31-1-delta {
		return delta - (1<<31 - 1 - base) - 1
	}
	return base + delta
}

func batchInfo(pos int64, b record.Batch, valid bool) BatchInfo {
	info := BatchInfo{
		BaseOffset:           b.BaseOffset(),
		LastOffset:           b.LastOffset(),
		Count:                b.RecordCount(),
		BaseSequence:         b.BaseSequence(),
		LastSequence:         sequenceAt(b.BaseSequence(), b.LastOffsetDelta()),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Transactional:        b.Transactional(),
		Control:              b.Control(),
		Position:             pos,
		TimestampType:        timestampType(b),
		MaxTimestamp:         b.MaxTimestamp(),
		Size:                 len(b),
		Magic:                b.Magic(),
		Codec:                b.Codec().String(),
		CRC:                  b.CRC(),
		Valid:                valid,
	}
	if b.HasDeleteHorizon() {
		h := b.BaseTimestamp()
		info.DeleteHorizonMs = &h
	}
	return info
}

// RecordInfo is one record as printed with --deep.
type RecordInfo struct {
	Offset        int64    `json:"offset"`
	TimestampType string   `json:"timestampType"`
	Timestamp     int64    `json:"timestamp"`
	KeySize       int      `json:"keySize"`
	ValueSize     int      `json:"valueSize"`
	Sequence      int32    `json:"sequence"`
	HeaderKeys    []string `json:"headerKeys"`
	// Control describes a control record (transaction marker).
	Control string `json:"control,omitempty"`
	// Key, Payload and Headers are set with --print-data; a null key or
	// value stays nil.
	Key     *string      `json:"key,omitempty"`
	Payload *string      `json:"payload,omitempty"`
	Headers []HeaderInfo `json:"headers,omitempty"`
}

// HeaderInfo is a record header as printed with --print-data.
type HeaderInfo struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// printable shows bytes as text when they are printable UTF-8, as Kafka's
// default string decoder does, and Go-quoted otherwise so that a line of
// output stays one line.
func printable(b []byte) string {
	s := string(b)
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

func printableOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := printable(b)
	return &s
}

// printer is the output format. Problems found by --verify go through it
// too; file-level errors do not (Run returns them).
type printer interface {
	file(path string, kind Kind, base int64)
	batch(path string, b *BatchInfo)
	record(path string, r *RecordInfo)
	index(path string, e *IndexEntry)
	timeIndex(path string, e *TimeIndexEntry)
	note(path, msg string) // facts worth a line: empty file, invalid tail
	problem(p *Problem)
	summary(files, problems int, verify bool)
}

// textPrinter prints what Kafka's DumpLogSegments prints, so operators
// recognise it; problems go to the error stream, as Kafka's do.
type textPrinter struct{ out, err io.Writer }

func (p *textPrinter) file(path string, kind Kind, base int64) {
	fmt.Fprintf(p.out, "Dumping %s\n", path)
	if kind == KindLog {
		fmt.Fprintf(p.out, "Log starting offset: %d\n", base)
	}
}

func (p *textPrinter) batch(_ string, b *BatchInfo) {
	// Kafka prints the Java Optional as is; so do we, so that the two
	// dumps can be compared line by line.
	horizon := "OptionalLong.empty"
	if b.DeleteHorizonMs != nil {
		horizon = "OptionalLong[" + strconv.FormatInt(*b.DeleteHorizonMs, 10) + "]"
	}
	fmt.Fprintf(p.out, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d "+
		"producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t "+
		"deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		b.BaseOffset, b.LastOffset, b.Count, b.BaseSequence, b.LastSequence,
		b.ProducerID, b.ProducerEpoch, b.PartitionLeaderEpoch, b.Transactional, b.Control,
		horizon, b.Position, b.TimestampType, b.MaxTimestamp, b.Size, b.Magic, b.Codec, b.CRC, b.Valid)
}

func (p *textPrinter) record(_ string, r *RecordInfo) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
		r.Offset, r.TimestampType, r.Timestamp, r.KeySize, r.ValueSize, r.Sequence, strings.Join(r.HeaderKeys, ","))
	if r.Control != "" {
		sb.WriteString(" " + r.Control)
	}
	if r.Key != nil {
		sb.WriteString(" key: " + *r.Key)
	}
	if r.Payload != nil {
		sb.WriteString(" payload: " + *r.Payload)
	}
	sb.WriteByte('\n')
	io.WriteString(p.out, sb.String())
}

func (p *textPrinter) index(_ string, e *IndexEntry) {
	fmt.Fprintf(p.out, "offset: %d position: %d\n", e.Offset, e.Position)
}

func (p *textPrinter) timeIndex(_ string, e *TimeIndexEntry) {
	fmt.Fprintf(p.out, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
}

func (p *textPrinter) note(_ string, msg string) { fmt.Fprintln(p.out, msg) }

func (p *textPrinter) problem(pr *Problem) { fmt.Fprintln(p.err, pr.String()) }

func (p *textPrinter) summary(files, problems int, verify bool) {
	if verify && problems == 0 {
		fmt.Fprintf(p.err, "Verified %d files: no problems found.\n", files)
	}
}

// jsonPrinter writes JSON Lines: one object per line, each with "type" and
// "file", so that `jq 'select(.type == "batch")'` works on a stream.
type jsonPrinter struct{ enc *json.Encoder }

func newJSONPrinter(w io.Writer) *jsonPrinter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonPrinter{enc: enc}
}

func (p *jsonPrinter) file(path string, kind Kind, base int64) {
	p.enc.Encode(struct {
		Type       string `json:"type"`
		File       string `json:"file"`
		Kind       string `json:"kind"`
		BaseOffset int64  `json:"baseOffset"`
	}{"file", path, kind.String(), base})
}

func (p *jsonPrinter) batch(path string, b *BatchInfo) {
	p.enc.Encode(struct {
		Type string `json:"type"`
		File string `json:"file"`
		*BatchInfo
	}{"batch", path, b})
}

func (p *jsonPrinter) record(path string, r *RecordInfo) {
	p.enc.Encode(struct {
		Type string `json:"type"`
		File string `json:"file"`
		*RecordInfo
	}{"record", path, r})
}

func (p *jsonPrinter) index(path string, e *IndexEntry) {
	p.enc.Encode(struct {
		Type string `json:"type"`
		File string `json:"file"`
		*IndexEntry
	}{"index", path, e})
}

func (p *jsonPrinter) timeIndex(path string, e *TimeIndexEntry) {
	p.enc.Encode(struct {
		Type string `json:"type"`
		File string `json:"file"`
		*TimeIndexEntry
	}{"timeindex", path, e})
}

func (p *jsonPrinter) note(path, msg string) {
	p.enc.Encode(struct {
		Type    string `json:"type"`
		File    string `json:"file"`
		Message string `json:"message"`
	}{"note", path, msg})
}

func (p *jsonPrinter) problem(pr *Problem) {
	p.enc.Encode(struct {
		Type string `json:"type"`
		*Problem
	}{"problem", pr})
}

func (p *jsonPrinter) summary(int, int, bool) {}
