#!/usr/bin/env bash
# The broker's Fetch path with sendfile(2) (the default) against the
# user-space copy (`tributary broker --no-sendfile`: io.Copy of an
# io.SectionReader, i.e. pread+write through a 32 KiB buffer), in wall time
# and CPU per GB, on loopback.
#
#   scripts/bench-fetch.sh                      # 2 GiB per topic, 5 rounds, ~5 minutes
#   SIZE=512MiB REPS=3 scripts/bench-fetch.sh   # a quick look
#
# It builds ./bin/tributary and ./bin/benchfetch (scripts/benchfetch), starts
# a broker on a free loopback port with its data in a new directory under
# $TRIBUTARY_BENCH_DIR (default ./tributary-data, which must be a disk, not a
# tmpfs), creates topics fetch-1p (1 partition) and fetch-4p (4 partitions)
# and fills each with SIZE of 1 KiB random values from franz-go (uncompressed
# batches of up to 1,000,000 bytes, acks=all). Then, REPS rounds of
# A (sendfile) B (--no-sendfile): each restarts the broker in that mode on the
# same data, and for each topic and client reads the topic whole twice in one
# benchfetch process, measuring only the second read (the first warms the
# broker, the client's heap and the page cache, and checks every batch's
# CRC). Clients: raw (FetchRequests on one connection, max_bytes 64 MiB,
# partition_max_bytes 16 MiB, only batch headers parsed, so nearly all the
# load is the broker's) and kgo (franz-go's consumer with the same limits,
# every record decoded, what an application sees).
#
# Per read: wall time -> GB/s (GB = 1e9 bytes of record batches); the broker
# process's utime+stime from /proc/<pid>/stat before and after -> CPU s/GB;
# the consumer's getrusage -> its CPU s/GB; and the machine's irq+softirq
# time from /proc/stat, which on loopback is where much of the TCP receive
# path lands (it is charged to no process) and which other load on the
# machine also adds to. Raw lines, headed by a description of the machine, go
# to $OUT (bench-fetch.txt, git-ignored); the table of medians to stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SIZE=${SIZE:-2GiB}
REPS=${REPS:-5}
RECORD_SIZE=${RECORD_SIZE:-1024}
OUT=${OUT:-bench-fetch.txt}
parent=${TRIBUTARY_BENCH_DIR:-tributary-data}
mkdir -p "$parent" bin
if [ "$(stat -f -c %T "$parent")" = tmpfs ]; then
	echo "bench-fetch: $parent is on a tmpfs; set TRIBUTARY_BENCH_DIR to a directory on a disk" >&2
	exit 1
fi

go build -o bin/tributary ./cmd/tributary
go build -o bin/benchfetch scripts/benchfetch/main.go

