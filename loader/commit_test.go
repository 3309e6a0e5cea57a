package loader

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// A load plan made from offsets that another run has committed since (two
// holders of one job, one frozen past its lease) commits nothing: no file
// moved, the offsets not moved back, its plan closed with 0 records that
// names the run that did the work. A plan that starts where the state is
// commits as usual.
func TestSupersededPlanCommitsNothing(t *testing.T) {
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &Loader{FS: fs}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	stale := &Plan{Version: PlanVersion, Run: newRunID("j", now), Job: "j", Kind: "load", Created: now,
		Units: []Unit{{Index: 0, Topic: "t", Partition: 0, From: 100, To: 200}},
		Next:  map[string]map[int32]int64{"t": {0: 200, 1: 50}}}
	if err := stale.save(l); err != nil {
		t.Fatal(err)
	}
	// A unit result with a staged file, as a worker leaves it.
	staged := unitDir(stale.Run, 0) + "/a1/t+0+100+199.parquet"
	if err := fs.WriteFileAtomic(staged, []byte("x")); err != nil {
		t.Fatal(err)
	}
	final := "t/dt=2026-12-01/hr=11/t+0+100+199.parquet"
	done := `{"unit":0,"attempt":"a1","records":100,"rows":100,"files":[{"path":"` + final + `","staged":"` + staged + `","rows":100}]}`
	if err := fs.WriteFileAtomic(unitDone(stale.Run, 0, "a1"), []byte(done)); err != nil {
		t.Fatal(err)
	}

	// Another run committed partition 0 up to 250 since.
	other := newRunID("j", now.Add(time.Second))
	if err := writeState(fs, &State{Version: 1, Job: "j", Run: other, Offsets: map[string]map[int32]int64{"t": {0: 250, 1: 50}}}); err != nil {
		t.Fatal(err)
	}
	m, err := l.Complete(context.Background(), stale, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Superseded != other || m.Records != 0 || len(m.Files) != 0 {
		t.Fatalf("the stale plan's manifest: %+v", m)
	}
	if _, err := fs.Stat(final); err == nil {
		t.Fatal("the stale plan moved its file into the lake")
	}
	st, _ := ReadState(fs, "j")
	if st.Run != other || st.Offsets["t"][0] != 250 {
		t.Fatalf("the stale plan changed the state: %+v", st)
	}
	if open, err := l.OpenPlan("j"); err != nil || open != nil {
		t.Fatalf("the stale plan is still open (%v)", err)
	}
	if _, err := fs.Stat(stagingRun(stale.Run)); err == nil {
		t.Fatal("the stale plan's staging is left")
	}

	// The same plan against the state it was made from is not superseded.
	if by, s := stale.superseded(&State{Offsets: map[string]map[int32]int64{"t": {0: 100, 1: 50}}}); s {
		t.Fatalf("a plan from the committed offsets is superseded by %q", by)
	}
	if _, s := stale.superseded(&State{Offsets: map[string]map[int32]int64{}}); s {
		t.Fatal("a first plan is superseded by an empty state")
	}
	if _, s := stale.superseded(&State{Offsets: map[string]map[int32]int64{"t": {0: 100, 1: 60}}}); !s {
		t.Fatal("a plan is not superseded although a partition without units moved")
	}
}
