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

# shellcheck source=lib/maven-jars.sh
source "$here/lib/maven-jars.sh"
maven_jars --log iceberg-jars --dir "$lib" --pom "$pom" --stamp "$root/.complete" \
  --what "org.apache.iceberg:iceberg-core/parquet/data:$ICEBERG_VERSION" \
  --need "iceberg-core-$ICEBERG_VERSION.jar" --need "iceberg-parquet-$ICEBERG_VERSION.jar" \
  --need "iceberg-data-$ICEBERG_VERSION.jar" \
  --need "hadoop-common-*.jar" --need "parquet-hadoop-*.jar" || exit 1
echo "$lib"
