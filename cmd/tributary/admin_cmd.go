package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/admin"
)

// newAdminCommand talks to a running daemon's admin endpoint. "admin
// health" is the container HEALTHCHECK: distroless images have no curl,
// so the binary probes itself.
func newAdminCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Probe a running daemon's admin endpoint and change its log level",
		Long: `Talk to the admin endpoint of a running broker, tracker or jobs daemon
(their --admin-listen): check its health, read or change its log level.

--admin-listen takes the same value as the daemon's, also from the
environment (TRIBUTARY_ADMIN_LISTEN) or the --config file (admin.listen), so
a container or unit that sets it once for the daemon probes the same
address. A wildcard host (0.0.0.0, [::]) is reached on loopback.`,
		Example: `  # Exit 0 if the broker's admin endpoint says it is alive, 1 if not.
  tributary admin health

  # Readiness of a tracker (503 while its spool is full).
  tributary admin health --ready --admin-listen 127.0.0.1:9645

  # Debug logging on a running broker, then back.
  tributary admin loglevel debug
  tributary admin loglevel info`,
	}
	cmd.AddCommand(newAdminHealthCommand(), newAdminLogLevelCommand())
	return cmd
}

func addAdminTargetFlags(cmd *cobra.Command, addr *string, timeout *time.Duration) {
	cmd.Flags().StringVar(addr, "admin-listen", "127.0.0.1:9644", "the daemon's admin address (broker 9644, tracker 9645, jobs 9646)")
	cmd.Flags().DurationVar(timeout, "timeout", 3*time.Second, "how long to wait for an answer")
	// The same keys as the daemon's, so that one config file serves both.
	addAdminAccessFlags(cmd.Flags())
}

// adminURL is the URL of path on the admin endpoint at listen.
func adminURL(listen, path string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--admin-listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}

func adminDo(ctx context.Context, method, url, body string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	token, err := admin.ReadToken(adminAccess.token, adminAccess.tokenFile)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

func newAdminHealthCommand() *cobra.Command {
	var (
		addr    string
		timeout time.Duration
		ready   bool
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 if the daemon is alive (/healthz), or ready with --ready (/readyz)",
		Long: `Ask the daemon's /healthz (or /readyz with --ready) and exit 0 on a 2xx
answer, 1 otherwise, printing the answer. It is the HEALTHCHECK of the
container image, which has no shell and no curl.`,
		Example: `  tributary admin health --admin-listen 127.0.0.1:9644
  TRIBUTARY_ADMIN_LISTEN=0.0.0.0:9645 tributary admin health --ready`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/healthz"
			if ready {
				path = "/readyz"
			}
			url, err := adminURL(addr, path)
			if err != nil {
				return err
			}
			code, body, err := adminDo(cmd.Context(), http.MethodGet, url, "", timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			if code/100 != 2 {
				return fmt.Errorf("%s: %d %s", url, code, body)
			}
			fmt.Fprintln(cmd.OutOrStdout(), body)
			return nil
		},
	}
	addAdminTargetFlags(cmd, &addr, &timeout)
	cmd.Flags().BoolVar(&ready, "ready", false, "ask /readyz (ready for traffic) instead of /healthz (alive)")
	return cmd
}

func newAdminLogLevelCommand() *cobra.Command {
	var (
		addr    string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "loglevel [debug|info|warn|error]",
		Short: "Print a running daemon's log level, or change it",
		Long: `Print the log level of a running daemon (GET /loglevel), or change it
without a restart (PUT /loglevel), as Kafka allowed through JMX. The change
lasts until the process stops; --log-level sets the level at start.`,
		Example: `  tributary admin loglevel
  tributary admin loglevel debug --admin-listen 127.0.0.1:9645`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url, err := adminURL(addr, "/loglevel")
			if err != nil {
				return err
			}
			method, body := http.MethodGet, ""
			if len(args) == 1 {
				method, body = http.MethodPut, args[0]
			}
			code, resp, err := adminDo(cmd.Context(), method, url, body, timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			if code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", url, code, resp)
			}
			fmt.Fprintln(cmd.OutOrStdout(), resp)
			return nil
		},
	}
	addAdminTargetFlags(cmd, &addr, &timeout)
	return cmd
}
