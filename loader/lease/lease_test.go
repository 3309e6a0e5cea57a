package lease

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

func leaseFS(t *testing.T) fsys.FS {
	fs, err := fsys.Open("file://"+t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func conf(owner string, ttl time.Duration) Config {
	return Config{TTL: ttl, Owner: owner}
}

func TestLeaseExclusiveAndReleased(t *testing.T) {
	fs := leaseFS(t)
	a, err := Acquire(fs, "j", "run-a", conf("a", 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(fs, "j", "run-b", conf("b", 30*time.Second))
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Holder.Owner != "a" || busy.Holder.Run != "run-a" {
		t.Fatalf("second acquire: %v, want busy, held by a", err)
	}
	if err := a.Check(nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if a.Check(nil) == nil {
		t.Fatal("a released lease still checks")
	}
	b, err := Acquire(fs, "j", "run-b", conf("b", 30*time.Second))
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	defer b.Release()
	if b.Info().Generation != 2 || !b.Previous.Released || b.Previous.Owner != "a" {
		t.Fatalf("b holds %+v after %+v", b.Info(), b.Previous)
	}
	if gens, _ := listGenerations(fs, Dir("j")); len(gens) != 1 || gens[0] != 2 {
		t.Fatalf("generations left: %v (older ones are removed by the new holder)", gens)
	}
}

// A holder that stops renewing (it died, or is cut off) loses the lease by
// its own clock, and exactly one of many takers gets it after the expiry.
func TestLeaseTakeoverAfterExpiry(t *testing.T) {
	fs := leaseFS(t)
	ttl := 3 * time.Second
	a, err := Acquire(fs, "j", "run-a", conf("a", ttl))
	if err != nil {
		t.Fatal(err)
	}
	close(a.stop) // a hangs: no more renewals, no release
	<-a.stopped
	if _, err := Acquire(fs, "j", "x", conf("early", ttl)); !errors.Is(err, ErrBusy) {
		t.Fatalf("taken before the expiry: %v", err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if err := a.Check(nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the holder still trusts its expired lease: %v", err)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []*Lease
	)
	for i := range 8 {
		wg.Go(func() {
			l, err := Acquire(fs, "j", "run", conf(string(rune('b'+i)), ttl))
			if err == nil {
				mu.Lock()
				winners = append(winners, l)
				mu.Unlock()
			} else if !errors.Is(err, ErrBusy) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d takers won the lease", len(winners))
	}
	w := winners[0]
	defer w.Release()
	if w.Previous.Owner != "a" || w.Previous.Released || w.Previous.Run != "run-a" {
		t.Fatalf("the winner took over from %+v", w.Previous)
	}
}

// A holder whose lease was taken over finds out at its next renewal and
// stops.
func TestLeaseRenewalSeesTakeover(t *testing.T) {
	fs := leaseFS(t)
	ttl := 3 * time.Second
	a, err := Acquire(fs, "j", "run-a", conf("a", ttl))
	if err != nil {
		t.Fatal(err)
	}
	// Renewals keep it past its TTL.
	time.Sleep(ttl + 500*time.Millisecond)
	if err := a.Check(nil); err != nil {
		t.Fatalf("a renewed lease: %v", err)
	}
	w, _ := fs.Create(genPath(Dir("j"), 2)) // a taker that (wrongly) believed it expired
	w.Write([]byte(`{"job":"j","generation":2,"owner":"z"}`))
	w.Close()
	// It finds out at its next renewal, a second away on an idle
	// machine; until then its own clock keeps it safe. The bound only
	// detects a holder that never looks.
	seen := time.Now()
	select {
	case <-a.Done():
		t.Logf("the holder saw the takeover after %v", time.Since(seen).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the holder did not see the takeover in 30 s")
	}
	if err := a.Check(nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("check after takeover: %v", err)
	}
	a.Release()
	if b, _ := readLease(fs, Dir("j"), 2, ttl); b.Owner != "z" {
		t.Fatalf("the release of a lost lease touched the new one: %+v", b)
	}
}

// A generation file still being written (empty on HDFS until closed) is
// held until its modification time plus the TTL.
func TestLeaseBeingWritten(t *testing.T) {
	fs := leaseFS(t)
	w, _ := fs.Create(genPath(Dir("j"), 1))
	w.Close()
	if _, err := Acquire(fs, "j", "r", conf("b", 30*time.Second)); !errors.Is(err, ErrBusy) {
		t.Fatalf("acquire over an empty generation file: %v", err)
	}
}

// The plan a holder names stays in its file across renewals, and a busy
// message names the holder: host, pid, run, plan and since when.
func TestLeaseNamesPlanAcrossRenewals(t *testing.T) {
	fs := leaseFS(t)
	ttl := 3 * time.Second
	a, err := Acquire(fs, "j", "run-a", conf("a", ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if err := a.SetPlan("j-plan-1"); err != nil {
		t.Fatal(err)
	}
	// Wait for a renewal (every ttl/3) rather than sleep past one: a
	// loaded machine can delay it.
	var info Info
	var live bool
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, live, err = Current(fs, "j", ttl, 0)
		if err == nil && info.Renewed.After(info.Acquired) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no renewal in 30 s: %+v, %v", info, err)
		}
	}
	if !live || info.Plan != "j-plan-1" {
		t.Fatalf("after a renewal: %+v, live %v, %v", info, live, err)
	}
	if err := Worker(fs, "j", "j-plan-1", ttl, 0); err != nil {
		t.Fatalf("a worker of the holder's plan: %v", err)
	}
	err = Worker(fs, "j", "j-plan-0", ttl, 0)
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrNotPlanHolder) {
		t.Fatalf("a worker of another plan: %v", err)
	}
	host, _ := os.Hostname()
	for _, want := range []string{"host " + host, fmt.Sprintf("pid %d", os.Getpid()), "run run-a", "plan j-plan-1", "since "} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	a.Release()
	if err := Worker(fs, "j", "j-plan-0", ttl, 0); err != nil {
		t.Fatalf("a worker while nobody holds the job: %v", err)
	}
}

// vanishingFS removes each file it creates as soon as it is written, as a
// concurrent removal of the job's files (or a store whose listing lags)
// would leave it: the listing after the create finds nothing.
type vanishingFS struct{ fsys.FS }

func (v vanishingFS) Create(name string) (io.WriteCloser, error) {
	w, err := v.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return vanishingFile{w, v.FS, name}, nil
}

type vanishingFile struct {
	io.WriteCloser
	fs   fsys.FS
	name string
}

func (f vanishingFile) Close() error {
	err := f.WriteCloser.Close()
	f.fs.RemoveAll(f.name)
	return err
}

// A lease whose file is gone before Acquire lists the generations is not
// taken, and Acquire says so instead of crashing.
func TestLeaseFileGoneAfterCreate(t *testing.T) {
	fs := vanishingFS{leaseFS(t)}
	l, err := Acquire(fs, "j", "run-a", conf("a", 30*time.Second))
	if err == nil {
		l.Release()
		t.Fatal("acquired a lease whose file is gone")
	}
	if !strings.Contains(err.Error(), "gone right after it was created") {
		t.Fatalf("acquire: %v", err)
	}
}
