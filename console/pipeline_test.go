package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/tracker/collect"
	"github.com/tributary-io/tributary/tracker/validate"
)

var statRE = func(id string) *regexp.Regexp { return regexp.MustCompile(`id="` + id + `">([0-9.]+)<`) }

func stat(body, id string) float64 {
	m := statRE(id).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// testPipeline follows events from a real tracker to the lake on the
// Pipeline page: the tracker's counters, a refused event with its reason
// from clicks.bad, a load run triggered through the console with the
// Parquet files it wrote, the lake's event hours, and a bad record in
// _errors.
func testPipeline(t *testing.T, e *env, b *browserish) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	needle := fmt.Sprintf("pipe-%d", time.Now().UnixNano())
	for i := range 3 {
		ev := fmt.Sprintf(`{"writeKey":%q,"type":"track","event":"Signed Up","userId":%q,"messageId":"%s-%d","properties":{"plan":"pro"}}`, trackerWriteKey, needle, needle, i)
		if code := track(t, e.tracker, ev); code != http.StatusOK {
			t.Fatalf("tracker answered %d to a good event", code)
		}
	}
	track(t, e.tracker, `{"writeKey":"`+trackerWriteKey+`","type":"track",`) // malformed: rejected

	var body string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, body = b.get("/pipeline")
		if stat(body, "t-accepted") >= 3 && stat(body, "t-rejected") >= 1 && stat(body, "t-delivered") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Pipeline page does not show 3 accepted, 1 rejected and 3 delivered events:\n%s", body)
		}
	}
	mustContain(t, "tracker", body, "malformed_json", `id="chart-accepted"`, "<svg", `id="chart-spooled"`)

	// A refused event as the tracker writes it (collect.BadEvent).
	bad, _ := json.Marshal(collect.BadEvent{Source: "web", Topic: "clicks", Code: "registry_schema", MessageID: "m-bad",
		ReceivedAt: json.RawMessage(`"2026-01-01T00:00:00Z"`),
		Errors:     []validate.Violation{{Path: "/properties/amount", Reason: "expected number, got string " + needle}},
		Payload:    json.RawMessage(`{"event":"Order Completed"}`)})
	if _, err := e.adm.CreateTopic(ctx, 1, 1, nil, "clicks.bad"); err != nil {
		t.Fatal(err)
	}
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks.bad", Value: bad}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A record the load cannot decode: it goes to _errors.
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: []byte("broken-" + needle)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_, body = b.get("/pipeline")
	mustContain(t, "bad events", body, `<a href="/topics/clicks.bad/messages">clicks.bad</a>`, "/properties/amount: expected number, got string "+needle, "registry_schema")

	tok := b.token("/jobs/clicks-lake")
	if code, _, body := b.post("/jobs/clicks-lake/trigger", form("csrf", tok)); code != http.StatusSeeOther {
		t.Fatalf("trigger: %d\n%s", code, body)
	}
	runRE := regexp.MustCompile(`href="/pipeline/runs/([^"]+)"`)
	errRE := regexp.MustCompile(`href="(/pipeline/errors\?file=[^"]+)"`)
	var file string
	var errLinks []string
	for deadline := time.Now().Add(60 * time.Second); file == "" || len(errLinks) == 0; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no run with files and no _errors on the Pipeline page 60 s after the trigger:\n%s", body)
		}
		_, body = b.get("/pipeline")
		errLinks = nil
		for _, m := range errRE.FindAllStringSubmatch(body, -1) {
			errLinks = append(errLinks, strings.ReplaceAll(m[1], "&amp;", "&"))
		}
		for _, m := range runRE.FindAllStringSubmatch(body, -1) {
			_, run := b.get("/pipeline/runs/" + m[1])
			if f := regexp.MustCompile(`<code>(clicks/dt=[^<]+\.parquet)</code>`).FindStringSubmatch(run); f != nil {
				file = html.UnescapeString(f[1])
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.lake, file)); err != nil {
		t.Fatalf("the run page names %s, which is not in the lake: %v", file, err)
	}
	mustContain(t, "lake", body, `id="lake-hours"`, "<td>clicks</td><td><code>clicks/dt=", "committed ")
	found := false
	for _, l := range errLinks {
		code, page := b.get(l)
		if code != 200 {
			t.Fatalf("GET %s: %d\n%s", l, code, page)
		}
		found = found || strings.Contains(page, "broken-"+needle)
	}
	if !found {
		t.Errorf("no _errors file shows the undecodable record broken-%s", needle)
	}
	for _, p := range []string{"/pipeline/errors?file=../../etc/passwd", "/pipeline/errors?file=_errors/../../x/y", "/pipeline/errors?file=_tributary/state/clicks-lake.json"} {
		if code, _ := b.get(p); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", p, code)
		}
	}
	if code, _ := b.get("/pipeline/runs/..%2F..%2Fx"); code != http.StatusBadRequest && code != http.StatusNotFound {
		t.Errorf("a run id leaving the plans: %d", code)
	}
	// The read-only console shows the page too (a GET changes nothing).
	if code, _ := newBrowserish(t, e.ro.URL).get("/pipeline"); code != 200 {
		t.Errorf("read-only /pipeline: %d", code)
	}
}

// testCharts: the overview charts records in from the sampler's ring, and
// a group's page its lag, as inline SVG with a line once two samples are in.
func testCharts(t *testing.T, e *env, b *browserish) {
	// Records produced show as records in (review T3): a sampler that
	// always said 0 would draw a flat line and pass the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.adm.CreateTopic(ctx, 1, 1, nil, "charts-in"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: "charts-in", Value: []byte(fmt.Sprint(i))})
	}
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	peakRE := regexp.MustCompile(`aria-label="Records in over the last hour: now [^,]*, peak ([0-9.]+)([kM]?) `)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		_, body := b.get("/")
		if m := peakRE.FindStringSubmatch(body); m != nil && m[1] != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("200 records produced, and the records-in chart's peak is still 0:\n%s", peakRE.FindString(body))
		}
	}
	lineRE := regexp.MustCompile(`<polyline class="line" points="[^"]+"`)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		_, body := b.get("/")
		_, group := b.get("/groups/reporting")
		if strings.Contains(body, `id="chart-in"`) && strings.Contains(body, `id="chart-urp"`) && len(lineRE.FindAllString(body, -1)) >= 3 &&
			strings.Contains(group, `id="chart-lag"`) && lineRE.MatchString(group) {
			if !strings.Contains(body, `aria-label="Records in over the last hour: now `) {
				t.Errorf("the records-in chart has no accessible summary:\n%s", body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no charts with lines after 60 s:\n%s\n%s", body, group)
		}
	}
}
