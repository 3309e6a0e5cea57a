package remotelog

import (
	"fmt"
	"path"
)

// Suffixes of a remote segment's files, Kafka's.
const (
	SuffixLog       = ".log"
	SuffixIndex     = ".index"
	SuffixTimeIndex = ".timeindex"
	SuffixEpochs    = ".leader-epoch-checkpoint"
	SuffixSnapshot  = ".snapshot"
	SuffixTxnIndex  = ".txnindex"
)

// SegmentFileName is the remote name of a segment's file with suffix.
func SegmentFileName(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }

// Dir is a partition's remote directory below the storage root. topicID
// is the topic's id as Kafka prints it (URL-safe base64, no padding), so
// a topic deleted and created again under the same name never reads the
// old one's data.
func Dir(topic, topicID string, partition int32) string {
	return path.Join(topic+"-"+topicID, fmt.Sprint(partition))
}
