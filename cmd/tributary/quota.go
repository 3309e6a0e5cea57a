package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newQuotaCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Set, list and delete client quotas (byte rates, request time, mutation rate)",
		Long: `Client quotas limit what a user (the authenticated principal's name,
ANONYMOUS on PLAINTEXT), a client id or an IP address may do, as Apache
Kafka's do: producer_byte_rate and consumer_byte_rate (bytes per second),
request_percentage (percent of one request handler's time),
controller_mutation_rate (partitions created or deleted per second) for
users and client ids, connection_creation_rate (connections per second) for
IP addresses. A client over its quota is throttled: its responses carry
throttle_time_ms and the broker stops reading from its connection until
that time has passed.

A quota applies to a user, a client id, or a user and client id together,
each either named or the default (--default-user, --default-client-id); the
most specific one wins, in Kafka's order (docs/security.md, Quotas). These
commands speak DescribeClientQuotas and AlterClientQuotas, so they work
against Apache Kafka too; kafka-configs.sh --entity-type users|clients|ips
works against Tributary.`,
		Example: `  tributary quota set --user alice producer_byte_rate=1048576 consumer_byte_rate=2097152
  tributary quota set --user alice --client-id reports request_percentage=50
  tributary quota set --default-client-id producer_byte_rate=10485760
  tributary quota set --ip 10.0.0.7 connection_creation_rate=20
  tributary quota list
  tributary quota list --user alice
  tributary quota delete --user alice producer_byte_rate
  tributary quota delete --default-client-id`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(newQuotaSetCommand(&bootstrap), newQuotaListCommand(&bootstrap), newQuotaDeleteCommand(&bootstrap))
	return cmd
}

// quotaEntityFlags are the flags naming an entity.
type quotaEntityFlags struct {
	user, clientID, ip                    string
	defaultUser, defaultClient, defaultIP bool
	fs                                    *pflag.FlagSet
}

func addQuotaEntityFlags(fs *pflag.FlagSet) *quotaEntityFlags {
	e := &quotaEntityFlags{fs: fs}
	fs.StringVar(&e.user, "user", "", "the user (principal name, e.g. alice or ANONYMOUS)")
	fs.StringVar(&e.clientID, "client-id", "", "the client id")
	fs.StringVar(&e.ip, "ip", "", "the IP address (connection_creation_rate only)")
	fs.BoolVar(&e.defaultUser, "default-user", false, "the default user: every user without a quota of its own")
	fs.BoolVar(&e.defaultClient, "default-client-id", false, "the default client id: every client id without a quota of its own")
	fs.BoolVar(&e.defaultIP, "default-ip", false, "the default IP address")
	return e
}

// quotaPart is one entity component: a type and a name (nil: the default).
type quotaPart struct {
	typ  string
	name *string
}

// parts is the entity the flags name; required says at least one must be
// given.
func (e *quotaEntityFlags) parts(required bool) ([]quotaPart, error) {
	var out []quotaPart
	for _, c := range []struct {
		typ, flag, defFlag string
		name               string
		def                bool
	}{
		{"user", "user", "default-user", e.user, e.defaultUser},
		{"client-id", "client-id", "default-client-id", e.clientID, e.defaultClient},
		{"ip", "ip", "default-ip", e.ip, e.defaultIP},
	} {
		named := e.fs.Changed(c.flag)
		switch {
		case named && c.def:
			return nil, fmt.Errorf("--%s and --%s name the same part of the entity: give one", c.flag, c.defFlag)
		case named && c.name == "":
			return nil, fmt.Errorf("--%s is empty: give a name, or --%s", c.flag, c.defFlag)
		case named:
			n := c.name
			out = append(out, quotaPart{c.typ, &n})
		case c.def:
			out = append(out, quotaPart{c.typ, nil})
		}
	}
	if required && len(out) == 0 {
		return nil, errors.New("name the entity: --user, --client-id or --ip, or their --default-* forms")
	}
	return out, nil
}

func quotaEntityString(parts []quotaPart) string {
	var s []string
	for _, p := range parts {
		n := "<default>"
		if p.name != nil {
			n = *p.name
		}
		s = append(s, p.typ+"="+n)
	}
	return strings.Join(s, ", ")
}

// alterQuota sends one AlterClientQuotas entry and returns its error.
func alterQuota(ctx context.Context, cl *kgo.Client, parts []quotaPart, ops []kmsg.AlterClientQuotasRequestEntryOp, validateOnly bool) error {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range parts {
		ep := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ep.Type, ep.Name = p.typ, p.name
		e.Entity = append(e.Entity, ep)
	}
	e.Ops = ops
	req.Entries = append(req.Entries, e)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return apiError("AlterClientQuotas", req.Key(), err)
	}
	for _, re := range resp.Entries {
		if err := kerr.ErrorForCode(re.ErrorCode); err != nil {
			if re.ErrorMessage != nil && *re.ErrorMessage != "" {
				return fmt.Errorf("%w: %s", err, *re.ErrorMessage)
			}
			return err
		}
	}
	return nil
}

