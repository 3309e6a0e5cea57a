package jobs

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/internal/testyarn"
)

// A submission without Kerberos to a Kerberized ResourceManager is refused
// before any application exists, with what to give in the error.
func TestYARNKerberosRefused(t *testing.T) {
	t.Parallel()
	y := testyarn.Kerberized(t)
	// No Kerberos, no application: the RM's answer, in words.
	e := &yarnExecutor{cfg: YARN{ResourceManager: y.RM}, client: &http.Client{Timeout: 10 * time.Second}, hdfsUser: testhdfs.DefaultUser,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := e.call(context.Background(), http.MethodPost, y.RM+"/ws/v1/cluster/apps/new-application", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "wants Kerberos (SPNEGO) and this submission has no Kerberos login") ||
		!strings.Contains(err.Error(), "401") {
		t.Fatalf("a submission without Kerberos: %v", err)
	}

}
