package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/sr"
)

// The schema commands speak the Confluent Schema Registry API (Tributary's,
// or any other) through franz-go's sr client, as rpk's registry commands do.

func newSchemaCommand() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Register, read, check and delete schemas in a schema registry",
		Long: `Manage the schemas of a Confluent-compatible schema registry: Tributary's own
(schema.registry.listeners, tributary dev, tributary registry) or any other.
Subjects are usually <topic>-value and <topic>-key. docs/registry.md has the API
and the compatibility rules.`,
		Example: `  tributary schema register orders-value --file order.avsc
  tributary schema register orders-value --file order.proto --type protobuf --ref shop/money.proto=money-value:1
  tributary schema list
  tributary schema get orders-value --version latest
  tributary schema check orders-value --file order-v2.avsc
  tributary schema config orders-value --set FULL_TRANSITIVE
  tributary schema delete orders-value --version 1 --permanent`,
	}
	cmd.PersistentFlags().StringVar(&url, "registry", "http://127.0.0.1:8081", "schema registry URL")
	client := func() (*sr.Client, error) { return sr.NewClient(sr.URLs(url)) }
	cmd.AddCommand(
		newSchemaRegisterCommand(client),
		newSchemaListCommand(client),
		newSchemaGetCommand(client),
		newSchemaCheckCommand(client),
		newSchemaDeleteCommand(client),
		newSchemaConfigCommand(client),
		newSchemaModeCommand(client),
	)
	return cmd
}

type srClientFunc func() (*sr.Client, error)

func schemaCtx(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), 30*time.Second)
}

// schemaFlags are the schema a command sends: its file, type and
// references.
type schemaFlags struct {
	file, typ string
	refs      []string
}

func (f *schemaFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "file", "", "the schema's file (- for stdin); required")
	cmd.Flags().StringVar(&f.typ, "type", "", "avro, json or protobuf (default: from the file's extension, .avsc .json .proto, else avro)")
	cmd.Flags().StringSliceVar(&f.refs, "ref", nil, "a reference, name=subject:version (repeatable)")
}

func (f *schemaFlags) schema() (sr.Schema, error) {
	if f.file == "" {
		return sr.Schema{}, errors.New("--file is required")
	}
	var b []byte
	var err error
	if f.file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(f.file)
	}
	if err != nil {
		return sr.Schema{}, err
	}
	typ := strings.ToLower(f.typ)
	if typ == "" {
		switch filepath.Ext(f.file) {
		case ".proto":
			typ = "protobuf"
		case ".json":
			typ = "json"
		default:
			typ = "avro"
		}
	}
	s := sr.Schema{Schema: string(b)}
	if err := s.Type.UnmarshalText([]byte(typ)); err != nil {
		return sr.Schema{}, fmt.Errorf("--type %q: want avro, json or protobuf", f.typ)
	}
	for _, r := range f.refs {
		name, sv, ok1 := strings.Cut(r, "=")
		subject, v, ok2 := strings.Cut(sv, ":")
		ver, err := strconv.Atoi(v)
		if !ok1 || !ok2 || err != nil || name == "" || subject == "" {
			return sr.Schema{}, fmt.Errorf("--ref %q: want name=subject:version", r)
		}
		s.References = append(s.References, sr.SchemaReference{Name: name, Subject: subject, Version: ver})
	}
	return s, nil
}

// parseSchemaVersion accepts a version number, latest or -1.
func parseSchemaVersion(v string) (int, error) {
	if v == "" || v == "latest" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n == 0 || n < -1 {
		return 0, fmt.Errorf("--version %q: want a version number or latest", v)
	}
	return n, nil
}

func newSchemaRegisterCommand(client srClientFunc) *cobra.Command {
	var f schemaFlags
	var normalize bool
	cmd := &cobra.Command{
		Use:   "register SUBJECT --file FILE",
		Short: "Register a schema under a subject (or find it registered); prints its id and version",
		Long: `Register the schema in FILE under SUBJECT. The registry checks it against the
subject's compatibility level first and answers 409 with the reasons when it
is incompatible. Registering a schema the subject already has is not an
error: its id and version are printed again. --type says how to read FILE
(avro, the default, json or protobuf); --ref names schemas it imports.`,
		Example: `  tributary schema register orders-value --file order.avsc
  tributary schema register signups-value --file signup.json --type json --normalize`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.schema()
			if err != nil {
				return err
			}
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			if normalize {
				ctx = sr.WithParams(ctx, sr.Normalize)
			}
			got, err := cl.CreateSchema(ctx, args[0], s)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "subject %s version %d id %d\n", got.Subject, got.Version, got.ID)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&normalize, "normalize", false, "store the normalized form (layout-insensitive ids)")
	return cmd
}

