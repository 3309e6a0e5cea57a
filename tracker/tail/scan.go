package tail

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// candidate is a regular file a glob found.
type candidate struct {
	path string
	ino  uint64
}

// scan evaluates the globs: files already followed are matched by inode
// (a rename within the globs only changes their path), new ones are opened
// at the position their identity earns them (see open), and followed files
// no glob finds any more are marked gone.
func (t *Tailer) scan() {
	now := time.Now()
	first := !t.scanned
	t.scanned, t.lastScan = true, now
	// Truncations first: a new file that is a copy of truncated content
	// must find its ghost. (Polled only in fill, a file truncated after
	// the last fill would look untruncated here, and its copy, held back
	// by the previous scan, would be taken for a new file.)
	for _, in := range t.inputs {
		for _, f := range in.order {
			t.poll(f, now)
		}
	}
	seen := map[*file]bool{}
	held := map[*input]map[string]bool{}
	for _, in := range t.inputs {
		held[in], in.held = in.held, map[string]bool{}
	}
	var fresh []*input
	var freshC []candidate
	for _, in := range t.inputs {
		for _, c := range t.glob(in) {
			if f := in.files[fileKey(c.ino, c.path)]; f != nil {
				seen[f] = true
				if f.path != c.path {
					t.logf(in, "file renamed within the globs: %s -> %s", f.path, c.path)
					t.m.position.DeleteLabelValues(in.Name, f.path)
					t.m.lag.DeleteLabelValues(in.Name, f.path)
					f.path = c.path
					t.dirty = true
				}
				continue
			}
			// Files whose inode the positions file knows go first, so that
			// on the first scan the entries left over are known to be
			// gone before another file could be taken for their copy.
			if first && t.knownInode(in, c) {
				if f := t.open(in, c, held[in], now); f != nil {
					seen[f] = true
				}
				continue
			}
			fresh, freshC = append(fresh, in), append(freshC, c)
		}
	}
	if first {
		t.adoptOrphans(now)
	}
	for i, c := range freshC {
		if f := t.open(fresh[i], c, held[fresh[i]], now); f != nil {
			seen[f] = true
		}
	}
	for _, in := range t.inputs {
		for _, f := range in.order {
			switch {
			case seen[f]:
				f.gone = time.Time{}
			case f.gone.IsZero():
				f.gone = now
				t.m.rotations.WithLabelValues(in.Name, rotateRename).Inc()
				t.logf(in, "file left the globs (renamed or deleted), reading it to its end: %s", f.path)
			}
		}
	}
	t.ghosts = slices.DeleteFunc(t.ghosts, func(g position) bool {
		return now.Sub(time.UnixMilli(g.Orphaned)) > defaultGhostLifetime
	})
}

// glob is the regular files the input's patterns find, each inode once.
func (t *Tailer) glob(in *input) []candidate {
	var out []candidate
	have := map[string]bool{}
	for _, pat := range in.Paths {
		paths, _ := filepath.Glob(pat) // the pattern was checked by Validate
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			c := candidate{path: p, ino: inode(fi)}
			if k := fileKey(c.ino, c.path); !have[k] {
				have[k] = true
				out = append(out, c)
			}
		}
	}
	return out
}

func (t *Tailer) knownInode(in *input, c candidate) bool {
	return t.knownIndex(in, c.ino, c.path) >= 0
}

