package tier

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// Remote reads.
//
// A fetch below the local log start asks Read for the batches from the
// offset on. Read never waits for HDFS: it answers from the chunk cache,
// or starts loading the chunks it lacks in the background and returns a
// channel closed when they are in. The server adds that channel to the
// fetch's long poll, so the fetch answers when the bytes arrive, and the
// other partitions of the same fetch (local ones) are never held up by
// HDFS. Every read also starts loading the chunk after the last one it
// touched (read-ahead), so a consumer reading on finds its next bytes in
// memory. The cache is bounded (Config.CacheBytes) and least recently
// used chunks go first.

// ErrNotRemote is an offset that remote storage does not hold.
var ErrNotRemote = errors.New("broker/tier: offset not in remote storage")

// Read returns whole batches from the one holding offset, at most
// maxBytes of them, except that with minOneBatch the first batch is
// returned whole whatever its size (KIP-74). One read stays within one
// remote segment. When the bytes are not in the cache yet, data is nil and
// wait is closed once they are: read again then.
func (m *Manager) Read(tp log.TopicPartition, offset, maxBytes int64, minOneBatch bool) (data []byte, wait <-chan struct{}, err error) {
	p := m.lookup(tp)
	if p == nil {
		return nil, nil, ErrNotRemote
	}
	man := p.manifest.Load()
	if man == nil {
		if c := p.cached.Load(); c != nil {
			if _, ok := c.Find(offset); ok {
				return nil, nil, fmt.Errorf("%w: the remote metadata of %s is not loaded yet", ErrUnavailable, tp)
			}
		}
		return nil, nil, ErrNotRemote
	}
	seg, ok := man.Find(offset)
	if !ok {
		if man.Hole(offset) {
			// Not out of range (a consumer would reset past it) and not
			// the next segment (a silent skip): an error until an
			// operator looks (review 4).
			return nil, nil, fmt.Errorf("%w: offset %d of %s lies in a hole of the remote segments", ErrUnavailable, offset, tp)
		}
		return nil, nil, ErrNotRemote
	}
	fs, err := m.store()
	if err != nil {
		return nil, nil, err
	}
	r := &segReader{m: m, fs: fs, dir: p.dir, seg: seg}
	// A consumer reading on starts each segment at its base offset, where
	// no index is needed.
	pos := int64(0)
	if offset > seg.BaseOffset {
		idx, wait, err := r.index()
		if wait != nil || err != nil {
			return nil, wait, err
		}
		pos = remotelog.IndexLookup(idx, seg.BaseOffset, offset)
	}
	// Skip the batches that end before offset (at most an index
	// interval's worth).
	var first int64
	for {
		if pos+record.LogOverhead > seg.Size {
			return nil, nil, nil
		}
		n := min(record.HeaderSize, seg.Size-pos)
		hdr, wait, err := r.readAt(pos, n)
		if err != nil {
			return nil, nil, err
		}
		if int64(len(hdr)) < n && wait != nil {
			return nil, wait, nil
		}
		if len(hdr) < 27 {
			return nil, nil, fmt.Errorf("broker/tier: %s: truncated batch at %d", seg.FileName(suffixLog), pos)
		}
		size := record.LogOverhead + int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
		if size < record.HeaderSize {
			// A malformed length would not move pos on: spin no more.
			return nil, nil, fmt.Errorf("broker/tier: %s: malformed batch length at %d", seg.FileName(suffixLog), pos)
		}
		if record.Batch(hdr).LastOffset() >= offset {
			first = size
			break
		}
		pos += size
	}
	// A read is capped whatever the consumer asks for: a fetch larger
	// than the cache would evict its first chunks before its last arrive,
	// and never complete.
	want := min(maxBytes, m.maxRead())
	if minOneBatch && want < first {
		want = first
	}
	want = min(want, seg.Size-pos)
	if want < first {
		return nil, nil, nil
	}
	data, wait, err = r.readAt(pos, want)
	if err != nil {
		return nil, nil, err
	}
	// The whole batches already in memory are answered now; the rest is
	// loading for the next fetch.
	data = wholeBatches(data)
	if int64(len(data)) < first {
		return nil, wait, nil
	}
	if wait == nil {
		r.readAhead(pos+want, man)
	}
	return data, nil, nil
}

// maxRemoteRead caps one remote read, below the cache's own cap.
const maxRemoteRead = 16 << 20

