package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
)

func newUserCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, list and delete SCRAM users (SCRAM-SHA-256, SCRAM-SHA-512)",
		Long: `SCRAM users log in on SASL listeners with SCRAM-SHA-256 or SCRAM-SHA-512.
Their credentials live in the cluster's metadata log, salted: the broker
never sees nor stores a password, only what this command derives from it.
A user may have both mechanisms, each with its own iteration count; every
broker accepts a new or changed credential before create returns.

These commands speak DescribeUserScramCredentials and
AlterUserScramCredentials (KIP-554), so they work against Apache Kafka
too, and kafka-configs.sh --entity-type users --alter --add-config
'SCRAM-SHA-512=[...]' works against Tributary. Passwords are read from a
file or stdin, never from the command line, where ps and shell history
would show them. The first user of a cluster without a PLAINTEXT
listener comes from tributary broker --add-scram (docs/security.md).`,
		Example: `  tributary user create alice --password-file alice.pw
  echo -n "$PW" | tributary user create alice --mechanism SCRAM-SHA-256 --mechanism SCRAM-SHA-512 --password-stdin
  tributary user list
  tributary user list alice bob
  tributary user delete alice --mechanism SCRAM-SHA-256
  tributary user delete alice`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(newUserCreateCommand(&bootstrap), newUserListCommand(&bootstrap), newUserDeleteCommand(&bootstrap))
	return cmd
}

// scramMechanisms reads --mechanism values; none is SCRAM-SHA-512, the
// stronger one and kafka-configs.sh's usual choice.
func scramMechanisms(names []string) ([]auth.ScramMechanism, error) {
	if len(names) == 0 {
		names = []string{"SCRAM-SHA-512"}
	}
	var out []auth.ScramMechanism
	seen := map[string]bool{}
	for _, n := range names {
		m, ok := auth.ScramMechanismByName(strings.ToUpper(strings.TrimSpace(n)))
		if !ok {
			return nil, fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", n)
		}
		if !seen[m.Name] {
			seen[m.Name] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// readPassword is the password of --password-file or --password-stdin, its
// final line break aside (echo and editors add one).
func readPassword(cmd *cobra.Command, file string, stdin bool) (string, error) {
	var b []byte
	var err error
	switch {
	case file != "" && stdin:
		return "", errors.New("--password-file and --password-stdin both given: give one")
	case file != "":
		if b, err = os.ReadFile(file); err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
	case stdin:
		if b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20)); err != nil {
			return "", fmt.Errorf("--password-stdin: %w", err)
		}
	default:
		return "", errors.New("give the password with --password-file FILE or --password-stdin (never on the command line)")
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", errors.New("the password is empty")
	}
	return pw, nil
}

// alterScram sends one AlterUserScramCredentials request and returns the
// first error of its results.
func alterScram(ctx context.Context, cl *kgo.Client, req *kmsg.AlterUserSCRAMCredentialsRequest) error {
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return apiError("AlterUserScramCredentials", req.Key(), err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil && *r.ErrorMessage != "" {
				return fmt.Errorf("user %s: %w: %s", r.User, err, *r.ErrorMessage)
			}
			return fmt.Errorf("user %s: %w", r.User, err)
		}
	}
	return nil
}

// describeScram is the credentials of users (every user when none is
// named).
func describeScram(ctx context.Context, cl *kgo.Client, users []string) ([]kmsg.DescribeUserSCRAMCredentialsResponseResult, error) {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, apiError("DescribeUserScramCredentials", req.Key(), err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil && *resp.ErrorMessage != "" {
			return nil, fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
		return nil, err
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if errors.Is(err, kerr.ResourceNotFound) {
				return nil, fmt.Errorf("user %s: no such SCRAM user", r.User)
			}
			return nil, fmt.Errorf("user %s: %w", r.User, err)
		}
	}
	sort.Slice(resp.Results, func(i, j int) bool { return resp.Results[i].User < resp.Results[j].User })
	return resp.Results, nil
}

func scramMechanismName(t int8) string {
	if m, ok := auth.ScramMechanismByType(t); ok {
		return m.Name
	}
	return fmt.Sprintf("mechanism %d", t)
}

