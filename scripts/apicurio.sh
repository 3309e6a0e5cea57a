#!/usr/bin/env bash
# Fetch Apicurio Registry 2.6.13.Final (its Quarkus application, the
# "-all.zip" Maven Central holds: a runner jar and its lib/) and print the
# runner jar's path as the last line of stdout:
#
#   jar=$(scripts/apicurio.sh)
#   java -Dquarkus.http.port=8085 -jar "$jar"   # ccompat API at /apis/ccompat/v7
#
# (Apicurio 3.x is on Maven Central only as a jar to build an application
# from, with parts of it missing there; 2.6 is the newest that runs as it
# is. Its default storage is in memory, H2.)
#
# It is the independent registry of registry/differential_test.go: a
# Confluent-compatible API written by another team (Red Hat's), to compare
# Tributary's ids, verdicts and status codes with.
#
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/apicurio-$VERSION. Idempotent:
# a stamp file (written last) marks a complete install. Safe to run
# concurrently (flock). Progress and errors go to stderr. Needs Maven and
# Java 17+.
set -euo pipefail

VERSION=2.6.13.Final
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/apicurio-$VERSION"
stamp="$root/.complete"

log() { printf 'apicurio: %s\n' "$*" >&2; }
find_app() { find "$root/app" -maxdepth 1 -name '*-runner.jar' -print -quit; }
complete() { [[ -f "$stamp" && -d "$root/app" ]]; }

if complete; then
  find_app
  exit 0
fi
command -v mvn >/dev/null || { log "mvn not found (install Maven 3.8+ and Java 17+)"; exit 1; }
command -v unzip >/dev/null || { log "unzip not found"; exit 1; }
mkdir -p "$root"
exec 9>"$root/.lock"
if command -v flock >/dev/null; then flock 9; fi
if complete; then
  find_app
  exit 0
fi

start=$SECONDS
log "resolving io.apicurio:apicurio-registry-app:$VERSION:zip:all from Maven Central into $root ..."
tmp=$(mktemp -d "$root/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mvn -B -q -Dstyle.color=never dependency:copy \
  -Dartifact="io.apicurio:apicurio-registry-app:$VERSION:zip:all" -DoutputDirectory="$tmp" >&2
unzip -q "$tmp"/apicurio-registry-app-*.zip -d "$tmp/app"
[[ -n "$(find "$tmp/app" -maxdepth 1 -name '*-runner.jar' -print -quit)" ]] || { log "no runner jar in the zip"; exit 1; }
rm -rf "$root/app"
mv "$tmp/app" "$root/app"
echo "$VERSION" >"$stamp"
log "done in $((SECONDS - start))s"
find_app
