#!/usr/bin/env bash
# Fetch Apache Kafka Streams 4.4.0 from Maven Central into its own jar
# directory and print that directory as the last line of stdout:
#
#   lib=$(scripts/kafka-jars.sh | tail -1); streams=$(scripts/kafka-streams-jars.sh | tail -1)
#   java -cp "classes:$streams/*:$lib/*" MyStreamsApp
#
# Only the kafka-streams jar: its runtime dependencies (kafka-clients,
# slf4j) are in scripts/kafka-jars.sh's directory already, and RocksDB is
# left out on purpose (tests use in-memory stores, so no 60 MB native
# library). Kept apart from kafka-jars.sh so that adding it does not
# invalidate that cache, which every JVM test shares.
#
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kafka-4.4.0/streams-lib.
set -euo pipefail

KAFKA_VERSION=4.4.0
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kafka-$KAFKA_VERSION"
lib="$root/streams-lib"
jar="kafka-streams-$KAFKA_VERSION.jar"

if [[ -f "$lib/$jar" ]]; then
  echo "$lib"
  exit 0
fi
command -v mvn >/dev/null || { echo "kafka-streams-jars: mvn not found (install Maven 3.8+)" >&2; exit 1; }
mkdir -p "$root"
tmp=$(mktemp -d "$root/streams-lib.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mvn -B -q -Dstyle.color=never dependency:copy \
  -Dartifact="org.apache.kafka:kafka-streams:$KAFKA_VERSION" -DoutputDirectory="$tmp" >&2
[[ -f "$tmp/$jar" ]] || { echo "kafka-streams-jars: $jar missing after mvn" >&2; exit 1; }
# The first of concurrent runs wins; the others find the directory in place.
mv -T "$tmp" "$lib" 2>/dev/null || true
trap - EXIT
rm -rf "$tmp"
echo "$lib"