func newUserCreateCommand(bootstrap *string) *cobra.Command {
	var (
		mechanisms   []string
		iterations   int
		passwordFile string
		stdin        bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME (--password-file FILE | --password-stdin)",
		Short: "Create a SCRAM user, or set a new password for one",
		Long: `Create a SCRAM user with a password for each mechanism given, or
replace the credential of an existing user's mechanism (a new password, or
a new iteration count). The other mechanism, if the user has it, stays as
it was. The password comes from a file or stdin, up to its final line
break; an empty one is refused.`,
		Example: `  tributary user create alice --password-file alice.pw
  tributary user create alice --mechanism SCRAM-SHA-256 --mechanism SCRAM-SHA-512 --iterations 8192 --password-file alice.pw
  printf '%s' "$PW" | tributary user create bob --password-stdin`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringArrayVar(&mechanisms, "mechanism", nil, "SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; SCRAM-SHA-512 when not given)")
	cmd.Flags().IntVar(&iterations, "iterations", auth.ScramMinIterations, fmt.Sprintf("PBKDF2 iterations of the salted password (%d to %d, as Kafka)", auth.ScramMinIterations, auth.ScramMaxIterations))
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the password from FILE")
	cmd.Flags().BoolVar(&stdin, "password-stdin", false, "read the password from stdin")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		name := args[0]
		if strings.TrimSpace(name) == "" {
			return errors.New("the user name is empty")
		}
		mechs, err := scramMechanisms(mechanisms)
		if err != nil {
			return err
		}
		if err := checkScramIterations(iterations); err != nil {
			return fmt.Errorf("--iterations: %w", err)
		}
		pw, err := readPassword(cmd, passwordFile, stdin)
		if err != nil {
			return err
		}
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		var names []string
		for _, m := range mechs {
			u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			u.Name, u.Mechanism, u.Iterations = name, m.Type, int32(iterations)
			u.Salt, u.SaltedPassword = saltScram(m, pw, nil, u.Iterations)
			req.Upsertions = append(req.Upsertions, u)
			names = append(names, m.Name)
		}
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			if err := alterScram(ctx, cl, req); err != nil {
				return fmt.Errorf("creating %s: %w", name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s set (%d iterations)\n", name, strings.Join(names, ", "), iterations)
			return nil
		})
	}
	return cmd
}

func newUserListCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [NAME...]",
		Short: "List SCRAM users with their mechanisms and iterations",
		Long: `List the SCRAM users, one line per user and mechanism, with the
iteration count of its credential: every user, or the users named (an
unknown name is an error). Passwords and salts are never shown: the broker
does not give them out.`,
		Example: `  tributary user list
  tributary user list alice bob`,
	}
	cmd.RunE = func(cmd *cobra.Command, users []string) error {
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			results, err := describeScram(ctx, cl, users)
			if err != nil {
				return fmt.Errorf("listing users: %w", err)
			}
			if len(results) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no SCRAM users")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
			for _, r := range results {
				sort.Slice(r.CredentialInfos, func(i, j int) bool { return r.CredentialInfos[i].Mechanism < r.CredentialInfos[j].Mechanism })
				for _, c := range r.CredentialInfos {
					fmt.Fprintf(tw, "%s\t%s\t%d\n", r.User, scramMechanismName(c.Mechanism), c.Iterations)
				}
			}
			return tw.Flush()
		})
	}
	return cmd
}

func newUserDeleteCommand(bootstrap *string) *cobra.Command {
	var mechanisms []string
	cmd := &cobra.Command{
		Use:   "delete NAME [--mechanism M]...",
		Short: "Delete a SCRAM user's credentials: the mechanisms given, or all",
		Long: `Delete the credentials of one SCRAM user: those of the mechanisms
given, or every one the user has when none is given. Once deleted, the
user can no longer log in with that mechanism on any broker; connections
already authenticated stay until they close (or reauthenticate, with
connections.max.reauth.ms).`,
		Example: `  tributary user delete alice
  tributary user delete alice --mechanism SCRAM-SHA-256`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringArrayVar(&mechanisms, "mechanism", nil, "SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; every mechanism the user has when not given)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		name := args[0]
		var mechs []auth.ScramMechanism
		if len(mechanisms) > 0 {
			var err error
			if mechs, err = scramMechanisms(mechanisms); err != nil {
				return err
			}
		}
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			if mechs == nil {
				results, err := describeScram(ctx, cl, []string{name})
				if err != nil {
					return fmt.Errorf("deleting %s: %w", name, err)
				}
				for _, r := range results {
					for _, c := range r.CredentialInfos {
						if m, ok := auth.ScramMechanismByType(c.Mechanism); ok {
							mechs = append(mechs, m)
						}
					}
				}
			}
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			var names []string
			for _, m := range mechs {
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name, d.Mechanism = name, m.Type
				req.Deletions = append(req.Deletions, d)
				names = append(names, m.Name)
			}
			if err := alterScram(ctx, cl, req); err != nil {
				return fmt.Errorf("deleting %s: %w", name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s deleted\n", name, strings.Join(names, ", "))
			return nil
		})
	}
	return cmd
}
