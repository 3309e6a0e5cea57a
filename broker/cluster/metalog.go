package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// MetadataLogFile holds a single-node cluster's metadata log in the first
// log dir: one JSON Record a line, appended and fsynced before the change is
// published. A line without its newline is a write torn by a crash, which
// never reached anyone, and is dropped at open; any other bad line refuses
// the start, since skipping it would silently lose a topic.
//
//	{"topic":{"name":"events","id":"3vFaJ1...Q"}}
//	{"partition":{"topic_id":"3vFaJ1...Q","Index":0,"Leader":1,...}}
//	{"config":{"topic":"events","name":"retention.ms","value":"3600000"}}
const MetadataLogFile = "tributary-metadata.jsonl"

type metaLog struct {
	f *os.File
}

// openMetaLog replays the log into an image and opens it for appends.
func openMetaLog(path string, img *Image) (*metaLog, *Image, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	valid := 0
	lines := bytes.Split(data, []byte{'\n'})
	// The last element follows the final newline: empty, or a torn line.
	for i, line := range lines[:len(lines)-1] {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, nil, fmt.Errorf("cluster: %s line %d: %w", path, i+1, err)
		}
		if img, err = img.Apply(r); err != nil {
			return nil, nil, fmt.Errorf("cluster: %s line %d: %w", path, i+1, err)
		}
		valid += len(line) + 1
	}
	// It holds SCRAM credentials and the cluster secret: for the broker's
	// user only, a log made by an older version too.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := f.Truncate(int64(valid)); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(int64(valid), 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &metaLog{f: f}, img, nil
}

// append writes records durably, all or (after a crash) none of the ones
// whose lines were not completed.
func (m *metaLog) append(rs []Record) error {
	var buf bytes.Buffer
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := m.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("cluster: append metadata: %w", err)
	}
	return m.f.Sync()
}

func (m *metaLog) close() error { return m.f.Close() }