func (m *Manager) maxRead() int64 {
	return max(min(m.cfg.CacheBytes/4, maxRemoteRead), 1)
}

// wholeBatches cuts a trailing partial batch.
func wholeBatches(b []byte) []byte {
	n := 0
	for rest := b; len(rest) >= record.LogOverhead; {
		size := record.LogOverhead + int(int32(binary.BigEndian.Uint32(rest[8:12])))
		if size > len(rest) || size <= record.LogOverhead {
			break
		}
		n += size
		rest = rest[size:]
	}
	return b[:n]
}

// segReader reads one remote segment through the cache.
type segReader struct {
	m   *Manager
	fs  fsys.FS
	dir string
	seg SegmentMetadata
}

func (r *segReader) name(suffix string) string {
	return path.Join(r.dir, r.seg.FileName(suffix))
}

func (r *segReader) index() ([]byte, <-chan struct{}, error) {
	return r.m.cache.get(chunkKey{r.dir, r.seg.FileName(""), suffixIndex, 0}, func() ([]byte, error) {
		return r.fs.ReadFile(r.name(suffixIndex))
	}, r.seg.Files[suffixIndex])
}

func (r *segReader) chunk(i int64) ([]byte, <-chan struct{}, error) {
	c := r.m.cfg.ChunkBytes
	return r.m.cache.get(chunkKey{r.dir, r.seg.FileName(""), suffixLog, i}, func() ([]byte, error) {
		f, err := r.fs.Open(r.name(suffixLog))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		ra, ok := f.(io.ReaderAt)
		if !ok {
			return nil, errors.New("broker/tier: remote file system has no random access")
		}
		buf := make([]byte, min(c, r.seg.Size-i*c))
		n, err := ra.ReadAt(buf, i*c)
		if err == io.EOF && int64(n) == int64(len(buf)) {
			err = nil
		}
		if err == nil && n < len(buf) {
			err = fmt.Errorf("%s is shorter than its %d bytes", r.name(suffixLog), r.seg.Size)
		}
		return buf[:n], err
	}, min(c, r.seg.Size-i*c))
}

// readAt returns the bytes at pos, at most n, that are in memory from pos
// on: an unbroken run of loaded chunks. The chunks missing start loading
// (as far as the cache has load slots), and wait is closed when one is in.
func (r *segReader) readAt(pos, n int64) ([]byte, <-chan struct{}, error) {
	c := r.m.cfg.ChunkBytes
	out := make([]byte, 0, n)
	var wait <-chan struct{}
	for i := pos / c; i <= (pos+n-1)/c; i++ {
		data, w, err := r.chunk(i)
		if err != nil {
			return nil, nil, err
		}
		if w != nil {
			if wait == nil {
				wait = w
			}
			continue
		}
		if wait == nil {
			lo := max(pos-i*c, 0)
			hi := min(pos+n-i*c, int64(len(data)))
			out = append(out, data[lo:hi]...)
		}
	}
	return out, wait, nil
}

// readAhead starts loading the chunks of the next readAheadBytes after
// end, in this segment and the ones after it, all at once: HDFS serves
// them in parallel, and a consumer reading on finds them in memory.
func (r *segReader) readAhead(end int64, man *Manifest) {
	budget := min(r.m.cfg.ChunkBytes*readAheadChunks, r.m.cfg.CacheBytes/2)
	c := r.m.cfg.ChunkBytes
	cur := r
	for budget > 0 {
		for i := end / c; i*c < cur.seg.Size && budget > 0; i++ {
			cur.chunk(i)
			budget -= min(c, cur.seg.Size-i*c)
		}
		next, ok := man.Find(cur.seg.EndOffset + 1)
		if !ok {
			return
		}
		cur, end = &segReader{m: r.m, fs: r.fs, dir: r.dir, seg: next}, 0
	}
}

// readAheadChunks is how many chunks a read loads ahead of itself.
const readAheadChunks = 4

// chunkCache holds remote bytes by chunk, bounded in size, least recently
// used first out. A chunk being loaded is in the cache already, so that
// concurrent readers wait for one load, and its expected size counts
// against the bound. At most slots chunks load at once: a reader that
// finds them all busy waits for one to finish, so that many consumers far
// behind cannot make the broker hold or read without bound.
type chunkCache struct {
	limit   int64
	slots   int
	timeout time.Duration // of a load (timed)

	mu      sync.Mutex
	size    int64         // ready chunks' bytes plus loading ones' expected bytes
	loading int           // loads under way
	hung    int           // loads past their timeout that have not returned
	freed   chan struct{} // closed when a load ends; then replaced
	lru     *list.List    // of *chunk, most recent first; ready ones only
	items   map[chunkKey]*chunk
}

