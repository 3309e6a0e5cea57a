package collect

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tributary-io/tributary/tracker"
)

func gzipWriter(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }

type discard struct{ h http.Header }

func (d discard) Header() http.Header {
	if d.h == nil {
		return http.Header{}
	}
	return d.h
}
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func httptestRequest(body string) *http.Request {
	r := httptest.NewRequest("POST", "/v1/track", strings.NewReader(body))
	r.SetBasicAuth(key, "")
	r.Header.Set("User-Agent", ua)
	return r
}

// nullSink takes events and forgets them.
type nullSink struct{}

func (nullSink) Submit(context.Context, []tracker.Event) error { return nil }
func (nullSink) Close() error                                  { return nil }
