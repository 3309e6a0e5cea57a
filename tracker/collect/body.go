package collect

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// readBody reads at most limit bytes of body (after gzip, if encoded) into
// buf, which the caller pools; on failure it returns a status and message.
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, limit int) (int, string) {
	var rd io.Reader = http.MaxBytesReader(w, r.Body, int64(limit)+1)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return http.StatusBadRequest, "bad gzip body: " + err.Error()
		}
		rd = zr
	} else if n := r.ContentLength; n > 0 && n <= int64(limit) {
		// One read into a buffer of the right size, rather than growing
		// it by doubling; the extra byte lets the read see the end.
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(rd, int64(limit)+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || buf.Len() > limit:
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than the limit of %d bytes", limit)
	case err != nil && isTimeout(err):
		return http.StatusRequestTimeout, "request body not received in time"
	case err != nil:
		return http.StatusBadRequest, "reading the body: " + err.Error()
	}
	return 0, ""
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &te) && te.Timeout())
}

func reasonOfCode(code int) string {
	switch code {
	case http.StatusRequestEntityTooLarge:
		return ReasonTooLarge
	case http.StatusRequestTimeout:
		return ReasonTimeout
	}
	return ReasonMalformed
}