func newQuotaSetCommand(bootstrap *string) *cobra.Command {
	var validateOnly bool
	cmd := &cobra.Command{
		Use:   "set (--user U | --client-id C | --ip A | --default-...) KEY=VALUE...",
		Short: "Set quotas of a user, a client id, both, or an IP address",
		Long: `Set one or more quotas of an entity. The keys are Kafka's:
producer_byte_rate, consumer_byte_rate, request_percentage and
controller_mutation_rate for users and client ids, connection_creation_rate
for IP addresses. The broker checks them (INVALID_REQUEST for an unknown key,
a value of zero or less, or a fraction of a byte) and applies them on every
broker before it answers.`,
		Example: `  tributary quota set --user alice producer_byte_rate=1048576
  tributary quota set --user alice --client-id app consumer_byte_rate=5242880 request_percentage=25
  tributary quota set --default-user --default-client-id producer_byte_rate=10485760`,
		Args: cobra.MinimumNArgs(1),
	}
	entity := addQuotaEntityFlags(cmd.Flags())
	cmd.Flags().BoolVar(&validateOnly, "dry-run", false, "have the broker check the quotas without storing them (validate_only)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		parts, err := entity.parts(true)
		if err != nil {
			return err
		}
		var ops []kmsg.AlterClientQuotasRequestEntryOp
		for _, a := range args {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return fmt.Errorf("%q: give KEY=VALUE, such as producer_byte_rate=1048576", a)
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number", k, v)
			}
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = k, f
			ops = append(ops, op)
		}
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			if err := alterQuota(ctx, cl, parts, ops, validateOnly); err != nil {
				return fmt.Errorf("setting quotas of %s: %w", quotaEntityString(parts), err)
			}
			verb := "set"
			if validateOnly {
				verb = "valid, not set (--dry-run)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quotas of %s %s\n", quotaEntityString(parts), verb)
			return nil
		})
	}
	return cmd
}

// describeQuotaEntries asks for the entities matching parts (exactly, or
// every entity when parts is empty); strict leaves out entities with more
// parts.
func describeQuotaEntries(ctx context.Context, cl *kgo.Client, parts []quotaPart, strict bool) ([]kmsg.DescribeClientQuotasResponseEntry, error) {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict = strict
	for _, p := range parts {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.Match, c.MatchType = p.typ, p.name, kmsg.QuotasMatchTypeExact
		if p.name == nil {
			c.MatchType = kmsg.QuotasMatchTypeDefault
		}
		req.Components = append(req.Components, c)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, apiError("DescribeClientQuotas", req.Key(), err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil {
			return nil, fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
		return nil, err
	}
	return resp.Entries, nil
}

// quotaTypeOrder sorts entity parts as users think of them.
var quotaTypeOrder = map[string]int{"user": 0, "client-id": 1, "ip": 2}

func entryParts(e kmsg.DescribeClientQuotasResponseEntry) []quotaPart {
	var out []quotaPart
	for _, p := range e.Entity {
		out = append(out, quotaPart{p.Type, p.Name})
	}
	sort.SliceStable(out, func(i, j int) bool { return quotaTypeOrder[out[i].typ] < quotaTypeOrder[out[j].typ] })
	return out
}

func newQuotaListCommand(bootstrap *string) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "list [--user U | --client-id C | --ip A | --default-...]",
		Short: "List quotas, of every entity or of those matching the flags",
		Long: `List the quotas set, one line per quota. With entity flags, only the
entities that have those parts (any others too, unless --strict).`,
		Example: `  tributary quota list
  tributary quota list --user alice
  tributary quota list --user alice --strict
  tributary quota list --default-client-id`,
		Args: cobra.NoArgs,
	}
	entity := addQuotaEntityFlags(cmd.Flags())
	cmd.Flags().BoolVar(&strict, "strict", false, "only entities with exactly the parts named")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		parts, err := entity.parts(false)
		if err != nil {
			return err
		}
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			entries, err := describeQuotaEntries(ctx, cl, parts, strict)
			if err != nil {
				return fmt.Errorf("listing quotas: %w", err)
			}
			type line struct{ entity, key, value string }
			var lines []line
			for _, e := range entries {
				ent := quotaEntityString(entryParts(e))
				for _, v := range e.Values {
					lines = append(lines, line{ent, v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64)})
				}
			}
			sort.Slice(lines, func(i, j int) bool {
				if lines[i].entity != lines[j].entity {
					return lines[i].entity < lines[j].entity
				}
				return lines[i].key < lines[j].key
			})
			if len(lines) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no quotas")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ENTITY\tQUOTA\tVALUE")
			for _, l := range lines {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", l.entity, l.key, l.value)
			}
			return tw.Flush()
		})
	}
	return cmd
}

func newQuotaDeleteCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete (--user U | --client-id C | --ip A | --default-...) [KEY...]",
		Short: "Remove quotas of an entity: the keys given, or all of them",
		Long: `Remove quotas of one entity, named exactly as it was set: the keys
given, or every quota it has when none is given. The quotas of other
entities (the same user with a client id, the defaults) stay.`,
		Example: `  tributary quota delete --user alice producer_byte_rate
  tributary quota delete --user alice --client-id app`,
	}
	entity := addQuotaEntityFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, keys []string) error {
		parts, err := entity.parts(true)
		if err != nil {
			return err
		}
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			if len(keys) == 0 {
				entries, err := describeQuotaEntries(ctx, cl, parts, true)
				if err != nil {
					return fmt.Errorf("listing quotas of %s: %w", quotaEntityString(parts), err)
				}
				for _, e := range entries {
					for _, v := range e.Values {
						keys = append(keys, v.Key)
					}
				}
				if len(keys) == 0 {
					return fmt.Errorf("%s has no quotas", quotaEntityString(parts))
				}
			}
			var ops []kmsg.AlterClientQuotasRequestEntryOp
			for _, k := range keys {
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key, op.Remove = k, true
				ops = append(ops, op)
			}
			if err := alterQuota(ctx, cl, parts, ops, false); err != nil {
				return fmt.Errorf("deleting quotas of %s: %w", quotaEntityString(parts), err)
			}
			sort.Strings(keys)
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s of %s\n", strings.Join(keys, ", "), quotaEntityString(parts))
			return nil
		})
	}
	return cmd
}
