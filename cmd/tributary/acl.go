package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newACLCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:     "acl",
		Aliases: []string{"acls"},
		Short:   "Create, list and delete ACLs",
		Long: `Manage the ACLs of a cluster over the Kafka protocol (CreateAcls,
DescribeAcls, DeleteAcls), as kafka-acls.sh does: it works against
Tributary and Apache Kafka alike. The brokers must run with
authorizer.class.name set (docs/security.md), and the principal you connect
as needs ALTER on the cluster to change ACLs, DESCRIBE to list them (a super
user has both).

An ACL says that a principal (User:alice, or User:* for everyone) from a
host (an IP address, or * for any) is allowed or denied an operation on the
resources a pattern names: a topic, group, transactional id or delegation
token by LITERAL name (* is every name) or by PREFIXED name, or the
cluster. A DENY wins over every ALLOW. Operations: Read, Write, Create,
Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs,
IdempotentWrite, CreateTokens, DescribeTokens, All.

Every subcommand connects to --bootstrap (default localhost:9092), with the
client properties of --command-config and -X.`,
		Example: `  # A producer and a consumer group for the orders topics.
  tributary acl create --allow-principal User:orders-app --operation Write --operation Describe \
      --topic orders- --resource-pattern-type prefixed
  tributary acl create --allow-principal User:orders-app --operation Read --group orders-app

  tributary acl list --principal User:orders-app
  tributary acl delete --principal User:orders-app --topic orders- --resource-pattern-type prefixed`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(
		newACLCreateCommand(&bootstrap),
		newACLListCommand(&bootstrap),
		newACLDeleteCommand(&bootstrap),
	)
	return cmd
}

// aclResources are the resource flags every subcommand takes.
type aclResources struct {
	topics, groups, txns, tokens []string
	cluster                      bool
	pattern                      string
}

func (r *aclResources) add(cmd *cobra.Command, patternDefault, patternHelp string) {
	fs := cmd.Flags()
	fs.StringArrayVar(&r.topics, "topic", nil, "a topic (repeatable; * is every topic)")
	fs.StringArrayVar(&r.groups, "group", nil, "a consumer group (repeatable)")
	fs.StringArrayVar(&r.txns, "transactional-id", nil, "a transactional id (repeatable)")
	fs.StringArrayVar(&r.tokens, "delegation-token", nil, "a delegation token id (repeatable)")
	fs.BoolVar(&r.cluster, "cluster", false, "the cluster")
	fs.StringVar(&r.pattern, "resource-pattern-type", patternDefault, patternHelp)
}

type aclResource struct {
	typ  kmsg.ACLResourceType
	name string
}

func (r *aclResources) list() []aclResource {
	var out []aclResource
	for _, x := range []struct {
		typ   kmsg.ACLResourceType
		names []string
	}{{kmsg.ACLResourceTypeTopic, r.topics}, {kmsg.ACLResourceTypeGroup, r.groups},
		{kmsg.ACLResourceTypeTransactionalId, r.txns}, {kmsg.ACLResourceTypeDelegationToken, r.tokens}} {
		for _, n := range x.names {
			out = append(out, aclResource{x.typ, n})
		}
	}
	if r.cluster {
		out = append(out, aclResource{kmsg.ACLResourceTypeCluster, "kafka-cluster"})
	}
	return out
}

func parsePattern(s string, filter bool) (kmsg.ACLResourcePatternType, error) {
	p, err := kmsg.ParseACLResourcePatternType(s)
	switch {
	case err != nil || p == kmsg.ACLResourcePatternTypeUnknown:
		return 0, fmt.Errorf("--resource-pattern-type %q: want literal or prefixed%s", s, map[bool]string{true: ", any or match"}[filter])
	case !filter && p != kmsg.ACLResourcePatternTypeLiteral && p != kmsg.ACLResourcePatternTypePrefixed:
		return 0, fmt.Errorf("--resource-pattern-type %q: an ACL is literal or prefixed (any and match are for list and delete)", s)
	}
	return p, nil
}

