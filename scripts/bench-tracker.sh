#!/usr/bin/env bash
# The tracker's HTTP collector under load, end to end: events/s accepted
# over HTTP in batches of 100 (POST /v1/batch), request latency, and CPU per
# 1,000,000 events, with a real broker on the same machine and acks=all
# (issue 9's benchmark).
#
#   scripts/bench-tracker.sh                          # ~3 minutes
#   CONNS=16 DURATION=20s scripts/bench-tracker.sh
#   MODES=broker scripts/bench-tracker.sh             # one ack mode only
#
# It builds ./bin/tributary and ./bin/benchtracker (scripts/benchtracker),
# starts `tributary broker` on a free loopback port with its data in a new
# directory under $TRIBUTARY_BENCH_DIR (default ./tributary-data, which must
# be a disk: the spool fsyncs), and creates one topic per ack mode with
# PARTITIONS partitions. Then, for each of MODES (default "spool broker"):
# starts `tributary tracker --ack <mode>` (dedup, validation and enrichment
# on, as by default; its spool in the same directory), and runs benchtracker
# against it: WARMUP of unmeasured load, then REPS measured runs of DURATION,
# each with CONNS connections posting batches of BATCH generated activity
# events (formats/decode.ActivityEvent, ~400 B of JSON each, every messageId
# new). benchtracker samples the CPU of the tracker, the broker, itself and
# the whole machine around each run, and at the end waits until the topic
# holds as many records as the tracker acknowledged (200 answers, counted
# "accepted") and fails if it holds fewer.
#
# Raw lines, headed by a description of the machine, go to $OUT
# (bench-tracker.txt, git-ignored); the table of medians to stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MODES=${MODES:-spool broker}
CONNS=${CONNS:-8}
BATCH=${BATCH:-100}
WARMUP=${WARMUP:-5s}
DURATION=${DURATION:-10s}
REPS=${REPS:-3}
PARTITIONS=${PARTITIONS:-4}
OUT=${OUT:-bench-tracker.txt}
parent=${TRIBUTARY_BENCH_DIR:-tributary-data}
mkdir -p "$parent" bin
if [ "$(stat -f -c %T "$parent")" = tmpfs ]; then
	echo "bench-tracker: $parent is on a tmpfs; set TRIBUTARY_BENCH_DIR to a directory on a disk" >&2
	exit 1
fi

go build -o bin/tributary ./cmd/tributary
go build -o bin/benchtracker scripts/benchtracker/main.go

dir=$(mktemp -d "$parent/bench-tracker.XXXXXX")
baddr=127.0.0.1:$(bin/benchtracker freeport)
taddr=127.0.0.1:$(bin/benchtracker freeport)
key=bench-key
bpid= tpid=
stop() { # pid: TERM it and wait
	kill -TERM "$1" 2>/dev/null && wait "$1" 2>/dev/null || true
}
cleanup() {
	[ -z "$tpid" ] || stop "$tpid"
	[ -z "$bpid" ] || stop "$bpid"
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

# wait_for LOG PID WORDS: until LOG says WORDS, or PID died.
wait_for() {
	for _ in $(seq 600); do
		grep -q "$3" "$1" && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench-tracker: no \"$3\" in $1:" >&2
	cat "$1" >&2
	exit 1
}

{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "# MODES='$MODES' CONNS=$CONNS BATCH=$BATCH WARMUP=$WARMUP DURATION=$DURATION REPS=$REPS PARTITIONS=$PARTITIONS scripts/bench-tracker.sh"
	echo "# $(nproc) CPUs: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "# memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "# disk: $(df -h --output=source,fstype,size,avail "$parent" | tail -1 | tr -s ' ')"
	echo "# kernel: $(uname -sr); $(go version)"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"

bin/tributary broker --log-dirs "$dir/data" --listeners "PLAINTEXT://$baddr" --admin-listen "" >"$dir/broker.log" 2>&1 &
bpid=$!
wait_for "$dir/broker.log" "$bpid" 'broker ready'

for mode in $MODES; do
	topic=bench-$mode
	bin/tributary topic create "$topic" -p "$PARTITIONS" -b "$baddr" >/dev/null
	bin/tributary tracker --ack "$mode" --listen "$taddr" --bootstrap "$baddr" --topic "$topic" \
		--spool-dir "$dir/spool-$mode" --write-key "$key" --admin-listen "" >"$dir/tracker-$mode.log" 2>&1 &
	tpid=$!
	wait_for "$dir/tracker-$mode.log" "$tpid" 'tracker ready'
	echo "== ack=$mode: $WARMUP warm-up, $REPS runs of $DURATION, $CONNS connections, batches of $BATCH" | tee -a "$OUT"
	bin/benchtracker run -url "http://$taddr" -key "$key" -conns "$CONNS" -batch "$BATCH" \
		-warmup "$WARMUP" -duration "$DURATION" -runs "$REPS" \
		-tracker-pid "$tpid" -broker-pid "$bpid" -bootstrap "$baddr" -topic "$topic" \
		-label "ack=$mode " | tee -a "$OUT"
	stop "$tpid"
	tpid=
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"

# Medians over the runs of each mode; [min-max] of events/s for the spread.
# CPU is in seconds per 1,000,000 acknowledged events.
echo
echo "== medians of $REPS runs ($OUT); CPU in seconds per 1,000,000 events"
awk '
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	for (i = 0; i < n; i++) a[i] = val[key, i]
	for (i = 1; i < n; i++) for (j = i; j > 0 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	lo[key] = a[0]; hi[key] = a[n - 1]
	return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2
}
function add(key, v) { val[key, cnt[key]++] = v }
/^ack=.* run=/ {
	delete f
	for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	k = f["ack"]
	if (!(k in seen)) { seen[k] = 1; order[n++] = k }
	m = f["events"] / 1e6
	add(k SUBSEP "eps", f["events_s"]); add(k SUBSEP "p50", f["p50_ms"]); add(k SUBSEP "p99", f["p99_ms"]); add(k SUBSEP "p999", f["p999_ms"])
	add(k SUBSEP "tr", f["tracker_cpu"] / m); add(k SUBSEP "br", f["broker_cpu"] / m); add(k SUBSEP "gen", f["gen_cpu"] / m)
	add(k SUBSEP "tb", (f["tracker_cpu"] + f["broker_cpu"]) / m)
	add(k SUBSEP "mach", f["machine_busy"] / m); add(k SUBSEP "load", f["load1"])
}
/^ack=.* verify / { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "ok") ok[$1] = kv[2] } }
END {
	printf "%-10s %24s %8s %8s %9s %10s %9s %14s %12s %13s %6s %9s\n", "ack", "events/s [min-max]", "p50 ms", "p99 ms", "p99.9 ms", "tracker s", "broker s", "tracker+broker", "generator s", "machine busy", "load", "verified"
	for (i = 0; i < n; i++) {
		k = order[i]
		eps = median(k SUBSEP "eps")
		printf "%-10s %8.0f [%6.0f-%6.0f] %8.2f %8.2f %9.2f %10.2f %9.2f %14.2f %12.2f %13.2f %6.2f %9s\n", k, eps, lo[k SUBSEP "eps"], hi[k SUBSEP "eps"],
			median(k SUBSEP "p50"), median(k SUBSEP "p99"), median(k SUBSEP "p999"), median(k SUBSEP "tr"), median(k SUBSEP "br"), median(k SUBSEP "tb"),
			median(k SUBSEP "gen"), median(k SUBSEP "mach"), median(k SUBSEP "load"), ok["ack=" k]
	}
}' "$OUT" | tee -a "$OUT"