// open starts following a file the globs found and no followed file is.
// Its position is decided by its identity, inode plus fingerprint:
//
//  1. the positions file has its inode and the fingerprint still matches
//     the first bytes: the same file, continued at the saved offset (if it
//     is shorter than that, it was truncated: from 0);
//  2. the positions file has its inode but other first bytes: the inode
//     was reused, or the file rewritten: from 0;
//  3. its full fingerprint is that of truncated content (a ghost): it is
//     copytruncate's copy, continued where the original was;
//  4. it is empty, or its first bytes are the start of a followed file's
//     or of a ghost's: copytruncate may be writing the copy, or be between
//     the copy and the truncate, so it is held back one scan (wasHeld
//     lists the files held by the previous one); then, if no ghost matches,
//     from 0;
//  5. otherwise it is new: from 0, or from its end on the tailer's very
//     first start with start_at: end.
//
// It returns nil when the file is not followed (yet).
func (t *Tailer) open(in *input, c candidate, wasHeld map[string]bool, now time.Time) *file {
	fh, err := os.Open(c.path)
	if err != nil {
		t.m.errors.WithLabelValues(in.Name, ReasonRead).Inc()
		t.cfg.Logger.Warn("tracker/tail: opening", "file", c.path, "err", err)
		return nil
	}
	fi, err := fh.Stat()
	if err != nil || inode(fi) != c.ino {
		fh.Close() // replaced between the glob and the open: next scan
		return nil
	}
	size := fi.Size()
	fp, err := readFingerprint(fh, size, t.cfg.FingerprintBytes)
	if err != nil {
		fh.Close()
		t.m.errors.WithLabelValues(in.Name, ReasonRead).Inc()
		return nil
	}
	key := fileKey(c.ino, c.path)
	var off int64
	how := "new file, from its beginning"
	if i := t.knownIndex(in, c.ino, c.path); i >= 0 {
		e := t.known[i]
		t.known = slices.Delete(t.known, i, i+1)
		same, _ := e.fingerprint().matches(fh, size)
		switch {
		case same && size >= e.Offset:
			off, how = e.Offset, "continuing at the saved position"
		case same:
			how = "truncated while the tailer was away, from its beginning"
			t.m.rotations.WithLabelValues(in.Name, rotateTruncate).Inc()
			t.orphan(e, now)
		default:
			how = "inode reused or file rewritten, from its beginning"
			t.orphan(e, now)
		}
	} else if g := t.ghostIndex(in, fp); g >= 0 {
		e := t.ghosts[g]
		t.ghosts = slices.Delete(t.ghosts, g, g+1)
		off = e.Offset
		if off > size { // we read more of the original than was copied
			off = lineStartBefore(fh, size, t.cfg.MaxLineBytes)
		}
		how = "a copy of truncated content (copytruncate), continuing where the original was"
		t.m.rotations.WithLabelValues(in.Name, rotateCopy).Inc()
	} else if !wasHeld[key] && t.maybeCopy(in, fp) {
		in.held[key] = true
		fh.Close()
		return nil
	} else if !t.found && in.StartAt == StartEnd {
		off, how = lineStartBefore(fh, size, t.cfg.MaxLineBytes), "first start with start_at end, from its last line"
	}
	f := &file{in: in, path: c.path, f: fh, inode: c.ino, fp: fp, sp: newSplitter(t.cfg.MaxLineBytes, off),
		acked: off, size: size, grown: now}
	in.files[key] = f
	in.order = append(in.order, f)
	t.dirty = true
	t.logf(in, "following %s (%s, offset %d of %d)", c.path, how, off, size)
	return f
}

func (t *Tailer) knownIndex(in *input, ino uint64, path string) int {
	return slices.IndexFunc(t.known, func(e position) bool {
		return e.Input == in.Name && (e.Inode == ino && ino != 0 || ino == 0 && e.Path == path)
	})
}

// ghostIndex finds truncated content with fp as its full fingerprint.
func (t *Tailer) ghostIndex(in *input, fp fingerprint) int {
	if !fp.full(t.cfg.FingerprintBytes) {
		return -1
	}
	return slices.IndexFunc(t.ghosts, func(g position) bool {
		return g.Input == in.Name && fp.equal(g.fingerprint())
	})
}

// maybeCopy reports whether a new file may be a copy still being made.
func (t *Tailer) maybeCopy(in *input, fp fingerprint) bool {
	if fp.n == 0 {
		return true
	}
	return slices.ContainsFunc(in.order, func(f *file) bool { return fp.prefixOf(f.fp) }) ||
		slices.ContainsFunc(t.ghosts, func(g position) bool { return g.Input == in.Name && fp.prefixOf(g.fingerprint()) })
}

