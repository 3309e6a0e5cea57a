package remotelog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// LocalManifestFile is the copy of the newest manifest in the
// partition's local directory. The remote metadata itself is a series of
// versions (versions.go); LegacyManifestFile is the single manifest that
// earlier builds renamed over itself, read when no version exists.
const (
	LocalManifestFile  = "remote-log-manifest.json"
	LegacyManifestFile = "manifest.json"
	// ManifestVersion 2: versioned files, and segment files named by
	// upload (SegmentMetadata.FileName). Version 1 (manifest.json) is
	// read, its segments marked OffsetNamed.
	ManifestVersion = 2
)

// Segment states, Kafka's RemoteLogSegmentState names. Only finished copies
// are written to the manifest today: a copy in progress is not in it, and
// a deletion removes the entry before the files. In the metadata log the
// started states will be records of their own.
const (
	CopySegmentFinished = "COPY_SEGMENT_FINISHED"
)

// EpochEntry is a leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// SegmentMetadata describes one remote segment, as Kafka's
// RemoteLogSegmentMetadata does.
type SegmentMetadata struct {
	// ID names this upload (Kafka's RemoteLogSegmentId). The segment's
	// files carry it (FileName), so that no upload, retried, concurrent
	// or a deposed leader's, writes over a file a manifest names.
	ID           string `json:"id"`
	BaseOffset   int64  `json:"base_offset"`
	EndOffset    int64  `json:"end_offset"` // the last offset the segment covers
	MaxTimestamp int64  `json:"max_timestamp_ms"`
	Size         int64  `json:"size_bytes"` // of the .log
	// LeaderEpochs are the epochs of the segment's batches, with the
	// first offset of each within it.
	LeaderEpochs []EpochEntry `json:"leader_epochs"`
	BrokerID     int32        `json:"broker_id"`
	// LeaderEpoch is the partition's leader epoch when it was uploaded.
	LeaderEpoch int32  `json:"leader_epoch"`
	State       string `json:"state"`
	EventTimeMs int64  `json:"event_time_ms"`
	// Files are the segment's remote files by suffix, with their sizes:
	// what a reader or a check expects to find.
	Files map[string]int64 `json:"files"`
	// ProducerState is ProducerStateExact when the segment's .snapshot is
	// the producer state exactly at its end, as Kafka's always is: what a
	// follower may start from (KIP-405). Older uploads, and one whose
	// state could not be computed, say nothing.
	ProducerState string `json:"producer_state,omitempty"`
	// MaxMessageBytes is the topic's max.message.bytes when the segment
	// was uploaded (0: not recorded, Kafka's default is assumed): the
	// floor of what a batch may decompress to when read back, as it was
	// when the broker took it (BatchReader).
	MaxMessageBytes int `json:"max_message_bytes,omitempty"`
	// OffsetNamed: uploaded before files were named by upload; its files
	// are named by BaseOffset alone.
	OffsetNamed bool `json:"offset_named,omitempty"`
}

// FileName is the remote name of the segment's file with suffix, in the
// partition's directory: <base offset>-<upload id><suffix>, as Kafka's
// remote storage plugins name them (copied back to a broker's directory
// for Kafka's tools, it takes the name SegmentFileName gives).
func (s *SegmentMetadata) FileName(suffix string) string {
	if s.OffsetNamed {
		return SegmentFileName(s.BaseOffset, suffix)
	}
	return fmt.Sprintf("%020d-%s%s", s.BaseOffset, s.ID, suffix)
}

// ProducerStateExact is SegmentMetadata.ProducerState for an exact snapshot.
const ProducerStateExact = "exact"

// Manifest is a partition's remote log metadata.
//
// Format (JSON, version 2): {"version":2,"sequence":..,"topic":..,
// "topic_id":..,"partition":..,"log_start_offset":..,"leader_epoch":..,
// "segments":[SegmentMetadata...]} with segments by base offset. A reader
// refuses a version it does not know.
type Manifest struct {
	Version int `json:"version"`
	// Sequence is the manifest's version number (versions.go): the
	// number in its file name.
	Sequence  int64  `json:"sequence"`
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int32  `json:"partition"`
	// LogStartOffset is the remote log start: the first offset that
	// remote storage serves. Total retention moves it.
	LogStartOffset int64 `json:"log_start_offset"`
	// LeaderEpoch is the highest leader epoch that wrote the manifest: a
	// broker with an older one is a deposed leader and does not write.
	LeaderEpoch int32             `json:"leader_epoch"`
	Segments    []SegmentMetadata `json:"segments"`
}

// ParseManifest decodes a manifest and checks its version and order.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("remotelog: corrupt manifest: %w", err)
	}
	switch m.Version {
	case ManifestVersion:
	case 1:
		m.Version, m.Sequence = ManifestVersion, 0
		for i := range m.Segments {
			m.Segments[i].OffsetNamed = true
		}
	default:
		return nil, fmt.Errorf("remotelog: manifest version %d, this reader reads %d", m.Version, ManifestVersion)
	}
	if !sort.SliceIsSorted(m.Segments, func(i, j int) bool { return m.Segments[i].BaseOffset < m.Segments[j].BaseOffset }) {
		return nil, errors.New("remotelog: corrupt manifest: segments out of order")
	}
	return &m, nil
}

// Encode is the manifest as written.
func (m *Manifest) Encode() []byte {
	data, _ := json.MarshalIndent(m, "", " ")
	return append(data, '\n')
}

// Clone is a copy to change and write, so that readers of the current
// manifest never see it change.
func (m *Manifest) Clone() *Manifest {
	c := *m
	c.Segments = append([]SegmentMetadata(nil), m.Segments...)
	return &c
}

// UploadedEnd is one past the last offset in remote storage, -1 for none.
func (m *Manifest) UploadedEnd() int64 {
	if len(m.Segments) == 0 {
		return -1
	}
	return m.Segments[len(m.Segments)-1].EndOffset + 1
}

// Size is the bytes of the remote segments.
func (m *Manifest) Size() int64 {
	var n int64
	for _, s := range m.Segments {
		n += s.Size
	}
	return n
}

// Find is the segment holding offset. An offset in a hole between
// segments is in none (a reader must not go on at the next segment and
// skip it silently; see Hole).
func (m *Manifest) Find(offset int64) (SegmentMetadata, bool) {
	i := sort.Search(len(m.Segments), func(i int) bool { return m.Segments[i].EndOffset >= offset })
	if i == len(m.Segments) || offset < m.LogStartOffset || m.Segments[i].BaseOffset > offset {
		return SegmentMetadata{}, false
	}
	return m.Segments[i], true
}

// Hole is whether offset lies between the remote log start and the
// uploaded end but in no segment: metadata that lost a segment.
func (m *Manifest) Hole(offset int64) bool {
	_, ok := m.Find(offset)
	return !ok && offset >= m.LogStartOffset && offset < m.UploadedEnd()
}

// NewSegmentID is a fresh RemoteLogSegmentId.
func NewSegmentID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
