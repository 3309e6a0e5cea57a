package decode

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// ActivityEvent appends to dst the i-th of a deterministic sequence of
// Segment-style activity events, about 400 bytes of JSON each: the events
// the decode and Parquet benchmarks measure. The same i always gives the
// same bytes.
func ActivityEvent(dst []byte, i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 0x7472696275746172))
	types := [...]string{"track", "page", "identify", "track", "track"}
	events := [...]string{"Order Completed", "Product Viewed", "Signed Up", "Cart Viewed", "Checkout Started"}
	locales := [...]string{"en-US", "de-DE", "fr-FR", "ja-JP", "pt-BR"}
	ts := time.UnixMilli(1714521600000 + int64(i)*37 + r.Int64N(1000)).UTC()
	prod := r.IntN(100000)

	dst = append(dst, `{"type":"`...)
	dst = append(dst, types[i%len(types)]...)
	dst = append(dst, `","event":"`...)
	dst = append(dst, events[r.IntN(len(events))]...)
	dst = append(dst, `","messageId":"m-`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, '-')
	dst = strconv.AppendUint(dst, r.Uint64(), 36)
	dst = append(dst, `","anonymousId":"a-`...)
	dst = strconv.AppendUint(dst, r.Uint64()%1e9, 36)
	dst = append(dst, `","userId":"u-`...)
	dst = strconv.AppendInt(dst, r.Int64N(1e6), 10)
	dst = append(dst, `","timestamp":"`...)
	dst = ts.AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
	dst = append(dst, `","receivedAt":`...)
	dst = strconv.AppendInt(dst, ts.UnixMilli()+41, 10)
	dst = append(dst, `,"context":{"page":{"url":"https://ex.com/p/`...)
	dst = strconv.AppendInt(dst, int64(prod), 10)
	dst = append(dst, `?r=n","path":"/p/`...)
	dst = strconv.AppendInt(dst, int64(prod), 10)
	dst = append(dst, `","referrer":"https://google.com/"},"userAgent":"Mozilla/5.0 Firefox/12`...)
	dst = strconv.AppendInt(dst, int64(r.IntN(10)), 10)
	dst = append(dst, `.0","ip":"10.`...)
	dst = strconv.AppendInt(dst, int64(r.IntN(256)), 10)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, int64(r.IntN(256)), 10)
	dst = append(dst, `.7","locale":"`...)
	dst = append(dst, locales[r.IntN(len(locales))]...)
	dst = append(dst, `"},"properties":{"revenue":`...)
	dst = strconv.AppendFloat(dst, float64(r.IntN(100000))/100, 'f', -1, 64)
	dst = append(dst, `,"quantity":`...)
	dst = strconv.AppendInt(dst, int64(1+r.IntN(5)), 10)
	dst = append(dst, `}}`...)
	return dst
}
