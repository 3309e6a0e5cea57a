package jobs

// When the binary can go back to the cache (yarn_binary.go): once no
// container of the application will localize it again. DistributedShell's
// AM deletes the application's directory, binary and all, right after it
// unregisters, and the RM reports FINISHED from the unregister on: a give
// back at the application's end is always too late, and one when every
// unit has a result (polled, once a second) lands in the fraction of a
// second between the last result and the AM's delete only by luck (what
// made TestYARNLoadRunCommand flaky).
//
// The NodeManager's own container state says when a container is past its
// localization: its REST API (/ws/v1/node/containers/<id>) reports the
// internal state, NEW, LOCALIZING, SCHEDULED, then RUNNING and on. The
// RM's container list cannot tell: it reports every live container as
// RUNNING from its allocation on, before the NodeManager has localized
// anything (RMContainerImpl.getContainerState). So the executor asks each
// worker container's NodeManager, and gives the binary back once every
// worker container asked for is past LOCALIZING: seconds before the last
// unit, let alone the AM's end. The units check stays as the fallback (a
// NodeManager that does not answer, a container gone before it was seen).
//
// A container started after the give back (a replacement for a preempted
// or lost one) fails to localize the binary; its index's units are then
// run by the loader before the commit (loader.Complete), as for any index
// no container ran.

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// localizedWorkers counts the worker containers whose NodeManager reported
// them past localization.
type localizedWorkers struct {
	want int
	done map[string]bool
}

// nmBeforeLocalization are the NodeManager's container states before and
// during localization: any other (RUNNING, EXITED_*, KILLING, DONE, ...)
// has its files.
var nmBeforeLocalization = map[string]bool{"NEW": true, "LOCALIZING": true, "LOCALIZATION_FAILED": true, "SCHEDULED": true}

// workersLocalized asks the NodeManagers of the worker containers not yet
// seen past localization, and reports whether all w.want are.
func (e *yarnExecutor) workersLocalized(ctx context.Context, rm string, cs []yarnContainer, w *localizedWorkers) bool {
	for _, c := range cs {
		if len(w.done) >= w.want {
			break
		}
		if w.done[c.ID] || amContainer(c.ID) || c.NodeHTTPAddress == "" {
			continue
		}
		nm := c.NodeHTTPAddress
		if !strings.Contains(nm, "://") {
			scheme := "http"
			if u, err := url.Parse(rm); err == nil && u.Scheme != "" {
				scheme = u.Scheme
			}
			nm = scheme + "://" + nm
		}
		var r struct {
			Container struct {
				State string `json:"state"`
			} `json:"container"`
		}
		if err := e.call(ctx, http.MethodGet, strings.TrimRight(nm, "/")+"/ws/v1/node/containers/"+url.PathEscape(c.ID), nil, &r); err != nil {
			e.log.Debug("asking a NodeManager for its container", "container", c.ID, "err", err)
			continue
		}
		if s := r.Container.State; s != "" && !nmBeforeLocalization[s] {
			w.done[c.ID] = true
		}
	}
	return len(w.done) >= w.want
}

// amContainer: the attempt's first container is its AM
// (container_[e<epoch>_]<cluster>_<app>_<attempt>_000001).
func amContainer(id string) bool {
	i := strings.LastIndexByte(id, '_')
	n, err := strconv.Atoi(id[i+1:])
	return err == nil && n == 1
}
