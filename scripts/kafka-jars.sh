#!/usr/bin/env bash
# Fetch Apache Kafka 4.4.0 (broker + tools + runtime dependencies) from Maven
# Central into a flat jar directory and print that directory as the last line
# of stdout:
#
#   lib=$(scripts/kafka-jars.sh)
#   java -cp "$lib/*" kafka.tools.DumpLogSegments --files 00000000000000000000.log
#
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kafka-4.4.0/{lib,config}.
# Idempotent: a stamp file (written last, holding the pom's hash) marks a
# complete cache; with it in place the script only prints the path. Safe to run
# concurrently (flock). Progress and errors go to stderr.
# See docs/kafka-reference.md for how to run the broker and tools from it.
set -euo pipefail

KAFKA_VERSION=4.4.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/kafka/pom.xml"
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kafka-$KAFKA_VERSION"
lib="$root/lib"
conf="$root/config"
stamp="$root/.complete"

log() { printf 'kafka-jars: %s\n' "$*" >&2; }

want=$(sha256sum "$pom" | cut -d' ' -f1)
complete() { [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$lib" ]]; }

if complete; then
  echo "$lib"
  exit 0
fi

command -v mvn >/dev/null || { log "mvn not found (install Maven 3.8+ and Java 17+)"; exit 1; }
command -v java >/dev/null || log "warning: java not found; the jars are useless without Java 17+"

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

log "resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION + kafka-tools:$KAFKA_VERSION from Maven Central into $lib ..."
start=$SECONDS
mvn -B -q -Dstyle.color=never -f "$pom" \
  dependency:copy-dependencies -DoutputDirectory="$tmp" >&2

for j in "kafka_2.13-$KAFKA_VERSION.jar" "kafka-tools-$KAFKA_VERSION.jar" \
         "kafka-clients-$KAFKA_VERSION.jar" "kafka-server-$KAFKA_VERSION.jar" \
         "kafka-storage-$KAFKA_VERSION.jar" "kafka-raft-$KAFKA_VERSION.jar"; do
  [[ -f "$tmp/$j" ]] || { log "missing $j after mvn; not marking the cache complete"; exit 1; }
done
ls "$tmp"/log4j-slf4j-impl-*.jar "$tmp"/log4j-core-*.jar "$tmp"/scala-library-*.jar >/dev/null

rm -rf "$lib"
mv "$tmp" "$lib"
trap - EXIT

# A log4j2 configuration logging to stderr; the level is a system property:
#   java -Dlog4j2.configurationFile="$conf/log4j2.properties" -Dkafka.log.level=WARN ...
mkdir -p "$conf"
cat >"$conf/log4j2.properties" <<'PROPS'
# Written by scripts/kafka-jars.sh. Everything to stderr, one line per event.
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ${sys:kafka.log.level:-INFO}
rootLogger.appenderRef.stderr.ref = STDERR
logger.kafka.name = kafka
logger.kafka.level = ${sys:kafka.log.level:-INFO}
logger.apache.name = org.apache.kafka
logger.apache.level = ${sys:kafka.log.level:-INFO}
PROPS

echo "$want" >"$stamp"
log "done in $((SECONDS - start))s: $(ls "$lib" | wc -l) jars, $(du -sh "$lib" | cut -f1)"
echo "$lib"
