package console

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tributary-io/tributary/internal/testbroker"
)

const howToGetAxe = "install Node.js 20+ with npm, then run scripts/node-deps.sh " +
	"(axe-core from npm into ~/.cache/tributary), or set TRIBUTARY_NODE_MODULES to its node_modules"

// axeSource is axe-core's script from the node_modules of
// scripts/node-deps.sh: injected into each page by the test (DevTools, not
// the page, so the console's CSP stays as strict as it is), never served
// by the console.
func axeSource(t *testing.T) string {
	t.Helper()
	modules := os.Getenv("TRIBUTARY_NODE_MODULES")
	if modules == "" {
		_, err := exec.LookPath("npm")
		testbroker.Require(t, err == nil, "npm", howToGetAxe)
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(testbroker.RepoRoot(), "scripts", "node-deps.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		testbroker.Require(t, err == nil, "the Node packages of scripts/node-deps.sh", fmt.Sprintf("%s (%v: %s)", howToGetAxe, err, stderr.String()))
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		modules = strings.TrimSpace(lines[len(lines)-1])
	}
	b, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js"))
	testbroker.Require(t, err == nil, "axe-core in "+modules, howToGetAxe)
	return string(b)
}

// axeCheck runs axe-core on the page the tab shows and returns the
// violations of serious or critical impact, one line each (rule, impact,
// and the elements). WCAG 2 A and AA rules and axe's best practices.
func axeCheck(ctx context.Context, src string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+"\n;true")); err != nil {
		return nil, fmt.Errorf("injecting axe-core: %w", err)
	}
	const run = `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}, resultTypes: ['violations']})
  .then(r => r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.slice(0, 5).map(n => n.target.join(' ')).join(', ')))`
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](run, chromedp.EvalAwaitPromise))
}
