package tier_test

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// remoteTargets are the two remote stores the commit must work on: a
// local directory (link(2) refuses an existing name) and the test HDFS
// (rename2 without OVERWRITE).
var remoteTargets = map[string]func(t *testing.T) string{
	"file": func(t *testing.T) string { return "file://" + t.TempDir() },
	"hdfs": func(t *testing.T) string { return "hdfs://" + testhdfs.Get(t).NameNode + testhdfs.Dir(t) },
}

func openRemote(t *testing.T, uri string) fsys.FS {
	t.Helper()
	fs, err := fsys.Open(uri, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// TestManifestCommitRace: writers racing to commit the same partition's
// manifest each win a version exactly once, and no writer's entry is
// lost (each rebases on the version that beat it); a writer of an older
// leader epoch, once a newer one has committed, writes nothing; and a
// writer that stalled past the removal of the versions it knew cannot
// slip a version in behind the newest.
func TestManifestCommitRace(t *testing.T) {
	t.Parallel()
	for name, target := range remoteTargets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fs := openRemote(t, target(t))
			dir := tier.RemoteDir("t", "id", 0)
			const writers, commits = 4, 5
			add := func(id string, base int64) func(*tier.Manifest) (*tier.Manifest, error) {
				return func(m *tier.Manifest) (*tier.Manifest, error) {
					if m == nil {
						m = &tier.Manifest{Topic: "t", TopicID: "id"}
					}
					m.Segments = append(m.Segments, tier.SegmentMetadata{ID: id, BaseOffset: base, EndOffset: base})
					sort.Slice(m.Segments, func(i, j int) bool { return m.Segments[i].BaseOffset < m.Segments[j].BaseOffset })
					return m, nil
				}
			}
			won := make([][]int64, writers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					var base *tier.Manifest
					for k := range commits {
						out, err := remotelog.Commit(fs, dir, base, 1, add(fmt.Sprintf("w%dk%d", w, k), int64(100*k+w)))
						if err != nil {
							t.Errorf("writer %d, commit %d: %v", w, k, err)
							return
						}
						won[w] = append(won[w], out.Sequence)
						base = out
					}
				}()
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				return
			}
			var all []int64
			for _, seqs := range won {
				all = append(all, seqs...)
			}
			slices.Sort(all)
			for i, seq := range all {
				if seq != int64(i+1) {
					t.Fatalf("versions won: %v; want each of 1..%d exactly once", all, writers*commits)
				}
			}
			// Every version holds every entry committed before it: one
			// more than the last.
			for seq := int64(1); seq <= writers*commits; seq++ {
				m, err := remotelog.ReadVersion(fs, dir, seq)
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Segments) != int(seq) || m.LeaderEpoch != 1 {
					t.Fatalf("version %d: %d entries, leader epoch %d; want %d, 1", seq, len(m.Segments), m.LeaderEpoch, seq)
				}
			}
			latest, err := remotelog.ReadLatest(fs, dir)
			if err != nil || latest.Sequence != writers*commits {
				t.Fatalf("newest version %+v %v", latest, err)
			}
			ids := map[string]bool{}
			for _, s := range latest.Segments {
				ids[s.ID] = true
			}
			for w := range writers {
				for k := range commits {
					if !ids[fmt.Sprintf("w%dk%d", w, k)] {
						t.Errorf("writer %d's commit %d is not in the newest manifest: lost", w, k)
					}
				}
			}

			// A new leader (epoch 2) and a deposed one (epoch 1) race
			// from the same version. The deposed one may win it (it
			// cannot know yet; its entry then holds records below its
			// high watermark, which the new leader has too), and the
			// new leader rebases on it; or it loses and, finding epoch
			// 2, writes nothing. Once the new leader has committed, it
			// never writes again.
			var newErr, oldErr error
			var both sync.WaitGroup
			both.Add(2)
			go func() {
				defer both.Done()
				_, newErr = remotelog.Commit(fs, dir, latest, 2, add("new", 1000))
			}()
			go func() {
				defer both.Done()
				_, oldErr = remotelog.Commit(fs, dir, latest, 1, add("zombie", 1001))
			}()
			both.Wait()
			if newErr != nil {
				t.Fatalf("the new leader's commit: %v", newErr)
			}
			after, err := remotelog.ReadLatest(fs, dir)
			if err != nil {
				t.Fatal(err)
			}
			has := func(m *tier.Manifest, id string) bool {
				return slices.ContainsFunc(m.Segments, func(s tier.SegmentMetadata) bool { return s.ID == id })
			}
			switch {
			case after.LeaderEpoch != 2 || !has(after, "new") || len(after.Segments) < writers*commits+1:
				t.Fatalf("newest after the new leader's commit: leader epoch %d, %d entries, has the new leader's: %v", after.LeaderEpoch, len(after.Segments), has(after, "new"))
			case oldErr == nil && !has(after, "zombie"):
				t.Fatalf("the deposed leader's commit won version %d, and the new leader's rebase lost it", latest.Sequence+1)
			case oldErr != nil && (!errors.Is(oldErr, remotelog.ErrFenced) || has(after, "zombie")):
				t.Fatalf("the deposed leader's commit: %v; in the newest manifest: %v", oldErr, has(after, "zombie"))
			}
			t.Logf("deposed leader's commit racing the new one's: %v", oldErr)
			if _, err := remotelog.Commit(fs, dir, after, 1, add("zombie2", 1002)); !errors.Is(err, remotelog.ErrFenced) {
				t.Fatalf("a deposed leader's commit on the new leader's version: %v, want ErrFenced", err)
			}
			stale := latest
			if _, err := remotelog.Commit(fs, dir, stale, 1, add("zombie3", 1003)); !errors.Is(err, remotelog.ErrFenced) {
				t.Fatalf("a deposed leader's commit from an old version: %v, want ErrFenced", err)
			}
			if now, _ := remotelog.ReadLatest(fs, dir); now.Sequence != after.Sequence {
				t.Fatalf("a fenced commit changed the newest version: %d, was %d", now.Sequence, after.Sequence)
			}

			// The versions a stalled writer knew are removed as
			// superseded (gc, past the grace period): its name is free
			// again, but a version behind the newest counts for nothing.
			for seq := int64(1); seq < after.Sequence; seq++ {
				if err := fs.RemoveAll(path.Join(dir, remotelog.ManifestName(seq))); err != nil {
					t.Fatal(err)
				}
			}
			old, err := remotelog.ReadLatest(fs, dir)
			if err != nil {
				t.Fatal(err)
			}
			old = old.Clone()
			old.Sequence, old.LeaderEpoch = 3, 2
			if _, err := remotelog.Commit(fs, dir, old, 2, add("stalled", 1004)); !errors.Is(err, remotelog.ErrFenced) {
				t.Fatalf("a commit after the removal of the versions it followed: %v, want ErrFenced", err)
			}
			if _, err := fs.Stat(path.Join(dir, remotelog.ManifestName(4))); !fsys.IsNotExist(err) {
				t.Errorf("the stale version 4 was left in place: %v", err)
			}
		})
	}
}

