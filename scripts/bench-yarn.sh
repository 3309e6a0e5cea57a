#!/usr/bin/env bash
# Load throughput on YARN with 1, 2 and 4 worker containers against the
# local executor with the same parallelism, on the same input, and the
# submission overhead (plan saved to first worker container running), for
# docs/PERFORMANCE.md ("Loads on YARN"). Not a test: it prints a table.
#
#   scripts/bench-yarn.sh            # RECORDS=500000 SIZE=200 PARTITIONS=12
#
# It builds tributary (no -race), starts the test HDFS and YARN
# (scripts/hdfs-up.sh, scripts/yarn-up.sh) and one broker, writes RECORDS
# random records of SIZE bytes over PARTITIONS partitions (tributary perf
# produce), then loads the whole topic once per row (--format raw: the
# loader's cost without decoding), each row a job of its own into its own
# target dir. The YARN rows share one staging dir: the first uploads the
# binary ("yarn 1, upload"), the others find it there. Everything runs on
# this one machine, so YARN cannot be faster here; the rows show the
# overhead, and how the containers share the machine's cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RECORDS=${RECORDS:-500000}
SIZE=${SIZE:-200}
PARTITIONS=${PARTITIONS:-12}
ROWS=${ROWS:-"local:1 local:2 local:4 yarn:1 yarn:1 yarn:2 yarn:4"}

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-yarn.XXXXXX")
bpid=
cleanup() {
  [[ -n "$bpid" ]] && kill "$bpid" 2>/dev/null && wait "$bpid" 2>/dev/null
  [[ -n "${YARN_STATE:-}" ]] && bash scripts/yarn-down.sh "$YARN_STATE" >/dev/null 2>&1
  [[ -n "${HDFS_STATE:-}" ]] && bash scripts/hdfs-down.sh "$HDFS_STATE" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
log() { printf 'bench-yarn: %s\n' "$*" >&2; }

log "building tributary ..."
go build -o "$work/tributary" ./cmd/tributary
bin="$work/tributary"
eval "$(HDFS_OWNER_PID=$$ bash scripts/hdfs-up.sh)"
eval "$(HDFS_NAMENODE=$HDFS_NAMENODE YARN_OWNER_PID=$$ bash scripts/yarn-up.sh)"
port=$((20000 + RANDOM % 10000))
"$bin" broker --listeners "PLAINTEXT://127.0.0.1:$port" --log-dirs "$work/broker" >"$work/broker.log" 2>&1 &
bpid=$!
for _ in $(seq 100); do
  "$bin" topic list -b "127.0.0.1:$port" >/dev/null 2>&1 && break
  sleep 0.2
done
"$bin" topic create bench -p "$PARTITIONS" -b "127.0.0.1:$port" >/dev/null
log "producing $RECORDS records of $SIZE bytes over $PARTITIONS partitions ..."
"$bin" perf produce --topic bench --records "$RECORDS" --record-size "$SIZE" -b "127.0.0.1:$port" | tail -1 >&2

staging="hdfs://$HDFS_NAMENODE/tmp/bench-yarn-$$/staging"
printf '| executor | workers | run (plan to commit) | records/s | plan → first worker container | of which uploads + submission |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
i=0
for row in $ROWS; do
  mode=${row%%:*} n=${row#*:} i=$((i + 1))
  args=(load run --topics bench --format raw --job "bench$i" --target "hdfs://$HDFS_NAMENODE/tmp/bench-yarn-$$/t$i" -b "127.0.0.1:$port"
        --hdfs-user "$HDFS_USER" --parallelism "$n" --max-records-per-unit $((RECORDS / PARTITIONS / 2 + 1)) --log-level info)
  if [[ "$mode" == yarn ]]; then
    args+=(--executor yarn --yarn-resource-manager "http://$YARN_RM_HTTP" --yarn-am-jar "$YARN_DSHELL_JAR"
           --yarn-classpath "$YARN_APP_CLASSPATH" --yarn-staging "$staging" --yarn-max-containers "$n"
           --yarn-container-memory-mb 512 --yarn-am-memory-mb 256)
  fi
  t0=$(date +%s%N)
  out=$("$bin" "${args[@]}" 2>&1) || { log "row $row failed:"; echo "$out" | tail -20 >&2; exit 1; }
  ms=$((($(date +%s%N) - t0) / 1000000))
  first=$(grep -o 'first worker running [0-9.]*s after the plan' <<<"$out" | tail -1 | grep -o '[0-9.]\+s' | head -1 || true)
  upload=$(grep -o '"YARN application submitted"' <<<"$out" >/dev/null && awk '
    /msg=planned/ { split($1, a, "="); p = a[2] }
    /YARN application submitted/ { split($1, a, "="); s = a[2] }
    END { if (p != "" && s != "") { cmd = "date -d " p " +%s.%N"; cmd | getline pt; close(cmd); cmd = "date -d " s " +%s.%N"; cmd | getline st; printf "%.1fs", st - pt } }' <<<"$out" || true)
  label=$mode
  [[ "$mode" == yarn ]] && { grep -q 'binary already on HDFS' <<<"$out" && label="yarn (binary on HDFS)" || label="yarn (binary uploaded)"; }
  printf '| %s | %s | %.1f s | %d | %s | %s |\n' "$label" "$n" "$(bc -l <<<"$ms/1000")" $((RECORDS * 1000 / ms)) "${first:--}" "${upload:--}"
done
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