func parseOperations(ops []string) ([]kmsg.ACLOperation, error) {
	var out []kmsg.ACLOperation
	for _, o := range ops {
		for _, part := range strings.Split(o, ",") {
			op, err := kmsg.ParseACLOperation(part)
			if err != nil || op == kmsg.ACLOperationUnknown || op == kmsg.ACLOperationAny {
				return nil, fmt.Errorf("--operation %q: want Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All", part)
			}
			out = append(out, op)
		}
	}
	return out, nil
}

func checkPrincipals(ps []string) error {
	for _, p := range ps {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("principal %q: write it TYPE:NAME, as User:alice", p)
		}
	}
	return nil
}

func newACLCreateCommand(bootstrap *string) *cobra.Command {
	var res aclResources
	var allow, deny, allowHosts, denyHosts, ops []string
	cmd := &cobra.Command{
		Use:     "create",
		Aliases: []string{"add"},
		Short:   "Create ACLs: every principal × host × operation × resource given",
		Long: `Create ACLs (CreateAcls), as kafka-acls.sh --add: one for every
combination of principal, host, operation and resource given. Hosts default
to * (any). Creating an ACL that exists already is not an error.`,
		Example: `  tributary acl create --allow-principal User:alice --operation Read --operation Describe --topic payments
  tributary acl create --allow-principal User:* --operation Describe --topic '*'
  tributary acl create --deny-principal User:mallory --deny-host 10.0.0.7 --operation All --topic payments
  tributary acl create --allow-principal User:admin-tool --operation Alter --cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pattern, err := parsePattern(res.pattern, false)
			if err != nil {
				return err
			}
			operations, err := parseOperations(ops)
			if err != nil {
				return err
			}
			resources := res.list()
			switch {
			case len(allow)+len(deny) == 0:
				return errors.New("give --allow-principal or --deny-principal")
			case len(operations) == 0:
				return errors.New("give --operation")
			case len(resources) == 0:
				return errors.New("give a resource: --topic, --group, --transactional-id, --delegation-token or --cluster")
			}
			if err := checkPrincipals(append(append([]string{}, allow...), deny...)); err != nil {
				return err
			}
			req := kmsg.NewPtrCreateACLsRequest()
			for _, side := range []struct {
				perm       kmsg.ACLPermissionType
				principals []string
				hosts      []string
			}{{kmsg.ACLPermissionTypeAllow, allow, allowHosts}, {kmsg.ACLPermissionTypeDeny, deny, denyHosts}} {
				hosts := side.hosts
				if len(hosts) == 0 {
					hosts = []string{"*"}
				}
				for _, p := range side.principals {
					for _, h := range hosts {
						for _, op := range operations {
							for _, r := range resources {
								c := kmsg.NewCreateACLsRequestCreation()
								c.ResourceType, c.ResourceName, c.ResourcePatternType = r.typ, r.name, pattern
								c.Principal, c.Host, c.Operation, c.PermissionType = p, h, op, side.perm
								req.Creations = append(req.Creations, c)
							}
						}
					}
				}
			}
			return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return apiError("CreateAcls", req.Key(), err)
				}
				var rows []aclRow
				var failed []error
				for i, r := range resp.Results {
					if i >= len(req.Creations) {
						break
					}
					c := req.Creations[i]
					row := aclRow{c.ResourceType, c.ResourcePatternType, c.ResourceName, c.Principal, c.Host, c.Operation, c.PermissionType, "created"}
					if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
						row.status = errText(err, r.ErrorMessage)
						failed = append(failed, fmt.Errorf("%s: %s", row.describe(), row.status))
					}
					rows = append(rows, row)
				}
				printACLs(cmd.OutOrStdout(), rows, true)
				return errors.Join(failed...)
			})
		},
	}
	res.add(cmd, "literal", "literal or prefixed: whether --topic etc. name one resource or every one they prefix")
	fs := cmd.Flags()
	fs.StringArrayVar(&allow, "allow-principal", nil, "principal allowed (repeatable): User:alice, User:*")
	fs.StringArrayVar(&deny, "deny-principal", nil, "principal denied (repeatable)")
	fs.StringArrayVar(&allowHosts, "allow-host", nil, "host the allow applies from (repeatable; default *)")
	fs.StringArrayVar(&denyHosts, "deny-host", nil, "host the deny applies from (repeatable; default *)")
	fs.StringArrayVar(&ops, "operation", nil, "operation (repeatable or comma-separated): Read, Write, Describe, All, ...")
	return cmd
}

// aclFilterFlags are list's and delete's filter.
type aclFilterFlags struct {
	res        aclResources
	principals []string
	hosts      []string
	ops        []string
	permission string
}

func (f *aclFilterFlags) add(cmd *cobra.Command) {
	f.res.add(cmd, "any", "any, match (every ACL that applies to the named resource, PREFIXED and * ones included), literal or prefixed")
	fs := cmd.Flags()
	fs.StringArrayVar(&f.principals, "principal", nil, "only ACLs of this principal (repeatable)")
	fs.StringArrayVar(&f.hosts, "host", nil, "only ACLs of this host (repeatable)")
	fs.StringArrayVar(&f.ops, "operation", nil, "only ACLs of this operation (repeatable)")
	fs.StringVar(&f.permission, "permission", "any", "only allow or deny ACLs")
}

// filters are the cross product of the flags; nil entries match any.
func (f *aclFilterFlags) filters() ([]kmsg.DeleteACLsRequestFilter, error) {
	pattern, err := parsePattern(f.res.pattern, true)
	if err != nil {
		return nil, err
	}
	perm, err := kmsg.ParseACLPermissionType(f.permission)
	if err != nil || perm == kmsg.ACLPermissionTypeUnknown {
		return nil, fmt.Errorf("--permission %q: want allow, deny or any", f.permission)
	}
	ops, err := parseOperations(f.ops)
	if err != nil {
		return nil, err
	}
	if err := checkPrincipals(f.principals); err != nil {
		return nil, err
	}
	resources := f.res.list()
	if len(resources) == 0 {
		resources = []aclResource{{typ: kmsg.ACLResourceTypeAny}}
	}
	opt := func(ss []string) []*string {
		if len(ss) == 0 {
			return []*string{nil}
		}
		out := make([]*string, len(ss))
		for i := range ss {
			out[i] = &ss[i]
		}
		return out
	}
	if len(ops) == 0 {
		ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
	}
	var out []kmsg.DeleteACLsRequestFilter
	for _, r := range resources {
		for _, p := range opt(f.principals) {
			for _, h := range opt(f.hosts) {
				for _, op := range ops {
					fl := kmsg.NewDeleteACLsRequestFilter()
					fl.ResourceType, fl.ResourcePatternType = r.typ, pattern
					if r.typ != kmsg.ACLResourceTypeAny {
						fl.ResourceName = kmsg.StringPtr(r.name)
					}
					fl.Principal, fl.Host, fl.Operation, fl.PermissionType = p, h, op, perm
					out = append(out, fl)
				}
			}
		}
	}
	return out, nil
}

func newACLListCommand(bootstrap *string) *cobra.Command {
	var f aclFilterFlags
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "describe"},
		Short:   "List ACLs, with their pattern types",
		Long: `List the ACLs that match the filter flags (DescribeAcls), as
kafka-acls.sh --list; without flags, every ACL. Each line shows the pattern
type, so a PREFIXED ACL is never taken for a LITERAL one.`,
		Example: `  tributary acl list
  tributary acl list --principal User:alice
  # Every ACL that applies to topic payments, prefixed and wildcard ones included.
  tributary acl list --topic payments --resource-pattern-type match`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filters, err := f.filters()
			if err != nil {
				return err
			}
			return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
				seen := map[aclRow]bool{}
				var rows []aclRow
				for _, fl := range filters {
					req := kmsg.NewPtrDescribeACLsRequest()
					req.ResourceType, req.ResourceName, req.ResourcePatternType = fl.ResourceType, fl.ResourceName, fl.ResourcePatternType
					req.Principal, req.Host, req.Operation, req.PermissionType = fl.Principal, fl.Host, fl.Operation, fl.PermissionType
					resp, err := req.RequestWith(ctx, cl)
					if err != nil {
						return apiError("DescribeAcls", req.Key(), err)
					}
					if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
						return fmt.Errorf("listing ACLs: %s", errText(err, resp.ErrorMessage))
					}
					for _, r := range resp.Resources {
						for _, a := range r.ACLs {
							row := aclRow{r.ResourceType, r.ResourcePatternType, r.ResourceName, a.Principal, a.Host, a.Operation, a.PermissionType, ""}
							if !seen[row] {
								seen[row] = true
								rows = append(rows, row)
							}
						}
					}
				}
				sortACLs(rows)
				printACLs(cmd.OutOrStdout(), rows, false)
				return nil
			})
		},
	}
	f.add(cmd)
	return cmd
}

func newACLDeleteCommand(bootstrap *string) *cobra.Command {
	var f aclFilterFlags
	cmd := &cobra.Command{
		Use:     "delete",
		Aliases: []string{"remove", "rm"},
		Short:   "Delete the ACLs that match the filter flags, and show them",
		Long: `Delete every ACL that matches the filter flags (DeleteAcls), as
kafka-acls.sh --remove --force, and print those deleted. At least one
flag must narrow the filter: deleting every ACL of the cluster takes
--resource-pattern-type any --all.`,
		Example: `  tributary acl delete --principal User:alice --topic payments
  tributary acl delete --principal User:orders-app --topic orders- --resource-pattern-type prefixed
  tributary acl list --principal User:alice    # check what remains`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, _ := cmd.Flags().GetBool("all")
			if !all && len(f.res.list()) == 0 && len(f.principals) == 0 && len(f.hosts) == 0 && len(f.ops) == 0 && f.permission == "any" {
				return errors.New("no filter given: name a resource, --principal, --host, --operation or --permission (or --all to delete every ACL)")
			}
			filters, err := f.filters()
			if err != nil {
				return err
			}
			req := kmsg.NewPtrDeleteACLsRequest()
			req.Filters = filters
			return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return apiError("DeleteAcls", req.Key(), err)
				}
				var rows []aclRow
				var failed []error
				seen := map[aclRow]bool{}
				for _, r := range resp.Results {
					if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
						failed = append(failed, fmt.Errorf("deleting ACLs: %s", errText(err, r.ErrorMessage)))
					}
					for _, m := range r.MatchingACLs {
						row := aclRow{m.ResourceType, m.ResourcePatternType, m.ResourceName, m.Principal, m.Host, m.Operation, m.PermissionType, "deleted"}
						if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
							row.status = errText(err, m.ErrorMessage)
							failed = append(failed, fmt.Errorf("%s: %s", row.describe(), row.status))
						}
						if !seen[row] {
							seen[row] = true
							rows = append(rows, row)
						}
					}
				}
				sortACLs(rows)
				printACLs(cmd.OutOrStdout(), rows, true)
				if len(rows) == 0 && len(failed) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "no ACL matched")
				}
				return errors.Join(failed...)
			})
		},
	}
	f.add(cmd)
	cmd.Flags().Bool("all", false, "allow a filter that matches every ACL")
	return cmd
}

