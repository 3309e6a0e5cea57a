package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// chromium is Debian's chromium ($TRIBUTARY_CHROMIUM overrides), as
// tracker/e2e finds it; missing, the test is skipped, and fails under CI.
func chromium(t *testing.T) string {
	var p string
	var err error
	if env := os.Getenv("TRIBUTARY_CHROMIUM"); env != "" {
		p, err = exec.LookPath(env)
	} else {
		for _, n := range []string{"chromium", "chromium-browser"} {
			if p, err = exec.LookPath(n); err == nil {
				break
			}
		}
	}
	testbroker.Require(t, err == nil, "chromium", "apt-get install chromium (Debian's package), or set TRIBUTARY_CHROMIUM")
	return p
}

// testBrowser uses the console as a person would, in headless Chromium:
// create a topic, produce a message, find it by a search string, delete
// the topic through its confirmation; no page may log a JavaScript error
// or a Content-Security-Policy violation. With TRIBUTARY_SCREENSHOTS=1 it
// writes each page into docs/console/ for docs/console.md.
func testBrowser(t *testing.T, e *env) {
	exe := chromium(t)
	axe := axeSource(t)
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox, // root in CI; the pages are the test's own
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-proxy-server", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var mu sync.Mutex
	var problems []string
	go func() {
		defer wg.Done()
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			t.Logf("browser console: %s", m)
			if m.IsException() || m.Type == "error" || m.Type == "assert" {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	shots := os.Getenv("TRIBUTARY_SCREENSHOTS") != ""
	shot := func(name string) {
		if !shots {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		dir := filepath.Join(testbroker.RepoRoot(), "docs", "console")
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, c := context.WithTimeout(ctx, 20*time.Second)
		defer c()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(what, sel string) string {
		t.Helper()
		sctx, c := context.WithTimeout(ctx, 20*time.Second)
		defer c()
		s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return s
	}
	// submit clicks a submit button and waits for the page the form's
	// answer loads: the old document is marked, and the new one has no mark.
	submit := func(what, button string) chromedp.Action[chromedp.Void] {
		return newPage(chromedp.Click(chromedp.CSS(button)))
	}
	base := strings.Replace(e.rw.URL, "127.0.0.1", "localhost", 1)
	// a11y runs axe-core on the page shown: serious and critical
	// violations fail the test.
	checked := map[string]bool{}
	a11y := func(name string) {
		t.Helper()
		checked[name] = true
		vs, err := axeCheck(ctx, axe)
		if err != nil {
			t.Fatalf("axe on %s: %v", name, err)
		}
		for _, v := range vs {
			t.Errorf("accessibility of the %s page: %s", name, v)
		}
	}

	// The checker can fail: a page with an unlabelled field and an image
	// without text has serious or critical violations.
	do("a bad page", chromedp.Navigate(`data:text/html,<!doctype html><html lang="en"><title>x</title><main><h1>x</h1><input id="u"><img src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"></main></html>`))
	if vs, err := axeCheck(ctx, axe); err != nil || len(vs) < 2 {
		t.Fatalf("axe-core on a page with two violations: %v %q", err, vs)
	}

	do("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")))
	shot("overview")
	a11y("overview")

	do("create a topic",
		chromedp.Navigate(base+"/topics"),
		chromedp.SendKeys(chromedp.CSS("#new-name"), "web-events"),
		chromedp.SendKeys(chromedp.CSS("#new-partitions"), "2"),
		submit("create", "#create-topic button[type=submit]"),
		chromedp.WaitVisible(chromedp.CSS("#topic-name")),
	)
	if got := text("flash", "p.flash"); got != "created topic web-events" {
		t.Fatalf("after create: flash %q", got)
	}
	if e.partitions(t, "web-events") != 2 {
		t.Fatal("the topic the browser created is not on the broker with 2 partitions")
	}

	needle := "ada-" + time.Now().Format("150405.000")
	do("produce",
		submit("browse", "#browse"),
		chromedp.WaitVisible(chromedp.CSS("#produce")),
		chromedp.SendKeys(chromedp.CSS("#p-key"), "user-1"),
		chromedp.SendKeys(chromedp.CSS("#p-value"), `{"event":"Signed Up","user":"`+needle+`"}`),
		chromedp.SendKeys(chromedp.CSS("#p-headers"), "source: browser"),
		submit("produce", "#produce button[type=submit]"),
		chromedp.WaitVisible(chromedp.CSS("p.flash")),
	)
	// Another message, so that the search has something to leave out.
	do("produce another",
		chromedp.SendKeys(chromedp.CSS("#p-value"), `{"event":"Page Viewed","user":"bob"}`),
		submit("produce", "#produce button[type=submit]"),
		chromedp.WaitVisible(chromedp.CSS("p.flash")),
	)
	do("search",
		chromedp.Navigate(base+"/topics/web-events/messages"),
		chromedp.WaitVisible(chromedp.CSS("#b-search")),
		chromedp.SendKeys(chromedp.CSS("#b-search"), strings.ToUpper(needle)),
		newPage(chromedp.Submit(chromedp.CSS("#b-search"))),
	)
	rows := text("results", "#messages tbody")
	if !strings.Contains(rows, needle) || strings.Contains(rows, "bob") || !strings.Contains(rows, "source") {
		t.Fatalf("search for %s found:\n%s", needle, rows)
	}
	if !strings.Contains(text("summary", "#summary"), "1 message matching") {
		t.Fatalf("summary: %s", text("summary", "#summary"))
	}
	shot("messages")
	a11y("messages")

	// An event sent through the real tracker, found in the browser by
	// its user id in clicks (the tracker's topic).
	tracked := "tracked-" + time.Now().Format("150405.000")
	if code := track(t, e.tracker, `{"writeKey":"`+trackerWriteKey+`","type":"track","event":"Order Completed","userId":"`+tracked+`","properties":{"total":12.5}}`); code != 200 {
		t.Fatalf("tracker answered %d", code)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		do("search clicks", chromedp.Navigate(base+"/topics/clicks/messages?q="+tracked), chromedp.WaitVisible(chromedp.CSS("#summary")))
		if strings.Contains(text("results", "#messages tbody"), tracked) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event sent through the tracker is not in clicks after 60 s")
		}
	}

	// A group that read nothing yet, for the groups pages.
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "web-events", Partition: 0, At: 0, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "web-events", Partition: 1, At: 0, LeaderEpoch: -1})
	if rs, err := e.adm.CommitOffsets(ctx, "web-readers", commit); err != nil || rs.Error() != nil {
		t.Fatalf("commit: %v %v", err, rs.Error())
	}
	do("groups", chromedp.Navigate(base+"/groups"), chromedp.WaitVisible(chromedp.CSS("#groups")))
	shot("groups")
	a11y("groups")
	do("group", chromedp.Navigate(base+"/groups/web-readers?to=latest"), chromedp.WaitVisible(chromedp.CSS("#reset-apply")))
	if got := text("lag", "#group-lag"); got != "2" {
		t.Errorf("web-readers' lag: %s, want 2", got)
	}
	shot("group")
	a11y("group")
	do("reset", submit("reset", "#reset-apply button"), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if got := text("lag", "#group-lag"); got != "0" {
		t.Errorf("web-readers' lag after a reset to latest: %s, want 0", got)
	}

	// Watch lag fall: two more messages, the page refreshing itself, and a
	// real consumer of the group reading and committing them.
	for i := range 2 {
		if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: "web-events", Value: []byte(fmt.Sprintf(`{"n":%d}`, i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	do("group with lag", chromedp.Navigate(base+"/groups/web-readers"), chromedp.WaitVisible(chromedp.CSS("#group-lag")))
	if got := text("lag", "#group-lag"); got != "2" {
		t.Errorf("web-readers' lag after 2 more messages: %s, want 2", got)
	}
	do("refresh", chromedp.Click(chromedp.CSS("input[data-refresh]")))
	reader, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.ConsumerGroup("web-readers"), kgo.ConsumeTopics("web-events"),
		kgo.AutoCommitInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	readCtx, stopReading := context.WithCancel(ctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for readCtx.Err() == nil {
			reader.PollFetches(readCtx)
		}
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		lag, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById('group-lag') || {}).textContent || ''`))
		if err == nil && lag == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web-readers' lag on the self-refreshing page is %q 60 s after its consumer started, want 0", lag)
		}
	}
	stopReading()
	<-readDone
	reader.Close()

	do("jobs", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")),
		newPage(chromedp.Click(chromedp.CSS(`#jobs a[href="/jobs/clicks-lake"]`))),
		submit("trigger", "#job-trigger button"))
	if got := text("flash", "p.flash"); !strings.HasPrefix(got, "triggered job clicks-lake") {
		t.Fatalf("after Run now: flash %q", got)
	}
	shot("job")
	a11y("job")

	// The load the trigger started, on the Pipeline page: its run
	// committed with the files it wrote (the tracked event among them).
	var firstRun string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		do("pipeline", chromedp.Navigate(base+"/pipeline"), chromedp.WaitVisible(chromedp.CSS("#lake-runs")))
		st, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const r = document.querySelector('#lake-runs tbody tr'); return r ? r.cells[3].textContent + '|' + r.cells[8].textContent + '|' + r.querySelector('a').getAttribute('href') : '' })()`))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(st, "|")
		if len(parts) == 3 && strings.HasPrefix(parts[0], "committed") && parts[1] != "" && parts[1] != "0" {
			firstRun = parts[2]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the newest run on the Pipeline page is not committed with files 60 s after the trigger: %q", st)
		}
	}
	shot("pipeline")
	a11y("pipeline")
	do("run", newPage(chromedp.Click(chromedp.CSS(`#lake-runs a[href="`+firstRun+`"]`))), chromedp.WaitVisible(chromedp.CSS("#run-files")))
	if files := text("files", "#run-files tbody"); !strings.Contains(files, ".parquet") || !strings.Contains(files, "clicks/dt=") {
		t.Fatalf("the run's page lists no Parquet file:\n%s", files)
	}
	shot("run")
	a11y("run")
	do("bad records", chromedp.Navigate(base+"/pipeline"), chromedp.WaitVisible(chromedp.CSS("#lake-errors")),
		newPage(chromedp.Click(chromedp.CSS(`#lake-errors tbody a`))), chromedp.WaitVisible(chromedp.CSS("#error-lines")))
	a11y("bad records")

	do("users", chromedp.Navigate(base+"/users"), chromedp.WaitVisible(chromedp.CSS("#users")))
	a11y("users")

	do("schemas", chromedp.Navigate(base+"/schemas"), chromedp.WaitVisible(chromedp.CSS("#subjects")))
	shot("schemas")
	a11y("schemas")

	do("topic page", chromedp.Navigate(base+"/topics/web-events"), chromedp.WaitVisible(chromedp.CSS("#delete-topic")))
	shot("topic")
	a11y("topic")
	disabled := func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#delete-topic button').disabled`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !disabled() {
		t.Fatal("the delete button is enabled before the topic's name is typed")
	}
	do("type a wrong name", chromedp.SendKeys(chromedp.CSS("#confirm"), "web-event"))
	if !disabled() {
		t.Fatal("the delete button is enabled for a name that is not the topic's")
	}
	do("delete", chromedp.SendKeys(chromedp.CSS("#confirm"), "s"),
		submit("delete", "#delete-topic button"),
		chromedp.WaitVisible(chromedp.CSS("#topics")))
	if got := text("flash", "p.flash"); got != "deleted topic web-events" {
		t.Fatalf("after delete: flash %q", got)
	}
	do("topics", chromedp.Navigate(base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	shot("topics")
	a11y("topics")
	do("jobs list", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
	a11y("jobs")

	// Messages arrive asynchronously: give the console stream a moment
	// by loading one more page, then look.
	do("last page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")))
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}

// newPage runs a, which makes the tab load another page, and waits for
// that page: the old document is marked, and the new one has no mark. (A
// Poll would be cut short by the navigation.)
func newPage(a chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[bool](`window.__before = true`)(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		if _, err := a(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		for {
			loaded, err := chromedp.Evaluate[bool](`window.__before !== true && document.readyState === 'complete'`)(ctx, t)
			if err == nil && loaded {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("no new page: %w (last: %v)", ctx.Err(), err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
