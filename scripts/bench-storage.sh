#!/usr/bin/env bash
# The storage benchmarks of broker/log as docs/PERFORMANCE.md reports them:
# each one against its physical reference in the same run, -count=3, with a
# 10 GiB large log for BenchmarkLogSize. Writes the raw output, headed by a
# description of the machine, to bench-storage.txt (git-ignored), then prints
# the median of every metric.
#
#   scripts/bench-storage.sh                           # all of them, ~15 minutes
#   BENCH='^BenchmarkAppend$' scripts/bench-storage.sh # one of them
#   TRIBUTARY_BENCH_LARGE=2GiB COUNT=1 scripts/bench-storage.sh
#
# Data goes to $TRIBUTARY_BENCH_DIR, by default ./tributary-data/bench, which
# must be on a disk, not a tmpfs; the benchmarks delete it when they end. The
# 10 GiB run needs about 12 GiB free there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export TRIBUTARY_BENCH_LARGE=${TRIBUTARY_BENCH_LARGE:-10GiB}
COUNT=${COUNT:-3}
BENCH=${BENCH:-'^Benchmark(Append|Read|Recovery|LogSize)$'}
OUT=${OUT:-bench-storage.txt}
data=${TRIBUTARY_BENCH_DIR:-tributary-data/bench}
mkdir -p "$data"

cmd=(go test -run='^$' -bench="$BENCH" -benchmem -count="$COUNT" -timeout=2h ./broker/log/)
{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "# TRIBUTARY_BENCH_LARGE=$TRIBUTARY_BENCH_LARGE ${cmd[*]}"
	echo "# $(nproc) CPUs: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "# memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "# disk: $(df -h --output=source,fstype,size,avail "$data" | tail -1 | tr -s ' ')"
	echo "# kernel: $(uname -sr); $(go version)"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT"
"${cmd[@]}" 2>&1 | tee -a "$OUT"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"

# Median of each metric over the -count runs: one line per benchmark and
# metric, with every run's value in brackets.
echo
echo "== medians of $COUNT runs ($OUT)"
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[nb++] = name }
	for (i = 3; i < NF; i += 2) {
		key = name SUBSEP $(i + 1)
		if (!(key in nm)) { metrics[name] = metrics[name] " " $(i + 1); nm[key] = 0 }
		vals[key, nm[key]++] = $i
	}
}
END {
	for (b = 0; b < nb; b++) {
		name = order[b]; print name
		n = split(metrics[name], ms, " ")
		for (m = 1; m <= n; m++) {
			key = name SUBSEP ms[m]; k = nm[key]
			for (i = 0; i < k; i++) v[i] = vals[key, i] + 0
			all = ""
			for (i = 0; i < k; i++) all = all (i ? " " : "") vals[key, i]
			for (i = 1; i < k; i++) for (j = i; j > 0 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			med = (k % 2) ? v[int(k / 2)] : (v[k / 2 - 1] + v[k / 2]) / 2
			printf "    %-22s %12.4g   [%s]\n", ms[m], med, all
		}
	}
}' "$OUT"