type aclRow struct {
	typ        kmsg.ACLResourceType
	pattern    kmsg.ACLResourcePatternType
	name       string
	principal  string
	host       string
	op         kmsg.ACLOperation
	permission kmsg.ACLPermissionType
	status     string
}

func (r aclRow) describe() string {
	return fmt.Sprintf("%s %s %s:%s %s %s from %s", r.permission, r.principal, r.typ, r.name, r.pattern, r.op, r.host)
}

func sortACLs(rows []aclRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.typ != b.typ {
			return a.typ < b.typ
		}
		if a.name != b.name {
			return a.name < b.name
		}
		if a.pattern != b.pattern {
			return a.pattern < b.pattern
		}
		if a.principal != b.principal {
			return a.principal < b.principal
		}
		if a.op != b.op {
			return a.op < b.op
		}
		if a.permission != b.permission {
			return a.permission < b.permission
		}
		return a.host < b.host
	})
}

func printACLs(w io.Writer, rows []aclRow, status bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "RESOURCE-TYPE\tPATTERN-TYPE\tNAME\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION"
	if status {
		header += "\tSTATUS"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", upper(r.typ.String()), upper(r.pattern.String()), r.name, r.principal, r.host, upper(r.op.String()), upper(r.permission.String()))
		if status {
			line += "\t" + r.status
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

func upper(s string) string { return strings.ToUpper(s) }

func errText(err error, msg *string) string {
	if msg != nil && *msg != "" {
		return err.Error() + ": " + *msg
	}
	return err.Error()
}
