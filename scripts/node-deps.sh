#!/usr/bin/env bash
# Install the Node packages the tests need (scripts/node/package.json, pinned
# by its package-lock.json, from the npm registry) and print their
# node_modules directory as the last line of stdout:
#
#   NODE_PATH=$(scripts/node-deps.sh) node tracker/e2e/testdata/segment.js
#
# They are Segment's libraries (@segment/analytics-node and analytics-node,
# for the tracker's compatibility test), Confluent's schema registry client
# (@confluentinc/schemaregistry, registry/node_test.go), terser
# (scripts/tracker-js.sh minifies tracker.js with it) and axe-core (the
# console's accessibility checks, console/browser_test.go).
#
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/node. Idempotent: a stamp
# file (written last, holding the hash of package.json, package-lock.json and
# the Node major version) marks a complete install; with it in place the
# script only prints the path. Safe to run concurrently (flock). Progress and
# errors go to stderr. Needs node 20+ and npm.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src="$here/node"
dir="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/node"
stamp="$dir/.complete"

log() { printf 'node-deps: %s\n' "$*" >&2; }

command -v node >/dev/null || { log "node not found (install Node.js 20+ with npm)"; exit 1; }
command -v npm >/dev/null || { log "npm not found (install Node.js 20+ with npm)"; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 20)) || { log "node $(node --version) is too old: @segment/analytics-node needs 20+"; exit 1; }
want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1) node$major"
complete() { [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$dir/node_modules" ]]; }

if complete; then
  echo "$dir/node_modules"
  exit 0
fi

mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
if command -v flock >/dev/null; then flock 9; fi
if complete; then # another process finished while we waited
  echo "$dir/node_modules"
  exit 0
fi

start=$SECONDS
log "installing $(node -p 'Object.entries(require(process.argv[1]).dependencies).map(([n, v]) => n + "@" + v).join(" ")' "$src/package.json") into $dir ..."
rm -rf "$dir"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
# npm ci installs exactly the lock file; no package needs an install script.
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
NODE_PATH="$dir/node_modules" node -e '
  for (const p of ["@segment/analytics-node", "analytics-node", "@confluentinc/schemaregistry", "terser", "axe-core"])
    console.error(p, require(p + "/package.json").version)' >&2

echo "$want" >"$stamp"
log "done in $((SECONDS - start))s"
echo "$dir/node_modules"