// TestDeposedLeaderUploadNeverReferenced: a leader deposed but not told
// yet (epoch 5) keeps uploading while the new leader (epoch 6) has
// claimed the manifest and uploaded a segment at the same base offset.
// The deposed leader's files never replace the new leader's (each upload
// has names of its own), its commit is refused, no manifest names its
// files, its local log keeps what it failed to register, and the new
// leader removes its files (grace 0 here).
func TestDeposedLeaderUploadNeverReferenced(t *testing.T) {
	t.Parallel()
	for name, target := range remoteTargets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			uri := target(t)
			fs := openRemote(t, uri)
			dir := tier.RemoteDir("t", "id", 0)
			old, cur := smallTieredLog(t), smallTieredLog(t)
			tp := cur.TopicPartition()
			cfg := tier.Config{URI: uri, User: testhdfs.DefaultUser, ChunkBytes: 1000, CacheBytes: 8000}
			cfg.NodeID = 1
			m1 := tier.New(cfg)
			defer m1.Close()
			cfg.NodeID = 2
			m2 := tier.New(cfg)
			defer m2.Close()
			lead := func(m *tier.Manager, l *log.Log, epoch int32) {
				m.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: epoch, Bound: l.LogEndOffset()}}, nil)
			}
			lead(m1, old, 5)
			first := readManifest(t, fs, dir)
			if first == nil || len(first.Segments) < 3 || first.LeaderEpoch != 5 {
				t.Fatalf("the first leader's manifest: %+v", first)
			}
			end := first.UploadedEnd()

			// The new leader: more records (value 0xAA), so the
			// segment at the uploaded end closes and goes up.
			appendBatches(t, cur, 0xAA, 30)
			lead(m2, cur, 6)
			claimed := readManifest(t, fs, dir)
			if claimed.LeaderEpoch != 6 || claimed.UploadedEnd() <= end {
				t.Fatalf("the new leader's manifest: leader epoch %d, uploaded end %d (was %d)", claimed.LeaderEpoch, claimed.UploadedEnd(), end)
			}
			// Offset 120 is the first appended record: in both logs, in
			// a segment from the same base.
			const appended = 120
			seg, ok := claimed.Find(appended)
			if !ok || seg.BaseOffset < end || seg.BrokerID != 2 {
				t.Fatalf("the new leader's segment holding %d: %+v %v", appended, seg, ok)
			}
			before := remoteFiles(t, fs, dir)

			// The deposed leader: other records (0xEE) at the same
			// offsets, uploaded from the same base.
			oldStart := old.LogStartOffset()
			appendBatches(t, old, 0xEE, 30)
			lead(m1, old, 5)
			after := remoteFiles(t, fs, dir)
			var zombie []string
			for name, size := range after {
				if was, ok := before[name]; !ok {
					zombie = append(zombie, name)
				} else if was != size {
					t.Errorf("%s changed size from %d to %d: the deposed leader wrote over it", name, was, size)
				}
			}
			if len(zombie) == 0 {
				t.Fatal("the deposed leader uploaded nothing: the test proves nothing")
			}
			now := readManifest(t, fs, dir)
			if now.Sequence != claimed.Sequence {
				t.Fatalf("the deposed leader committed version %d (leader epoch %d)", now.Sequence, now.LeaderEpoch)
			}
			named := map[string]bool{}
			for _, s := range now.Segments {
				for suf := range s.Files {
					named[s.FileName(suf)] = true
				}
			}
			for _, z := range zombie {
				if named[z] {
					t.Errorf("the manifest names the deposed leader's %s", z)
				}
			}
			if old.LogStartOffset() > max(oldStart, end) {
				t.Errorf("the deposed leader trimmed its log to %d by an upload it could not register (uploaded end %d)", old.LogStartOffset(), end)
			}
			// The new leader's bytes are served, not the deposed one's.
			data := readOnce(t, m2, tp, appended, 1000)
			if len(data) == 0 || !bytes.Contains(data, bytes.Repeat([]byte{0xAA}, 100)) || bytes.Contains(data, bytes.Repeat([]byte{0xEE}, 100)) {
				t.Errorf("remote read at %d: %d bytes, not the new leader's records", appended, len(data))
			}
			// The next pass of the new leader removes the deposed one's
			// files (grace 0), and only those.
			lead(m2, cur, 6)
			left := remoteFiles(t, fs, dir)
			for _, z := range zombie {
				if _, ok := left[z]; ok {
					t.Errorf("the deposed leader's %s was not removed", z)
				}
			}
			for name := range named {
				if _, ok := left[name]; !ok {
					t.Errorf("a named file, %s, was removed", name)
				}
			}
		})
	}
}

// appendBatches appends n batches of two 100-byte records of value v.
func appendBatches(t *testing.T, l *log.Log, v byte, n int) {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for range n {
		b, err := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{v}, 100)}, record.KV{Value: bytes.Repeat([]byte{v}, 100)}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// remoteFiles are the segment files of a partition's remote directory,
// with their sizes.
func remoteFiles(t *testing.T, fs fsys.FS, dir string) map[string]int64 {
	t.Helper()
	ents, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		if !e.IsDir() {
			out[e.Name()] = e.Size()
		}
	}
	return out
}
