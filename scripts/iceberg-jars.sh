#!/usr/bin/env bash
# Fetch Apache Iceberg 1.10.1 (iceberg-core, iceberg-parquet, iceberg-data)
# and hadoop-common from Maven Central into a flat jar directory, for the
# Java reference reader (formats/iceberg/testdata/java/ReadIceberg.java),
# and print that directory as the last line of stdout:
#
#   lib=$(scripts/iceberg-jars.sh | tail -1)
#   javac -cp "$lib/*" -d classes ReadIceberg.java
#   java -cp "classes:$lib/*" ReadIceberg file:///tmp/lake/clicks 0
#
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/iceberg-1.10.1/lib.
# Idempotent (a stamp holding the pom's hash marks a complete cache) and
# safe to run concurrently (flock). Progress and errors go to stderr.
set -euo pipefail

ICEBERG_VERSION=1.10.1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/iceberg/pom.xml"
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/iceberg-$ICEBERG_VERSION"
lib="$root/lib"
stamp="$root/.complete"

log() { printf 'iceberg-jars: %s\n' "$*" >&2; }

want=$(sha256sum "$pom" | cut -d' ' -f1)
complete() { [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$lib" ]]; }

if complete; then
  echo "$lib"
  exit 0
fi

command -v mvn >/dev/null || { log "mvn not found (install Maven 3.8+ and Java 17+)"; exit 1; }

mkdir -p "$root"
exec 9>"$root/.lock"
if command -v flock >/dev/null; then flock 9; fi
if complete; then # another process finished while we waited
  echo "$lib"
  exit 0
fi

rm -f "$stamp"
tmp=$(mktemp -d "$root/lib.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

log "resolving org.apache.iceberg:iceberg-core/parquet/data:$ICEBERG_VERSION from Maven Central into $lib ..."
start=$SECONDS
mvn -B -q -Dstyle.color=never -f "$pom" \
  dependency:copy-dependencies -DoutputDirectory="$tmp" >&2

for j in "iceberg-core-$ICEBERG_VERSION.jar" "iceberg-parquet-$ICEBERG_VERSION.jar" \
         "iceberg-data-$ICEBERG_VERSION.jar"; do
  [[ -f "$tmp/$j" ]] || { log "missing $j after mvn; not marking the cache complete"; exit 1; }
done
ls "$tmp"/hadoop-common-*.jar "$tmp"/parquet-hadoop-*.jar >/dev/null

rm -rf "$lib"
mv "$tmp" "$lib"
trap - EXIT

echo "$want" >"$stamp"
log "done in $((SECONDS - start))s: $(ls "$lib" | wc -l) jars, $(du -sh "$lib" | cut -f1)"
echo "$lib"
