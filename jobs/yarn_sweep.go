package jobs

// Staging dirs of applications that are over. The executor removes its
// application's dir when it ends and DistributedShell's AM does too, but
// neither runs when the submitter is killed before the submission (no
// application exists) or the AM never reaches its cleanup (both attempts
// failed to launch, killed from the RM, left ACCEPTED): the dir stays,
// with a Kerberized submission's keytab in it. Each submission sweeps
// them: a dir older than yarnSweepAfter (the time a submission takes to
// reach the RM, with margin) whose application the RM does not know or
// reports ended is removed.

import (
	"context"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

const yarnSweepAfter = 10 * time.Minute

// sweep removes the staging dirs of applications that are over.
func (e *yarnExecutor) sweep(ctx context.Context, fs fsys.FS, rm string) {
	ents, err := fs.ReadDir(yarnAppName)
	if err != nil {
		return
	}
	for _, ent := range ents {
		id := ent.Name()
		if !ent.IsDir() || !strings.HasPrefix(id, "application_") || time.Since(ent.ModTime()) < yarnSweepAfter {
			continue
		}
		var r struct {
			App struct {
				State string `json:"state"`
			} `json:"app"`
		}
		err := e.call(ctx, http.MethodGet, rm+"/ws/v1/cluster/apps/"+id, nil, &r)
		switch {
		case err != nil && strings.Contains(err.Error(), "404"):
		case err != nil:
			continue
		case r.App.State != "FINISHED" && r.App.State != "FAILED" && r.App.State != "KILLED":
			continue
		}
		if err := fs.RemoveAll(path.Join(yarnAppName, id)); err == nil {
			e.log.Info("removed the staging dir of an application that is over", "application", id)
		}
	}
}
