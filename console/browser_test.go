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

	do("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")))
	shot("overview")

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

	// A group that read nothing yet, for the groups pages.
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "web-events", Partition: 0, At: 0, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "web-events", Partition: 1, At: 0, LeaderEpoch: -1})
	if rs, err := e.adm.CommitOffsets(ctx, "web-readers", commit); err != nil || rs.Error() != nil {
		t.Fatalf("commit: %v %v", err, rs.Error())
	}
	do("groups", chromedp.Navigate(base+"/groups"), chromedp.WaitVisible(chromedp.CSS("#groups")))
	shot("groups")
	do("group", chromedp.Navigate(base+"/groups/web-readers?to=latest"), chromedp.WaitVisible(chromedp.CSS("#reset-apply")))
	if got := text("lag", "#group-lag"); got != "2" {
		t.Errorf("web-readers' lag: %s, want 2", got)
	}
	shot("group")
	do("reset", submit("reset", "#reset-apply button"), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if got := text("lag", "#group-lag"); got != "0" {
		t.Errorf("web-readers' lag after a reset to latest: %s, want 0", got)
	}

	do("jobs", chromedp.Navigate(base+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")),
		newPage(chromedp.Click(chromedp.CSS(`#jobs a[href="/jobs/clicks-lake"]`))),
		submit("trigger", "#job-trigger button"))
	if got := text("flash", "p.flash"); !strings.HasPrefix(got, "triggered job clicks-lake") {
		t.Fatalf("after Run now: flash %q", got)
	}
	shot("job")

	do("schemas", chromedp.Navigate(base+"/schemas"), chromedp.WaitVisible(chromedp.CSS("#subjects")))
	shot("schemas")

	do("topic page", chromedp.Navigate(base+"/topics/web-events"), chromedp.WaitVisible(chromedp.CSS("#delete-topic")))
	shot("topic")
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
