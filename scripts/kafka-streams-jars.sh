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
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kafka-$KAFKA_VERSION"
lib="$root/streams-lib"

# shellcheck source=lib/maven-jars.sh
source "$here/lib/maven-jars.sh"
# No stamp: the directory holding the jar is complete (it appears by rename).
maven_jars --log kafka-streams-jars --dir "$lib" \
  --artifact "org.apache.kafka:kafka-streams:$KAFKA_VERSION" \
  --need "kafka-streams-$KAFKA_VERSION.jar" || exit 1
echo "$lib"
