#!/usr/bin/env bash
# Minify tracker/js/tracker.js into tracker/js/tracker.min.js, the file that
# `tributary tracker` serves at /tracker.js (embedded in the binary, so the
# build needs no Node). Run it after every change to tracker.js:
#
#   bash scripts/tracker-js.sh            # writes tracker/js/tracker.min.js
#   bash scripts/tracker-js.sh OUT        # writes OUT instead (the tests)
#
# The first line of the output names the SHA-256 of the source it was made
# from; tracker/js's tests fail when it does not match tracker.js, and
# tracker/e2e's when a fresh minification differs from the committed file.
# terser comes pinned from scripts/node-deps.sh.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/tracker/js/tracker.js"
out="${1:-$root/tracker/js/tracker.min.js}"
modules=$(bash "$root/scripts/node-deps.sh" | tail -n 1)
version=$(sed -n "s/.*VERSION = '\([^']*\)'.*/\1/p" "$src" | head -n 1)
sum=$(sha256sum "$src" | cut -d' ' -f1)

# ecma 5 keeps the output as old-browser-safe as the source; toplevel
# mangling is safe because everything is inside one function.
{
  echo "/*! tributary.js $version | source sha256 $sum */"
  node "$modules/terser/bin/terser" "$src" --compress passes=2 --mangle --ecma 5
} >"$out.tmp"
mv "$out.tmp" "$out"
printf 'tracker-js: %s: %d bytes, %d gzipped\n' "$out" "$(wc -c <"$out")" "$(gzip -9c "$out" | wc -c)" >&2
