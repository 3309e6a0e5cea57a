package simulate

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
)

// A site the visitors browse: pages, products and what people search for.
var (
	categories = []string{"shoes", "jackets", "bags", "hats", "socks"}
	searches   = []string{"running shoes", "rain jacket", "leather bag", "wool hat", "gift", "sale", "black boots"}
	userAgents = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	}
	locales   = []string{"en-US", "en-GB", "de-DE", "fr-FR", "ja-JP", "pt-BR"}
	referrers = []struct{ url, source, medium string }{
		{"", "", ""},
		{"https://www.google.com/", "google", "organic"},
		{"https://news.ycombinator.com/", "hackernews", "referral"},
		{"https://mail.example.com/", "newsletter", "email"},
		{"https://www.facebook.com/", "facebook", "cpc"},
	}
)

// visitor is one browser: an anonymous id kept across sessions, a user id
// once signed up, and where the current session is.
type visitor struct {
	anonymousID string
	userID      string
	userAgent   string
	locale      string
	referrer    int
	page        string // path of the page in view
	cart        int
	inSession   bool
}

func newVisitor(r *rand.Rand, n int) *visitor {
	return &visitor{
		anonymousID: fmt.Sprintf("anon-%d-%x", n, r.Uint32()),
		userAgent:   userAgents[r.IntN(len(userAgents))],
		locale:      locales[r.IntN(len(locales))],
	}
}

// step is the visitor's next action: the events it sends.
func (v *visitor) step(r *rand.Rand, site string) []event {
	if !v.inSession {
		v.inSession, v.cart = true, 0
		v.referrer = r.IntN(len(referrers))
		landing := []string{"/", "/", "/sale", "/c/" + categories[r.IntN(len(categories))]}[r.IntN(4)]
		return []event{v.pageView(site, landing)}
	}
	switch p := r.Float64(); {
	case p < 0.08: // leaves
		v.inSession = false
		return nil
	case p < 0.28:
		q := searches[r.IntN(len(searches))]
		e := v.pageView(site, "/search?q="+url.QueryEscape(q))
		return []event{{typ: "track", name: "Products Searched", props: map[string]any{"query": q}}, e}
	case p < 0.58:
		sku := "SKU-" + strconv.Itoa(1000+r.IntN(500))
		e := v.pageView(site, "/p/"+sku)
		return []event{e, {typ: "track", name: "Product Viewed", props: map[string]any{"product_id": sku, "price": float64(1000+r.IntN(20000)) / 100, "category": categories[r.IntN(len(categories))]}}}
	case p < 0.75:
		return []event{{typ: "track", name: "Clicked", props: map[string]any{"element": []string{"hero", "nav", "footer", "banner"}[r.IntN(4)]}}}
	case p < 0.88:
		v.cart++
		return []event{{typ: "track", name: "Product Added", props: map[string]any{"cart_size": v.cart}}}
	case p < 0.94 && v.cart > 0:
		v.cart = 0
		return []event{v.pageView(site, "/checkout"), {typ: "track", name: "Order Completed", props: map[string]any{"revenue": float64(2000+r.IntN(30000)) / 100, "currency": "USD"}}}
	case v.userID == "":
		v.userID = "user-" + v.anonymousID[5:]
		return []event{
			{typ: "identify", traits: map[string]any{"plan": []string{"free", "pro"}[r.IntN(2)], "locale": v.locale}},
			{typ: "track", name: "Signed Up", props: map[string]any{"method": []string{"email", "google"}[r.IntN(2)]}},
		}
	default:
		return []event{v.pageView(site, "/")}
	}
}

func (v *visitor) pageView(site, path string) event {
	prev := v.page
	v.page = path
	ref := site + prev
	if prev == "" {
		ref = referrers[v.referrer].url
	}
	return event{typ: "page", path: path, referrer: ref}
}
