package tail

import (
	"slices"
	"time"
)

// due reports whether a file that left the globs has been quiet for
// RotateWait: its writer has moved on to the new file.
func (t *Tailer) due(f *file, now time.Time) bool {
	last := f.gone
	if f.grown.After(last) {
		last = f.grown
	}
	return now.Sub(last) >= t.cfg.RotateWait
}

// reap closes the files that left the globs once they were read to their
// end, everything acknowledged and quiet for RotateWait; their positions
// go with them.
func (t *Tailer) reap() {
	now := time.Now()
	for _, in := range t.inputs {
		for _, f := range slices.Clone(in.order) {
			if f.gone.IsZero() || !f.atEnd() || f.sp.partial() || f.acked < f.sp.pos || !t.due(f, now) {
				continue
			}
			t.cfg.Logger.Info("tracker/tail: done with a rotated file", "input", in.Name, "file", f.path, "bytes", f.acked)
			t.drop(f)
		}
	}
}

func (t *Tailer) drop(f *file) {
	in := f.in
	f.f.Close()
	delete(in.files, f.key())
	in.order = slices.DeleteFunc(in.order, func(g *file) bool { return g == f })
	t.m.position.DeleteLabelValues(in.Name, f.path)
	t.m.lag.DeleteLabelValues(in.Name, f.path)
	t.dirty = true
}
