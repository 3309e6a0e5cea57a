package share

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The journal persists share-partition state on the partition leader's
// disk, so that nothing acknowledged is delivered again after a restart.
// Kafka keeps this state in the replicated __share_group_state topic
// (ShareSnapshot and ShareUpdate records); Tributary keeps, for now, a
// local file per broker: a difference docs/broker.md records (the state
// does not follow a partition to a new leader).
//
// The file is a sequence of entries, each the whole state of one share
// partition, the last one of a partition winning:
//
//	┌────────┬────────┬──────────────────────────────────────────────┐
//	│ len u32│ crc u32│ body (len bytes)                             │
//	└────────┴────────┴──────────────────────────────────────────────┘
//	body: groupLen u16 │ group │ topicID [16] │ partition i32 │ spso i64 │
//	      n u32 │ n × (first i64 │ last i64 │ state i8 │ count i16)
//
// (big-endian; crc is CRC-32C of the body). An entry is written with one
// write(2), before the request that changed the state is answered; like
// the log, it is not fsynced: it survives the process being killed, not
// the machine losing power. A torn or corrupt tail (a crash in the middle
// of a write) ends the replay and is cut off. At open, and whenever the
// file has grown to eight times the live state, it is rewritten with one
// entry per partition (written aside, fsynced, renamed over).

const journalName = "share-group-state.log"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type persisted struct {
	spso    int64
	batches []Batch
}

type journal struct {
	dir     string
	f       *os.File
	size    int64
	entries int
	live    map[Key]persisted
}

// openJournal replays dir's journal and rewrites it compacted.
func openJournal(dir string) (*journal, map[Key]persisted, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	live := map[Key]persisted{}
	path := filepath.Join(dir, journalName)
	if f, err := os.Open(path); err == nil {
		err = replay(bufio.NewReader(f), live)
		f.Close()
		if err != nil {
			return nil, nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	j := &journal{dir: dir, live: live}
	if err := j.compact(); err != nil {
		return nil, nil, err
	}
	return j, live, nil
}

func replay(r *bufio.Reader, live map[Key]persisted) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil // the end, or a torn header
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n > 64<<20 {
			return nil // corrupt length: the tail is garbage
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil
		}
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return nil
		}
		k, st, ok := decodeEntry(body)
		if !ok {
			return nil
		}
		if st.spso < 0 {
			delete(live, k)
		} else {
			live[k] = st
		}
	}
}

func encodeEntry(k Key, spso int64, batches []Batch) []byte {
	b := make([]byte, 8, 8+2+len(k.Group)+16+4+8+4+len(batches)*19)
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.Topic[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(k.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(spso))
	b = binary.BigEndian.AppendUint32(b, uint32(len(batches)))
	for _, bt := range batches {
		b = binary.BigEndian.AppendUint64(b, uint64(bt.First))
		b = binary.BigEndian.AppendUint64(b, uint64(bt.Last))
		b = append(b, byte(bt.State))
		b = binary.BigEndian.AppendUint16(b, uint16(bt.Count))
	}
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-8))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

func decodeEntry(b []byte) (Key, persisted, bool) {
	var k Key
	var st persisted
	if len(b) < 2 {
		return k, st, false
	}
	gl := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < gl+16+4+8+4 {
		return k, st, false
	}
	k.Group = string(b[:gl])
	b = b[gl:]
	copy(k.Topic[:], b)
	k.Partition = int32(binary.BigEndian.Uint32(b[16:]))
	st.spso = int64(binary.BigEndian.Uint64(b[20:]))
	n := int(binary.BigEndian.Uint32(b[28:]))
	b = b[32:]
	if len(b) != n*19 {
		return k, st, false
	}
	for i := 0; i < n; i++ {
		e := b[i*19:]
		st.batches = append(st.batches, Batch{
			First: int64(binary.BigEndian.Uint64(e)),
			Last:  int64(binary.BigEndian.Uint64(e[8:])),
			State: State(e[16]),
			Count: int16(binary.BigEndian.Uint16(e[17:])),
		})
	}
	return k, st, true
}

// write appends one partition's state; spso -1 deletes it.
func (j *journal) write(k Key, spso int64, batches []Batch) error {
	if spso < 0 {
		delete(j.live, k)
	} else {
		j.live[k] = persisted{spso: spso, batches: batches}
	}
	b := encodeEntry(k, spso, batches)
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("broker/share: journal: %w", err)
	}
	j.size += int64(len(b))
	j.entries++
	if j.entries > 1024 && j.entries > 8*len(j.live) {
		return j.compact()
	}
	return nil
}

// compact rewrites the journal with one entry per live partition.
func (j *journal) compact() error {
	tmp := filepath.Join(j.dir, journalName+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var size int64
	for k, st := range j.live {
		b := encodeEntry(k, st.spso, st.batches)
		w.Write(b)
		size += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	path := filepath.Join(j.dir, journalName)
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(j.dir); err == nil {
		d.Sync()
		d.Close()
	}
	if j.f != nil {
		j.f.Close()
	}
	if j.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return err
	}
	j.size, j.entries = size, len(j.live)
	return nil
}

func (j *journal) close() {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
}
