package collect

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