// orphan keeps content whose inode lost it as a ghost, for its copy.
func (t *Tailer) orphan(e position, now time.Time) {
	if e.Offset == 0 || !e.fingerprint().full(t.cfg.FingerprintBytes) {
		return // nothing sent yet, or too short to recognise a copy by
	}
	if slices.ContainsFunc(t.ghosts, func(g position) bool { return g.Input == e.Input && g.FP == e.FP && g.Inode == e.Inode }) {
		return
	}
	e.Orphaned = now.UnixMilli()
	t.ghosts = append(t.ghosts, e)
	t.dirty = true
}

// adoptOrphans runs after the first scan's known inodes: a file of the
// positions file that no glob finds any more was most likely rotated by
// rename while the tailer was down. It is looked for by inode in its
// directory and read to its end; otherwise its content becomes a ghost.
func (t *Tailer) adoptOrphans(now time.Time) {
	known := t.known
	t.known = nil
	for _, e := range known {
		in := t.input(e.Input)
		if t.findRenamed(in, e, now) == nil {
			t.orphan(e, now)
		}
	}
	t.dirty = true
}

// findRenamed opens the file of e in e's directory by its inode.
func (t *Tailer) findRenamed(in *input, e position, now time.Time) *file {
	if e.Inode == 0 {
		return nil
	}
	dir := filepath.Dir(e.Path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, de := range ents {
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() || inode(fi) != e.Inode {
			continue
		}
		t.known = append(t.known, e)
		f := t.open(in, candidate{path: filepath.Join(dir, de.Name()), ino: e.Inode}, nil, now)
		if f == nil || f.acked != e.Offset {
			// Not the same content after all: the open made it a new file
			// at 0 and a ghost of e; a file outside the globs is not ours.
			if f != nil {
				t.drop(f)
			}
			return nil
		}
		f.gone = now
		t.m.rotations.WithLabelValues(in.Name, rotateRename).Inc()
		t.logf(in, "file rotated away while the tailer was down, reading it to its end: %s (was %s)", f.path, e.Path)
		return f
	}
	return nil
}

// poll stats a followed file and detects truncation: the file is shorter
// than what was read, or its first bytes changed (truncated and written
// again faster than a poll). The content read so far becomes a ghost and
// the file is read from 0.
func (t *Tailer) poll(f *file, now time.Time) {
	fi, err := f.f.Stat()
	if err != nil {
		t.m.errors.WithLabelValues(f.in.Name, ReasonRead).Inc()
		return
	}
	size := fi.Size()
	if size == f.size && f.fp.full(t.cfg.FingerprintBytes) {
		return
	}
	truncated := size < f.sp.pos
	if !truncated {
		same, err := f.fp.matches(f.f, size)
		if err != nil {
			t.m.errors.WithLabelValues(f.in.Name, ReasonRead).Inc()
			return
		}
		truncated = !same
	}
	if truncated {
		// Every line before sp.start was acknowledged (fill polls a file
		// before reading it into a batch), so that is where a copy of the
		// old content continues.
		g := f.position()
		g.Offset = f.sp.start
		t.orphan(g, now)
		t.m.rotations.WithLabelValues(f.in.Name, rotateTruncate).Inc()
		t.logf(f.in, "file truncated (copytruncate?), reading it from its beginning: %s at %d, now %d bytes", f.path, f.sp.pos, size)
		f.sp.reset(0)
		f.acked = 0
		f.fp = fingerprint{}
		t.dirty = true
	}
	if truncated || f.fp.n < t.cfg.FingerprintBytes && size > int64(f.fp.n) {
		if fp, err := readFingerprint(f.f, size, t.cfg.FingerprintBytes); err == nil {
			f.fp = fp
			t.dirty = true
		}
	}
	if size > f.size || truncated {
		f.grown = now
	}
	f.size = size
}
