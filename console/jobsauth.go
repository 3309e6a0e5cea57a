package console

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The jobs API has no principals of its own: the console calls it with
// its own HTTP client. With per-user login, a person may trigger, pause or
// resume a load job only when the broker lets them ALTER the cluster, the
// right Kafka asks for changes of the same weight (review 9). Without an
// authorizer the broker omits authorized operations and everyone may do
// everything, as on the Kafka side.

// mayAlterCluster reports whether the request's principal holds ALTER on
// the cluster; nil when it does.
func (s *Server) mayAlterCluster(ctx context.Context) error {
	if s.sessions == nil {
		return nil
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, s.client(ctx))
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("describe cluster: error code %d", resp.ErrorCode)
	}
	ops := resp.ClusterAuthorizedOperations
	if ops == math.MinInt32 {
		return nil
	}
	if ops&(1<<int32(kmsg.ACLOperationAlter)) == 0 && ops&(1<<int32(kmsg.ACLOperationAll)) == 0 {
		return errNoClusterAlter
	}
	return nil
}

var errNoClusterAlter = fmt.Errorf("load jobs change only for a principal with ALTER on the cluster")