dir=$(mktemp -d "$parent/bench-fetch.XXXXXX")
port=$(bin/benchfetch freeport)
addr=127.0.0.1:$port
bpid=
cleanup() {
	if [ -n "$bpid" ]; then kill -TERM "$bpid" 2>/dev/null && wait "$bpid" 2>/dev/null || true; fi
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

# start_broker sendfile|copy: start it, wait for "broker ready", set $bpid.
start_broker() {
	local flags=()
	[ "$1" = copy ] && flags=(--no-sendfile)
	: >"$dir/broker.log"
	bin/tributary broker "${flags[@]}" --log-dirs "$dir/data" --listeners "PLAINTEXT://$addr" \
		>>"$dir/broker.log" 2>&1 &
	bpid=$!
	for _ in $(seq 600); do
		grep -q 'broker ready' "$dir/broker.log" && return 0
		kill -0 "$bpid" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench-fetch: the broker did not start:" >&2
	cat "$dir/broker.log" >&2
	exit 1
}

stop_broker() {
	kill -TERM "$bpid"
	wait "$bpid" || { echo "bench-fetch: the broker exited with $?:" >&2; cat "$dir/broker.log" >&2; exit 1; }
	bpid=
}

{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "# SIZE=$SIZE REPS=$REPS RECORD_SIZE=$RECORD_SIZE scripts/bench-fetch.sh"
	echo "# $(nproc) CPUs: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "# memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "# disk: $(df -h --output=source,fstype,size,avail "$parent" | tail -1 | tr -s ' ')"
	echo "# kernel: $(uname -sr); $(go version)"
	echo "# tcp_wmem $(cat /proc/sys/net/ipv4/tcp_wmem | tr '\t' ' '); tcp_rmem $(cat /proc/sys/net/ipv4/tcp_rmem | tr '\t' ' ')"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"

echo "== filling fetch-1p and fetch-4p with $SIZE each" | tee -a "$OUT"
start_broker sendfile
bin/tributary topic create fetch-1p -p 1 -b "$addr" >/dev/null
bin/tributary topic create fetch-4p -p 4 -b "$addr" >/dev/null
for t in fetch-1p fetch-4p; do
	bin/benchfetch produce -b "$addr" -topic "$t" -bytes "$SIZE" -record-size "$RECORD_SIZE" | tee -a "$OUT"
done
stop_broker
sync # the data is in the page cache now; don't let writeback run under the reads
echo "# on disk: $(du -sh "$dir/data" | cut -f1)" | tee -a "$OUT"

echo "== $REPS rounds of sendfile, copy" | tee -a "$OUT"
for rep in $(seq "$REPS"); do
	for mode in sendfile copy; do
		start_broker "$mode"
		for t in fetch-1p fetch-4p; do
			for c in raw kgo; do
				bin/benchfetch consume -b "$addr" -topic "$t" -client "$c" -broker-pid "$bpid" \
					-label "mode=$mode rep=$rep topic=$t client=$c load=$(cut -d' ' -f1 /proc/loadavg) " | tee -a "$OUT"
			done
		done
		stop_broker
	done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"

# Medians per topic, client and mode; [min-max] of GB/s for the spread.
echo
echo "== medians of $REPS reads each ($OUT); GB = 1e9 bytes; CPU in seconds per GB"
awk '
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	for (i = 0; i < n; i++) a[i] = val[key, i]
	for (i = 1; i < n; i++) for (j = i; j > 0 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	lo[key] = a[0]; hi[key] = a[n - 1]
	return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2
}
function add(key, v) { val[key, cnt[key]++] = v }
/^mode=/ {
	delete f
	for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	g = f["bytes"] / 1e9
	k = f["topic"] SUBSEP f["client"] SUBSEP f["mode"]
	if (!(k in seen)) { seen[k] = 1; order[n++] = k }
	add(k SUBSEP "gbs", g / f["wall"])
	add(k SUBSEP "broker", (f["broker_user"] + f["broker_sys"]) / g)
	add(k SUBSEP "bsys", f["broker_sys"] / g)
	add(k SUBSEP "cons", (f["self_user"] + f["self_sys"]) / g)
	add(k SUBSEP "irq", f["machine_irq"] / g)
}
END {
	printf "%-9s %-6s %-9s %15s %14s %12s %13s %13s\n", "topic", "client", "mode", "GB/s [min-max]", "broker CPU/GB", "(of it sys)", "consumer CPU/GB", "irq+softirq/GB"
	for (i = 0; i < n; i++) {
		k = order[i]; split(k, p, SUBSEP)
		gbs = median(k SUBSEP "gbs")
		printf "%-9s %-6s %-9s %5.2f [%.2f-%.2f] %14.3f %12.3f %15.3f %14.3f\n", p[1], p[2], p[3], gbs, lo[k SUBSEP "gbs"], hi[k SUBSEP "gbs"],
			median(k SUBSEP "broker"), median(k SUBSEP "bsys"), median(k SUBSEP "cons"), median(k SUBSEP "irq")
	}
}' "$OUT" | tee -a "$OUT"
