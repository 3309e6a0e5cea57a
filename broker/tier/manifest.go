package tier

import "github.com/tributary-io/tributary/internal/remotelog"

// The remote log metadata and the remote file names are shared with the
// loader, which reads remote segments without a broker: they live in
// internal/remotelog.
type (
	Manifest        = remotelog.Manifest
	SegmentMetadata = remotelog.SegmentMetadata
	EpochEntry      = remotelog.EpochEntry
)

const (
	LocalManifestFile   = remotelog.LocalManifestFile
	CopySegmentFinished = remotelog.CopySegmentFinished

	suffixLog       = remotelog.SuffixLog
	suffixIndex     = remotelog.SuffixIndex
	suffixTimeIndex = remotelog.SuffixTimeIndex
	suffixEpochs    = remotelog.SuffixEpochs
	suffixSnapshot  = remotelog.SuffixSnapshot
	suffixTxnIndex  = remotelog.SuffixTxnIndex
)

// SegmentFileName is the remote name of a segment's file with suffix.
func SegmentFileName(base int64, suffix string) string {
	return remotelog.SegmentFileName(base, suffix)
}

var parseManifest = remotelog.ParseManifest
