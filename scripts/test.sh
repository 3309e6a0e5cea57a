#!/usr/bin/env bash
# make test: fetch what the tests need, run every test with -race, then each
# fuzz target for a few seconds, and end with one line that says what could
# not run.
#
# The fetched parts land in ${TRIBUTARY_CACHE:-~/.cache/tributary}, once:
# Apache Kafka's jars from Maven Central (scripts/kafka-jars.sh, needs Java
# 17+ and Maven), Apache Iceberg's for the Java reference reader
# (scripts/iceberg-jars.sh), a Python venv from PyPI (scripts/python-deps.sh) and the
# Node packages from npm (scripts/node-deps.sh, needs Node 20+). A part that
# cannot be fetched is said so here, and the tests needing it skip (or fail
# under CI). Debian packages (chromium for the tracker.js browser test,
# systemd for systemd-analyze) are not installed here: the summary names
# them when they are missing; CI installs them (.ci/run).
#
# Environment: GO (default go), PKGS (default ./...: the packages to test
# and fuzz), TEST_FUZZTIME (default 3s), and
# TRIBUTARY_KAFKA_LIB, TRIBUTARY_KAFKA_STREAMS_LIB, TRIBUTARY_ICEBERG_LIB, TRIBUTARY_PYTHON,
# TRIBUTARY_NODE_MODULES to use parts
# of your own instead of fetching.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
TEST_FUZZTIME=${TEST_FUZZTIME:-3s}
# The loader's and the cluster's packages go first: they take the longest
# (HDFS, pyarrow, three-node clusters), and go test starts packages in the
# order it is given them, so they overlap the many short ones instead of
# running alone at the end.
read -r -a pkgs <<<"${PKGS:-./loader/ ./broker/cluster/ ./...}"

# fetch VAR script: run the script unless VAR is set, and export its last
# line of stdout (the path it prints) as VAR.
unfetched=()
fetch() {
  local var=$1 script=$2 path
  if [[ -n "${!var:-}" ]]; then
    echo "--- $var=${!var} (set by you)"
    return
  fi
  echo "--- scripts/$script"
  if path=$(bash "scripts/$script" | tail -n 1) && [[ -n "$path" ]]; then
    export "$var=$path"
    echo "$var=$path"
  else
    echo "scripts/$script failed (above); the tests that need it will skip"
    unfetched+=("$script")
  fi
}
fetch TRIBUTARY_KAFKA_LIB kafka-jars.sh
fetch TRIBUTARY_KAFKA_STREAMS_LIB kafka-streams-jars.sh
fetch TRIBUTARY_ICEBERG_LIB iceberg-jars.sh
fetch TRIBUTARY_PYTHON python-deps.sh
fetch TRIBUTARY_NODE_MODULES node-deps.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/testsummary" ./scripts/testsummary || exit 1

echo "--- $GO test -race ${pkgs[*]}"
# -json keeps each test's end and skip reason machine-readable; testsummary
# prints what a plain go test would, and the summary line at the end.
# -timeout is per package: broker/cluster's (three-node clusters) takes
# 6-7 minutes and the loader's (HDFS, pyarrow reading the lake back) 4-5 on
# 2 cores shared with the rest, near go test's default of 10.
"$GO" test -race -timeout 25m -json "${pkgs[@]}" 2>&1 | "$tmp/testsummary" -summary "$tmp/summary"
status=$?

if ((status == 0)); then
  echo "--- fuzz targets for $TEST_FUZZTIME each"
  make --no-print-directory fuzz FUZZTIME="$TEST_FUZZTIME" PKGS="${pkgs[*]}" || status=$?
fi

echo "--- make test summary"
line=$(cat "$tmp/summary" 2>/dev/null || echo "tests: no summary (testsummary failed)")
if ((${#unfetched[@]} > 0)); then
  line+="; could not fetch: ${unfetched[*]}"
fi
echo "$line"
if ((status != 0)); then
  echo "make test: FAILED"
fi
exit "$status"
