package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to a scheduler's HTTP API (the `tributary jobs` commands).
type Client struct {
	Base string // http://host:port
	HTTP *http.Client
}

// NewClient is a client of the API at addr (host:port or a URL).
func NewClient(addr string) *Client {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return &Client{Base: strings.TrimSuffix(addr, "/"), HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Overview is GET /jobs.
func (c *Client) Overview(ctx context.Context) (*Overview, error) {
	var o Overview
	return &o, c.do(ctx, "GET", "/jobs", &o)
}

// Job is GET /jobs/{name}.
func (c *Client) Job(ctx context.Context, name string) (*JobView, error) {
	var v JobView
	return &v, c.do(ctx, "GET", "/jobs/"+url.PathEscape(name), &v)
}

// Runs is GET /jobs/{name}/runs.
func (c *Client) Runs(ctx context.Context, name string, limit int) (*RunsResponse, error) {
	var r RunsResponse
	return &r, c.do(ctx, "GET", fmt.Sprintf("/jobs/%s/runs?limit=%d", url.PathEscape(name), limit), &r)
}

// Trigger is POST /jobs/{name}/trigger; it returns the status message.
func (c *Client) Trigger(ctx context.Context, name string) (string, error) {
	var r map[string]string
	err := c.do(ctx, "POST", "/jobs/"+url.PathEscape(name)+"/trigger", &r)
	return r["status"], err
}

// SetPaused is POST /jobs/{name}/pause or /resume.
func (c *Client) SetPaused(ctx context.Context, name string, paused bool) (*JobView, error) {
	verb := "resume"
	if paused {
		verb = "pause"
	}
	var v JobView
	return &v, c.do(ctx, "POST", "/jobs/"+url.PathEscape(name)+"/"+verb, &v)
}

func (c *Client) do(ctx context.Context, method, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("jobs API at %s: %w (is `tributary jobs serve` running there? --server)", c.Base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s", e.Error)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return json.Unmarshal(b, into)
}
