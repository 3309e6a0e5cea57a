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

# shellcheck source=lib/maven-jars.sh
source "$here/lib/maven-jars.sh"

# A log4j2 configuration logging to stderr; the level is a system property:
#   java -Dlog4j2.configurationFile="$conf/log4j2.properties" -Dkafka.log.level=WARN ...
write_config() {
  command -v java >/dev/null || echo "kafka-jars: warning: java not found; the jars are useless without Java 17+" >&2
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
}

maven_jars --log kafka-jars --dir "$lib" --pom "$pom" --stamp "$root/.complete" \
  --what "org.apache.kafka:kafka_2.13:$KAFKA_VERSION + kafka-tools:$KAFKA_VERSION" \
  --need "kafka_2.13-$KAFKA_VERSION.jar" --need "kafka-tools-$KAFKA_VERSION.jar" \
  --need "kafka-clients-$KAFKA_VERSION.jar" --need "kafka-server-$KAFKA_VERSION.jar" \
  --need "kafka-storage-$KAFKA_VERSION.jar" --need "kafka-raft-$KAFKA_VERSION.jar" \
  --need "log4j-slf4j-impl-*.jar" --need "log4j-core-*.jar" --need "scala-library-*.jar" \
  --then write_config || exit 1
echo "$lib"