type chunkKey struct {
	dir string
	// seg is the segment's file name without suffix: it names the
	// upload, so a segment replaced by one of the same base offset (a
	// longer upload after a leader change) is never served from the
	// replaced one's chunks.
	seg    string
	suffix string
	i      int64
}

type chunk struct {
	key   chunkKey
	ready chan struct{}
	data  []byte
	err   error
	elem  *list.Element
}

// maxLoadSlots bounds concurrent chunk loads whatever the cache size.
const maxLoadSlots = 16

func newChunkCache(limit, chunkBytes int64, timeout time.Duration) *chunkCache {
	slots := int(min(max(limit/(2*chunkBytes), 1), maxLoadSlots))
	return &chunkCache{limit: limit, slots: slots, timeout: timeout, freed: make(chan struct{}), lru: list.New(), items: map[chunkKey]*chunk{}}
}

// get returns the chunk, or starts loading it (of about expect bytes) and
// returns a channel closed when it is loaded, or when a load slot frees
// up. A failed load is reported once and then forgotten, so that the next
// read tries again.
func (c *chunkCache) get(k chunkKey, load func() ([]byte, error), expect int64) ([]byte, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.items[k]; ok {
		select {
		case <-ch.ready:
		default:
			return nil, ch.ready, nil
		}
		if ch.err != nil {
			delete(c.items, k)
			return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, ch.err)
		}
		c.lru.MoveToFront(ch.elem)
		return ch.data, nil, nil
	}
	if c.hung >= c.slots {
		// Every slot's load outlived its timeout and still runs: new
		// ones would only pile up behind the same remote store.
		return nil, nil, fmt.Errorf("%w: %w: %d remote reads have not returned", ErrUnavailable, errTimedOut, c.hung)
	}
	if c.loading >= c.slots {
		return nil, c.freed, nil
	}
	ch := &chunk{key: k, ready: make(chan struct{})}
	c.items[k] = ch
	c.loading++
	c.size += expect
	c.evict()
	go func() {
		data, err := c.timed(load)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.loading--
		c.size -= expect
		close(c.freed)
		c.freed = make(chan struct{})
		ch.data, ch.err = data, err
		close(ch.ready)
		if c.items[k] != ch || err != nil {
			return
		}
		ch.elem = c.lru.PushFront(ch)
		c.size += int64(len(data))
		c.evict()
	}()
	return nil, ch.ready, nil
}

// timed runs load with the cache's timeout: a load that hangs (a
// DataNode that accepts and never answers; internal/fsys has no
// deadlines) fails with errTimedOut and frees its slot, so that it does
// not take a slot for ever, and with all of them every remote read of the
// broker. It is counted in c.hung until it returns.
func (c *chunkCache) timed(load func() ([]byte, error)) ([]byte, error) {
	if c.timeout <= 0 {
		return load()
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := load()
		done <- result{data, err}
	}()
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.data, r.err
	case <-t.C:
	}
	c.mu.Lock()
	c.hung++
	c.mu.Unlock()
	go func() {
		<-done
		c.mu.Lock()
		defer c.mu.Unlock()
		c.hung--
	}()
	return nil, fmt.Errorf("%w after %v", errTimedOut, c.timeout)
}

// evict drops least recently used ready chunks while the cache is over
// its bound, keeping the newest. c.mu is held.
func (c *chunkCache) evict() {
	for c.size > c.limit && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Back()).(*chunk)
		delete(c.items, old.key)
		c.size -= int64(len(old.data))
	}
}

// dropSegments forgets the chunks of deleted remote segments.
func (c *chunkCache) dropSegments(dir string, segs []SegmentMetadata) {
	gone := map[string]bool{}
	for _, s := range segs {
		gone[s.FileName("")] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, ch := range c.items {
		if k.dir == dir && gone[k.seg] {
			delete(c.items, k)
			if ch.elem != nil {
				c.lru.Remove(ch.elem)
				c.size -= int64(len(ch.data))
			}
		}
	}
}