func newSchemaListCommand(client srClientFunc) *cobra.Command {
	var deleted bool
	var prefix string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List subjects with their versions",
		Long: `List the registry's subjects, each with the versions it holds; --prefix keeps
those whose name starts with it, --deleted adds soft-deleted ones.`,
		Example: `  tributary schema list --prefix orders`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			if deleted {
				ctx = sr.WithParams(ctx, sr.ShowDeleted)
			}
			subjects, err := cl.Subjects(ctx)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, s := range subjects {
				if !strings.HasPrefix(s, prefix) {
					continue
				}
				vs, err := cl.SubjectVersions(ctx, s)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s\t%s\n", s, strings.Trim(fmt.Sprint(vs), "[]"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&deleted, "deleted", false, "include soft-deleted subjects and versions")
	cmd.Flags().StringVar(&prefix, "prefix", "", "only subjects that start with this")
	return cmd
}

func newSchemaGetCommand(client srClientFunc) *cobra.Command {
	var version string
	var id int
	var text bool
	cmd := &cobra.Command{
		Use:   "get [SUBJECT]",
		Short: "Print a subject's version, or the schema of an id, as JSON",
		Long: `Print one version of SUBJECT (the latest unless --version says otherwise) as
the registry returns it: subject, version, id, type and schema. With --id, the
schema of that global id instead; --schema-only prints just the schema text,
ready to be saved to a file.`,
		Example: `  tributary schema get orders-value
  tributary schema get orders-value --version 2 --schema-only > order-v2.avsc
  tributary schema get --id 7`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			w := cmd.OutOrStdout()
			switch {
			case id > 0 && len(args) == 0:
				s, err := cl.SchemaByID(ctx, id)
				if err != nil {
					return err
				}
				if text {
					_, err = fmt.Fprintln(w, s.Schema)
					return err
				}
				return printJSON(w, s)
			case id == 0 && len(args) == 1:
				v, err := parseSchemaVersion(version)
				if err != nil {
					return err
				}
				s, err := cl.SchemaByVersion(ctx, args[0], v)
				if err != nil {
					return err
				}
				if text {
					_, err = fmt.Fprintln(w, s.Schema.Schema)
					return err
				}
				return printJSON(w, s)
			}
			return errors.New("give a SUBJECT (and --version) or --id")
		},
	}
	cmd.Flags().StringVar(&version, "version", "latest", "the subject's version: a number or latest")
	cmd.Flags().IntVar(&id, "id", 0, "the schema with this id, instead of a subject's version")
	cmd.Flags().BoolVar(&text, "schema-only", false, "print only the schema's text")
	return cmd
}

func newSchemaCheckCommand(client srClientFunc) *cobra.Command {
	var f schemaFlags
	var version string
	cmd := &cobra.Command{
		Use:   "check SUBJECT --file FILE",
		Short: "Check whether a schema may be registered under a subject; exits 1 if not",
		Long: `Ask the registry whether the schema in FILE is compatible with SUBJECT under
its compatibility level (against the latest version, or --version), without
registering it. Prints the verdict and the reasons; exits 1 when it is not
compatible, so that CI can gate a schema change on it.`,
		Example: `  tributary schema check orders-value --file order-v2.avsc
  tributary schema check orders-value --file order-v2.avsc --version 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.schema()
			if err != nil {
				return err
			}
			v, err := parseSchemaVersion(version)
			if err != nil {
				return err
			}
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), args[0], v, s)
			if err != nil {
				return err
			}
			if !res.Is {
				return fmt.Errorf("incompatible with %s:\n  %s", args[0], strings.Join(res.Messages, "\n  "))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compatible with %s\n", args[0])
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&version, "version", "latest", "the version to check against: a number or latest (the level's direction)")
	return cmd
}

func newSchemaDeleteCommand(client srClientFunc) *cobra.Command {
	var version string
	var permanent bool
	cmd := &cobra.Command{
		Use:   "delete SUBJECT",
		Short: "Soft-delete a subject or one version; --permanent after a soft delete removes it",
		Long: `Soft-delete a subject (every version) or, with --version, one version. A
soft-deleted version keeps its id readable; --permanent removes it for good
and must follow a soft delete. A version another schema references cannot be
deleted (422, error code 42206).`,
		Example: `  tributary schema delete orders-value
  tributary schema delete orders-value --permanent
  tributary schema delete orders-value --version 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			how := sr.SoftDelete
			if permanent {
				how = sr.HardDelete
			}
			w := cmd.OutOrStdout()
			if version == "" {
				vs, err := cl.DeleteSubject(ctx, args[0], how)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "deleted %s versions %s\n", args[0], strings.Trim(fmt.Sprint(vs), "[]"))
				return nil
			}
			v, err := parseSchemaVersion(version)
			if err != nil {
				return err
			}
			if err := cl.DeleteSchema(ctx, args[0], v, how); err != nil {
				return err
			}
			fmt.Fprintf(w, "deleted %s version %s\n", args[0], version)
			return nil
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "delete only this version (a number or latest)")
	cmd.Flags().BoolVar(&permanent, "permanent", false, "delete for good (after a soft delete)")
	return cmd
}

func newSchemaConfigCommand(client srClientFunc) *cobra.Command {
	var set string
	var reset bool
	cmd := &cobra.Command{
		Use:   "config [SUBJECT]",
		Short: "Print or set the compatibility level, global or of a subject",
		Long: `Print the compatibility level (global without SUBJECT; a subject without its
own level prints the global one), set it with --set (NONE, BACKWARD, FORWARD,
FULL, each _TRANSITIVE) or remove a subject's own level with --reset.`,
		Example: `  tributary schema config
  tributary schema config orders-value --set FULL_TRANSITIVE
  tributary schema config orders-value --reset`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			var rs []sr.CompatibilityResult
			switch {
			case set != "":
				var l sr.CompatibilityLevel
				if err := l.UnmarshalText([]byte(strings.ToUpper(set))); err != nil {
					return fmt.Errorf("--set %q: %w", set, err)
				}
				rs = cl.SetCompatibility(ctx, sr.SetCompatibility{Level: l}, args...)
			case reset:
				rs = cl.ResetCompatibility(ctx, args...)
			default:
				rs = cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), args...)
			}
			for _, r := range rs {
				if r.Err != nil {
					return r.Err
				}
				name := r.Subject
				if name == "" {
					name = "(global)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", name, r.Level)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&set, "set", "", "the level to set")
	cmd.Flags().BoolVar(&reset, "reset", false, "remove the subject's own level (the global one applies)")
	return cmd
}

func newSchemaModeCommand(client srClientFunc) *cobra.Command {
	var set string
	var reset bool
	cmd := &cobra.Command{
		Use:   "mode [SUBJECT]",
		Short: "Print or set the mode (READWRITE, READONLY, IMPORT), global or of a subject",
		Long: `Print the registry's mode, global without SUBJECT or of one subject, or set it
with --set. READONLY refuses registrations; IMPORT lets a migration register
schemas under the ids they had in another registry; --reset returns a
subject to the global mode.`,
		Example: `  tributary schema mode
  tributary schema mode --set IMPORT
  tributary schema mode orders-value --set READONLY`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			ctx, cancel := schemaCtx(cmd)
			defer cancel()
			var rs []sr.ModeResult
			switch {
			case set != "":
				var m sr.Mode
				if err := m.UnmarshalText([]byte(strings.ToUpper(set))); err != nil {
					return fmt.Errorf("--set %q: %w", set, err)
				}
				rs = cl.SetMode(ctx, m, args...)
			case reset:
				rs = cl.ResetMode(ctx, args...)
			default:
				rs = cl.Mode(sr.WithParams(ctx, sr.DefaultToGlobal), args...)
			}
			for _, r := range rs {
				if r.Err != nil {
					return r.Err
				}
				name := r.Subject
				if name == "" {
					name = "(global)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", name, r.Mode)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&set, "set", "", "the mode to set")
	cmd.Flags().BoolVar(&reset, "reset", false, "remove the subject's own mode")
	return cmd
}
