#!/usr/bin/env bash
# Tributary against Apache Kafka 4.4.0 on this machine, side by side, with the
# same clients (issue 11). `make bench-compare` runs it.
#
#   scripts/bench-vs-kafka.sh                  # about 15 minutes on 2 quiet cores
#   REPS=1 SCALE=0.2 scripts/bench-vs-kafka.sh # a quick look (not for the record)
#   WORKLOADS="p100a1 consume" scripts/bench-vs-kafka.sh
#   scripts/bench-vs-kafka.sh tls              # the same as WORKLOADS=tls
#   make bench-compare WORKLOADS=tls           # the same
#
# 1. Fetches Kafka 4.4.0's jars (scripts/kafka-jars.sh, cached), builds
#    ./bin/tributary and ./bin/benchcompare, ./bin/benchfetch.
# 2. Starts both brokers, each alone on its own loopback ports, with their
#    data in a new directory under $TRIBUTARY_BENCH_DIR (default
#    ./tributary-data; refused if it is a tmpfs): Apache Kafka single-node
#    KRaft (kafka.Kafka, with the heap and GC flags of kafka-server-start.sh:
#    -Xms1G -Xmx1G G1) and `tributary broker`. Equivalent settings on both:
#    replication factor 1, no fsync per message (both defaults),
#    log.segment.bytes=1 GiB, num.network.threads = num.io.threads = cores,
#    group.initial.rebalance.delay.ms=0. Both stay up for every single-node round, so
#    the peak RSS (VmHWM) after them covers every single-node workload.
# 3. Runs each workload against each broker in turn, Kafka then Tributary,
#    REPS times (A B A B ...), each measured run preceded by a warm-up run of
#    the same kind; every produce and latency run starts after `sync`, so
#    that writeback of the previous run does not land in the next one, and
#    with the clean page cache dropped (as root; settle); every measured
#    produce run also starts on warm memory (warm_memory). The
#    clients are the same for both brokers: Kafka's ProducerPerformance and
#    ConsumerPerformance (JVM, -Xmx512M), franz-go (scripts/benchfetch,
#    scripts/benchcompare).
#      p100a1   ProducerPerformance, 100 B records, 6 partitions, acks=1,
#               batch.size=65536 linger.ms=5 (N100 records)
#      p100all  the same, acks=all, enable.idempotence=true
#      p100raw  100 B records, acks=1, from a Go producer that is not the
#               limit (see p16kraw), 4 x N100 records, warm-up N100
#      p1k      1 KiB records, acks=1 (N1K records)
#      p16k     16 KiB records, acks=1 (N16K records), and the disk's
#               sequential write speed (dd oflag=direct, 1 GiB) in this run
#      p16kraw  16 KiB records from a Go producer that is not the limit
#               (benchfetch produce -client raw): requests encoded once,
#               64 KiB batches, one connection per core, 5 in flight each;
#               4 x N16K records (a run of a few seconds), warm-up N16K
#      craw     that topic read whole twice by a Go consumer that is not the
#               limit (benchfetch consume -client raw: Fetch requests into
#               one reused buffer, batch headers walked), the second read
#               measured
#      ceilings with p16kraw and craw: the same bytes moved the same way
#               with no protocol (benchfetch ceiling): written over
#               loopback into page-cache files, and each broker's own
#               segment files of the topic sent with sendfile(2); the
#               most a broker can expect here
#      consume  ConsumerPerformance reading N100 records of the p100a1 topic
#               from offset 0 (fetch.nMsg.sec: excludes the group join)
#      kgo      franz-go consumer (benchfetch consume -client kgo) reading
#               that topic whole twice, the second read measured
#      lat      end-to-end latency at 50,000 records/s of 100 B, 6 partitions,
#               franz-go producer (acks=all, linger 0) and consumer in one
#               process (benchcompare latency): 3 s warm-up, 10 s measured
#      lat80    the same at 80 % of the records/s Kafka reached in this
#               round's p100a1 run (so p100a1 must run too); sent= and
#               rate= in the raw lines show whether the client kept up;
#               reclaim_stalls= and compaction_stalls= count the machine's
#               direct reclaim and compaction stalls during the run, and
#               broker_produce_over_25ms= Tributary's slow produce requests
#               by its own timer, and fetch_p99_ms= the consumer's Fetch
#               round trips as the client saw them: where a tail came from
#      txn      transactional produce (benchcompare txn: franz-go, 100 B,
#               6 partitions, records produced as fast as the client can
#               and committed every 1, 10 and 100 ms): committed rec/s and
#               the EndTxn round trip's p50 and p99; 2 s warm-up,
#               TXN_SECONDS (10) measured per interval
#      many     1,000 partitions (10 topics x 100): broker CPU when idle over
#               10 s, then a 5 s warm-up run and latency at 5,000 records/s as above
#      rf3      after the single-node rounds, which are stopped first: a
#               three-node cluster of each (combined mode, 3 voters, the
#               same settings, min.insync.replicas=2), ProducerPerformance
#               100 B records to 6 partitions replicated 3 times, acks=all
#               idempotent (N100RF3 records), ConsumerPerformance reading
#               them back from the leaders, then end-to-end latency at
#               LAT_RATE as lat does, on a topic replicated 3 times; REPS
#               rounds A B; CPU and peak RSS summed over the three brokers
#      tls      (not in the default list; issue 21) what TLS costs per GB:
#               both brokers get a second listener, SSL (TLS 1.2/1.3, no
#               client certificates; a certificate from `tributary dev certs`,
#               ECDSA P-256, read by Kafka as ssl.keystore.type=PEM); for
#               PLAINTEXT then SSL, Kafka then Tributary: ProducerPerformance
#               NTLS records of TLS_SIZE bytes (default 1 KiB), acks=1, 6
#               partitions, then ConsumerPerformance reading them back, the
#               same tools and settings on both listeners, SSL ones with
#               security.protocol=SSL and the CA as PEM truststore (host name
#               verification on). Broker CPU s/GB for each, and SSL less
#               PLAINTEXT: the price of TLS. A consumer over PLAINTEXT is
#               served with sendfile(2) by both brokers; over SSL the bytes
#               pass through user space to be encrypted, on both.
#    For every measured run, the broker's utime+stime from /proc/PID/stat
#    before and after gives CPU seconds per GB (GB = 1e9 bytes of record
#    values).
# 4. Prints the table of medians (Apache Kafka, Tributary, ratio, target)
#    and writes it, the machine description and the commands to
#    $OUT (bench-vs-kafka.txt, git-ignored; raw lines too) and, with
#    WRITE_DOC=1, replaces the generated part of docs/PERFORMANCE.md's
#    section "# Against Apache Kafka".
#
# Counts, times SCALE (default 1): N100=5,000,000 (the issue's count),
# N1K=500,000, N16K=60,000 (~1 GB), N100RF3=1,000,000, NTLS=500,000 (of
# TLS_SIZE=1024 B, 0.5 GB a run, 2 GB written in all), chosen to keep a
# run near 20 minutes on 2 cores (tls alone: about 4 minutes a round). Warm-ups are a quarter of the measured
# count.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Positional arguments are workload names, as WORKLOADS.
if [ $# -gt 0 ]; then WORKLOADS="$*"; fi
REPS=${REPS:-3}
SCALE=${SCALE:-1}
scale() { awk -v n="$1" -v s="$SCALE" 'BEGIN { printf "%d", n * s }'; }
N100=${N100:-$(scale 5000000)}
N1K=${N1K:-$(scale 500000)}
N16K=${N16K:-$(scale 60000)}
N100RF3=${N100RF3:-$(scale 1000000)}
NTLS=${NTLS:-$(scale 500000)}
TLS_SIZE=${TLS_SIZE:-1024}
LAT_RATE=${LAT_RATE:-50000}
LAT_SECONDS=${LAT_SECONDS:-10}
TXN_SECONDS=${TXN_SECONDS:-10}
[ -n "${WORKLOADS:-}" ] && WORKLOADS_SET=1
WORKLOADS=${WORKLOADS:-p100a1 p100all p100raw p1k p16k p16kraw craw consume kgo lat lat80 txn many rf3}
OUT=${OUT:-bench-vs-kafka.txt}
cores=$(nproc)
parent=${TRIBUTARY_BENCH_DIR:-tributary-data}
mkdir -p "$parent" bin
if [ "$(stat -f -c %T "$parent")" = tmpfs ]; then
	echo "bench-vs-kafka: $parent is on a tmpfs; set TRIBUTARY_BENCH_DIR to a directory on a disk" >&2
	exit 1
fi
parent=$(cd "$parent" && pwd)
has() { [[ " $WORKLOADS " == *" $1 "* ]]; }
# A round keeps its topics until it ends, about 24 GB of both brokers'
# logs, and Kafka removes a deleted topic's files a minute later, into the
# next round; the replicated rounds and the many-partition topics add more.
need_gb=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 40 * s + 2 }')
free_gb=$(df -P -BG "$parent" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
if [ "$free_gb" -lt "$need_gb" ]; then
	echo "bench-vs-kafka: $parent has ${free_gb} GB free; a run at SCALE=$SCALE needs about ${need_gb} GB (set TRIBUTARY_BENCH_DIR elsewhere, or a smaller SCALE)" >&2
	exit 1
fi

lib=$(scripts/kafka-jars.sh)
conf=$(dirname "$lib")/config
go build -o bin/tributary ./cmd/tributary
go build -o bin/benchcompare scripts/benchcompare/main.go
go build -o bin/benchfetch scripts/benchfetch/*.go

dir=$(mktemp -d "$parent/bench-vs-kafka.XXXXXX")
kport=$(bin/benchcompare freeport)
kcport=$(bin/benchcompare freeport)
tport=$(bin/benchcompare freeport)
declare -A addr=([kafka]=127.0.0.1:$kport [tributary]=127.0.0.1:$tport)
# saddr: each broker's SSL listener (workload tls only).
declare -A saddr=([kafka]=127.0.0.1:$(bin/benchcompare freeport) [tributary]=127.0.0.1:$(bin/benchcompare freeport))
declare -A pid=()
cleanup() {
	for b in "${!pid[@]}"; do kill -TERM "${pid[$b]}" 2>/dev/null || true; done
	for b in "${!pid[@]}"; do wait "${pid[$b]}" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

# The tools' JVM, the same for both brokers (kafka-run-class.sh's defaults,
# with 512M rather than 256M of heap so ProducerPerformance never GCs hard).
J() { java -Xmx512M -server -XX:+UseG1GC -Djava.awt.headless=true -Dlog4j2.configurationFile="$conf/log4j2.properties" -Dkafka.log.level=WARN -cp "$lib/*" "$@"; }

cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$kcport
listeners=PLAINTEXT://127.0.0.1:$kport,CONTROLLER://127.0.0.1:$kcport
advertised.listeners=PLAINTEXT://127.0.0.1:$kport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/kafka
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
log.segment.bytes=1073741824
num.network.threads=$cores
num.io.threads=$cores
EOF
tls_on=no
if has tls; then
	tls_on=yes
	bin/tributary dev certs "$dir/certs" --host 127.0.0.1 >/dev/null
	sed -i -e "s|^listeners=.*|&,SSL://${saddr[kafka]}|" -e "s|^advertised.listeners=.*|&,SSL://${saddr[kafka]}|" \
		-e "s|^listener.security.protocol.map=.*|&,SSL:SSL|" "$dir/server.properties"
	printf 'ssl.keystore.type=PEM\nssl.keystore.location=%s\n' "$dir/certs/broker.pem" >>"$dir/server.properties"
	printf 'security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$dir/certs/ca.pem" >"$dir/ssl-client.properties"
fi
kafka_cmd=(java -Xms1G -Xmx1G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
	-XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true -Dlog4j2.configurationFile="$conf/log4j2.properties"
	-Dkafka.log.level=WARN -cp "$lib/*" kafka.Kafka "$dir/server.properties")
tadmin=127.0.0.1:$(bin/benchcompare freeport)
trib_cmd=(bin/tributary broker --log-dirs "$dir/tributary" --listeners "PLAINTEXT://${addr[tributary]}" --admin-listen "$tadmin"
	--set num.network.threads="$cores" --set num.io.threads="$cores" --set log.segment.bytes=1073741824
	--set group.initial.rebalance.delay.ms=0 --set default.replication.factor=1)
if [ "$tls_on" = yes ]; then
	for i in "${!trib_cmd[@]}"; do [ "${trib_cmd[$i]}" = --listeners ] && trib_cmd[i + 1]+=",SSL://${saddr[tributary]}"; done
	trib_cmd+=(--set ssl.keystore.location="$dir/certs/broker.pem")
fi

wait_port() { # name host:port log
	for _ in $(seq 600); do
		(exec 3<>"/dev/tcp/${2%:*}/${2#*:}") 2>/dev/null && return 0
		kill -0 "${pid[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench-vs-kafka: $1 did not start:" >&2
	cat "$3" >&2
	exit 1
}

J kafka.tools.StorageTool format -t "$(J kafka.tools.StorageTool random-uuid)" -c "$dir/server.properties" >/dev/null
"${kafka_cmd[@]}" >"$dir/kafka.log" 2>&1 &
pid[kafka]=$!
"${trib_cmd[@]}" >"$dir/tributary.log" 2>&1 &
pid[tributary]=$!
wait_port kafka "${addr[kafka]}" "$dir/kafka.log"
wait_port tributary "${addr[tributary]}" "$dir/tributary.log"
if [ "$tls_on" = yes ]; then
	wait_port kafka "${saddr[kafka]}" "$dir/kafka.log"
	wait_port tributary "${saddr[tributary]}" "$dir/tributary.log"
fi
sleep 2

cpu() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ printf "%.2f", ($12 + $13) / 100 }'; }
kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# stalls: the machine's direct reclaim and direct compaction stalls so far
# (/proc/vmstat); a latency run records how many began during it.
stalls() { awk '$1 ~ /^allocstall_/ { r += $2 } $1 == "compact_stall" { c = $2 } END { print r + 0, c + 0 }' /proc/vmstat; }
stalls_during() { # before after
	echo "$1 $2" | awk '{ printf "reclaim_stalls=%d compaction_stalls=%d", $3 - $1, $4 - $2 }'
}
# slow_produce: how many produce requests Tributary's own timer saw take more
# than 25.6 ms so far (its request histogram on the admin listener).
slow_produce() {
	curl -s "http://$tadmin/metrics" | awk '
		/^tributary_broker_request_seconds_bucket\{api="Produce",le="0.0256"\}/ { fast = $2 }
		/^tributary_broker_request_seconds_count\{api="Produce"\}/ { all = $2 }
		END { print all - fast }'
}
# settle: write back what earlier runs left dirty, so that their writeback
# lands in neither broker's run, and drop the clean page cache where we may
# (root). A round writes about 24 GB, and on this VM memory beyond about
# 14 GiB in use is cold: it costs a host fault at its first touch, and
# memory freed above that line goes cold again within seconds (see
# docs/PERFORMANCE.md, "Warm memory"). Starting each run with only the
# brokers' processes in memory keeps every run under that line.
drop_caches=no
[ -w /proc/sys/vm/drop_caches ] && drop_caches=yes
settle() {
	sync
	if [ "$drop_caches" = yes ]; then echo 1 >/proc/sys/vm/drop_caches; fi
}

topic() { # broker name partitions
	bin/tributary topic create "$2" -p "$3" -r 1 -b "${addr[$1]}" >/dev/null
}
record() { echo "$*" | tee -a "$OUT"; }

{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "# REPS=$REPS SCALE=$SCALE N100=$N100 N1K=$N1K N16K=$N16K N100RF3=$N100RF3 NTLS=$NTLS TLS_SIZE=$TLS_SIZE LAT_RATE=$LAT_RATE LAT_SECONDS=$LAT_SECONDS TXN_SECONDS=$TXN_SECONDS WORKLOADS='$WORKLOADS' scripts/bench-vs-kafka.sh"
	echo "# $cores CPUs: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "# memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "# disk: $(df -h --output=source,fstype,size,avail "$parent" | tail -1 | tr -s ' ')"
	echo "# kernel: $(uname -sr); $(go version); $(java -version 2>&1 | head -1)"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# clean page cache dropped before each produce and latency run: $drop_caches"
	echo "# kafka: ${kafka_cmd[*]}"
	echo "# kafka server.properties: $(grep -v '^$' "$dir/server.properties" | tr '\n' ' ')"
	echo "# tributary: ${trib_cmd[*]}"
	if [ "$tls_on" = yes ]; then
		echo "# tls: SSL listeners kafka ${saddr[kafka]}, tributary ${saddr[tributary]}; certificate: tributary dev certs DIR --host 127.0.0.1 (ECDSA P-256); SSL clients: $(tr '\n' ' ' <"$dir/ssl-client.properties")"
	fi
	echo "# tools: java -Xmx512M -server -XX:+UseG1GC -cp \"\$lib/*\" <class> ..."
} | tee "$OUT"

# cpus: the CPU seconds of broker b's processes (one, or a cluster's three).
cpus() {
	local total=0 p
	for p in ${pids[$1]:-${pid[$1]}}; do total=$(awk -v a="$total" -v c="$(cpu "$p")" 'BEGIN { print a + c }'); done
	echo "$total"
}
declare -A pids=()

# warm_memory BYTES: write a file of that size into the page cache and delete
# it, right before a measured produce run, so that the run's page-cache
# writes land on memory that was in use a moment ago rather than on memory
# the host has taken back, which costs a fault on the host at its first
# touch. The file is deleted while dirty, so nothing reaches the disk.
warm_memory() {
	dd if=/dev/zero of="$dir/warm-memory" bs=1M count=$((($1 + 1048575) / 1048576)) status=none
	rm -f "$dir/warm-memory"
}

# produce W broker topic n size acks: a warm-up run of n/4, then the measured run.
produce() {
	local w=$1 b=$2 t=$3 n=$4 size=$5 acks=$6 idem=false
	[ "$acks" = all ] && idem=true
	local props=(bootstrap.servers="${addr[$b]}" acks="$acks" enable.idempotence="$idem" batch.size=65536 linger.ms=5)
	if [ "$proto" = SSL ]; then
		props[0]=bootstrap.servers="${saddr[$b]}"
		mapfile -t -O ${#props[@]} props <"$dir/ssl-client.properties"
	fi
	settle
	J org.apache.kafka.tools.ProducerPerformance --topic "$t" --num-records $((n / 4)) --record-size "$size" \
		--throughput -1 --producer-props "${props[@]}" >"$dir/warm.out" 2>&1 ||
		{ cat "$dir/warm.out" >&2; exit 1; }
	local c0 c1 line
	warm_memory $((n * size))
	c0=$(cpus "$b")
	local TIMEFORMAT='%U %S %R'
	{ time J org.apache.kafka.tools.ProducerPerformance --topic "$t" --num-records "$n" --record-size "$size" \
		--throughput -1 --producer-props "${props[@]}" >"$dir/run.out" 2>&1 ||
		{ cat "$dir/run.out" >&2; exit 1; }; } 2>"$dir/time.out"
	c1=$(cpus "$b")
	line=$(grep 'records sent' "$dir/run.out" | tail -1)
	# "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, p50 ms 50th, p95 ms 95th, p99 ms 99th, p999 ms 99.9th."
	echo "$line" | awk -v w="$w" -v b="$b" -v rep="$rep" -v c="$(awk -v a="$c0" -v z="$c1" 'BEGIN { print z - a }')" -v bytes=$((n * size)) \
		-v client="$(awk '{ print $1 + $2 }' "$dir/time.out")" -v wall="$(awk '{ print $3 }' "$dir/time.out")" \
		-v cores="$cores" -v load="$(cut -d' ' -f1 /proc/loadavg)" '{
		gsub(/[(),]/, "")
		printf "w=%s b=%s rep=%d recs=%s MBs=%s avg_ms=%s p99_ms=%s cpu=%.2f bytes=%d client_cpu=%.2f client_share=%.0f load=%s\n", w, b, rep, $4, $6, $8, $22, c, bytes, client, 100 * client / (wall * cores), load
	}' | tee -a "$OUT"
}

# produce_raw W broker topic n size: benchfetch produce -client raw, a
# warm-up of n records, then the measured run of 4n.
produce_raw() {
	local w=$1 b=$2 t=$3 n=$4 size=$5
	local raw=(bin/benchfetch produce -client raw -conns "$cores" -b "${addr[$b]}" -topic "$t" -partitions 6 -record-size "$size")
	settle
	"${raw[@]}" -bytes $((n * size)) >/dev/null
	sync
	warm_memory $((4 * n * size))
	"${raw[@]}" -bytes $((4 * n * size)) -broker-pid "${pid[$b]}" -label "w=$w b=$b rep=$rep " | awk -v cores="$cores" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		printf "w=%s b=%s rep=%s recs=%s MBs=%s cpu=%.2f bytes=%.0f client_cpu=%.2f machine_share=%.0f\n", f["w"], f["b"], f["rep"], f["recs"], f["MBs"], f["broker_user"] + f["broker_sys"], f["bytes"], f["self_user"] + f["self_sys"], 100 * f["machine"] / (f["wall"] * cores)
	}' | tee -a "$OUT"
}

# consume W broker topic n [size]: ConsumerPerformance reads n records of
# size bytes (100) from offset 0, once to warm up and once measured.
consume() {
	local w=$1 b=$2 t=$3 n=$4 size=${5:-100} c0 c1
	local cargs=(--bootstrap-server "${addr[$b]}" --topic "$t" --messages "$n" --timeout 30000)
	if [ "$proto" = SSL ]; then
		cargs=(--bootstrap-server "${saddr[$b]}" --command-config "$dir/ssl-client.properties" "${cargs[@]:2}")
	fi
	J org.apache.kafka.tools.ConsumerPerformance "${cargs[@]}" >"$dir/warm.out" 2>&1 ||
		{ cat "$dir/warm.out" >&2; exit 1; }
	c0=$(cpus "$b")
	J org.apache.kafka.tools.ConsumerPerformance "${cargs[@]}" >"$dir/run.out" 2>&1 ||
		{ cat "$dir/run.out" >&2; exit 1; }
	c1=$(cpus "$b")
	# start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
	# rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
	tail -1 "$dir/run.out" | awk -F', *' -v w="$w" -v b="$b" -v rep="$rep" -v c0="$c0" -v c1="$c1" -v n="$n" -v size="$size" '{
		printf "w=%s b=%s rep=%d recs=%s MBs=%s all_recs=%s rebalance_ms=%s msgs=%s cpu=%.2f bytes=%d\n", w, b, rep, $10, $9, $6, $7, $5, c1 - c0, n * size
	}' | tee -a "$OUT"
}

disk_speed() { # MB/s of a 1 GiB sequential direct write in the data directory
	local t0 t1
	sync
	t0=$(date +%s.%N)
	dd if=/dev/zero of="$dir/dd.tmp" bs=1M count=1024 oflag=direct status=none
	t1=$(date +%s.%N)
	rm -f "$dir/dd.tmp"
	awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.0f", 1073741824 / (z - a) / 1e6 }'
}

brokers=(kafka tributary)
proto=PLAINTEXT # the listener the clients of produce and consume use
for rep in $(seq "$REPS"); do
	echo "== round $rep of $REPS" | tee -a "$OUT"
	# Topics written in this round, deleted together at its end: a topic
	# deleted between workloads frees its page cache right before the other
	# broker's next run (Tributary at once, Kafka a minute later), and which
	# broker then writes into the warm memory it leaves decided the raw runs.
	drop=()
	if has p100a1 || has consume || has kgo; then
		for b in "${brokers[@]}"; do
			topic "$b" "p100a1-$rep" 6
			produce p100a1 "$b" "p100a1-$rep" "$N100" 100 1
		done
	fi
	if has p100all; then
		for b in "${brokers[@]}"; do
			topic "$b" "p100all-$rep" 6
			produce p100all "$b" "p100all-$rep" "$N100" 100 all
		done
		drop+=("p100all-$rep")
	fi
	if has p1k; then
		for b in "${brokers[@]}"; do
			topic "$b" "p1k-$rep" 6
			produce p1k "$b" "p1k-$rep" "$N1K" 1024 1
		done
	fi
	if has p16k; then
		for b in "${brokers[@]}"; do
			topic "$b" "p16k-$rep" 6
			produce p16k "$b" "p16k-$rep" "$N16K" 16384 1
		done
	fi
	if has p100raw; then
		for b in "${brokers[@]}"; do
			topic "$b" "p100raw-$rep" 6
			produce_raw p100raw "$b" "p100raw-$rep" "$N100" 100
		done
		drop+=("p100raw-$rep")
	fi
	if has p16kraw; then
		for b in "${brokers[@]}"; do
			topic "$b" "p16kraw-$rep" 6
			produce_raw p16kraw "$b" "p16kraw-$rep" "$N16K" 16384
		done
		# The same bytes over loopback into page-cache files with no
		# protocol at all: the most a broker can expect here.
		ceil=(bin/benchfetch ceiling write -dir "$dir" -conns "$cores" -partitions 6)
		settle
		"${ceil[@]}" -bytes $((N16K * 16384)) >/dev/null
		sync
		warm_memory $((4 * N16K * 16384)) # as the brokers' runs had
		"${ceil[@]}" -bytes $((4 * N16K * 16384)) -label "w=cwrite rep=$rep " | awk -v cores="$cores" '{
			for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			printf "w=%s rep=%s MBs=%s machine_share=%.0f\n", f["w"], f["rep"], f["MBs"], 100 * f["machine"] / (f["wall"] * cores)
		}' | tee -a "$OUT"
	fi
	if has p16kraw && has craw; then
		for b in "${brokers[@]}"; do
			# reads the topic twice, measures the second read
			bin/benchfetch consume -client raw -b "${addr[$b]}" -topic "p16kraw-$rep" -broker-pid "${pid[$b]}" \
				-label "w=craw b=$b rep=$rep " | awk -v cores="$cores" '{
				for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
				printf "w=%s b=%s rep=%s recs=%.0f MBs=%.1f cpu=%.2f bytes=%.0f machine_share=%.0f\n", f["w"], f["b"], f["rep"], f["records"] / f["wall"], f["bytes"] / f["wall"] / 1e6, f["broker_user"] + f["broker_sys"], f["bytes"], 100 * f["machine"] / (f["wall"] * cores)
			}' | tee -a "$OUT"
			# Each broker's own segment files of that topic, sent the same
			# way with no protocol: the most a broker can expect from them.
			r=$(bin/benchfetch ceiling read -files "$dir/$b/p16kraw-$rep-*/*.log")
			record "w=cread b=$b rep=$rep $r"
		done
	fi
	if has p16k || has p16kraw; then
		disk_speed >/dev/null # warm
		record "w=disk rep=$rep MBs=$(disk_speed)"
		for t in p16k p16kraw; do has $t && drop+=("$t-$rep"); done
	fi
	if has consume; then
		for b in "${brokers[@]}"; do consume consume "$b" "p100a1-$rep" "$N100"; done
	fi
	if has kgo; then
		for b in "${brokers[@]}"; do
			# reads the topic twice, measures the second read
			bin/benchfetch consume -b "${addr[$b]}" -topic "p100a1-$rep" -client kgo -broker-pid "${pid[$b]}" \
				-label "w=kgo b=$b rep=$rep " | awk '{
				for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
				printf "w=%s b=%s rep=%s recs=%.0f MBs=%.1f cpu=%.2f bytes=%d\n", f["w"], f["b"], f["rep"], f["records"] / f["wall"], f["bytes"] / f["wall"] / 1e6, f["broker_user"] + f["broker_sys"], f["records"] * 100
			}' | tee -a "$OUT"
		done
	fi
	if has lat; then
		for b in "${brokers[@]}"; do
			topic "$b" "lat-$rep" 6
			settle
			c0=$(cpu "${pid[$b]}")
			r=$(bin/benchcompare latency -b "${addr[$b]}" -topics "lat-$rep" -rate "$LAT_RATE" -size 100 \
				-warmup 3s -duration "${LAT_SECONDS}s")
			c1=$(cpu "${pid[$b]}")
			record "w=lat b=$b rep=$rep $r cpu=$(awk -v a="$c0" -v z="$c1" 'BEGIN { print z - a }')"
		done
	fi
	if has txn; then
		for ms in 1 10 100; do
			for b in "${brokers[@]}"; do
				topic "$b" "txn$ms-$rep" 6
				settle
				c0=$(cpu "${pid[$b]}")
				r=$(bin/benchcompare txn -b "${addr[$b]}" -topic "txn$ms-$rep" -interval "${ms}ms" -size 100 \
					-warmup 2s -duration "${TXN_SECONDS}s")
				c1=$(cpu "${pid[$b]}")
				record "w=txn$ms b=$b rep=$rep $r cpu=$(awk -v a="$c0" -v z="$c1" 'BEGIN { print z - a }')"
			done
		done
	fi
	if has lat80 && has p100a1; then
		kmax=$(awk -v rep="$rep" '$1 == "w=p100a1" && $2 == "b=kafka" && $3 == "rep=" rep { sub("recs=", "", $4); print $4 }' "$OUT")
		rate=$(awk -v m="$kmax" 'BEGIN { printf "%d", 0.8 * m }')
		for b in "${brokers[@]}"; do
			topic "$b" "lat80-$rep" 6
			settle
			v0=$(stalls)
			[ "$b" = tributary ] && s0=$(slow_produce)
			r=$(bin/benchcompare latency -b "${addr[$b]}" -topics "lat80-$rep" -rate "$rate" -size 100 \
				-warmup 3s -duration "${LAT_SECONDS}s")
			r="$r $(stalls_during "$v0" "$(stalls)")"
			[ "$b" = tributary ] && r="$r broker_produce_over_25ms=$(($(slow_produce) - s0))"
			record "w=lat80 b=$b rep=$rep target_rate=$rate $r"
		done
		drop+=("lat80-$rep")
	fi
	if has tls; then
		# PLAINTEXT then SSL, each with both brokers in turn; every
		# topic is read back right after it is written.
		for proto in PLAINTEXT SSL; do
			for b in "${brokers[@]}"; do
				t="tls-${proto,,}-$rep"
				topic "$b" "$t" 6
				produce "tlsp_$proto" "$b" "$t" "$NTLS" "$TLS_SIZE" 1
				consume "tlsc_$proto" "$b" "$t" "$NTLS" "$TLS_SIZE"
			done
			drop+=("$t")
		done
		proto=PLAINTEXT
	fi
	if has many; then
		for b in "${brokers[@]}"; do
			if [ "$rep" = 1 ]; then
				for i in $(seq 0 9); do topic "$b" "many-$i" 100; done
				sleep 5
			fi
			c0=$(cpu "${pid[$b]}")
			sleep 10
			c1=$(cpu "${pid[$b]}")
			many=$(seq -s, -f 'many-%g' 0 9)
			bin/benchcompare latency -b "${addr[$b]}" -topics "$many" -rate 5000 -size 100 -warmup 0s -duration 5s >/dev/null
			r=$(bin/benchcompare latency -b "${addr[$b]}" -topics "$many" -rate 5000 -size 100 \
				-warmup 3s -duration "${LAT_SECONDS}s")
			record "w=many b=$b rep=$rep $r idle_cpu_pct=$(awk -v a="$c0" -v z="$c1" 'BEGIN { printf "%.1f", (z - a) * 10 }')"
		done
	fi
	if has p100a1 || has consume || has kgo; then drop+=("p100a1-$rep"); fi
	if has p1k; then drop+=("p1k-$rep"); fi
	for b in "${brokers[@]}"; do
		for t in "${drop[@]}"; do bin/tributary topic delete "$t" -b "${addr[$b]}" >/dev/null; done
	done
done
for b in "${brokers[@]}"; do
	record "w=rss b=$b hwm_kb=$(kb "${pid[$b]}" VmHWM) rss_kb=$(kb "${pid[$b]}" VmRSS)"
done

if has rf3; then
	# The single-node brokers stop first, so that the clusters have the
	# machine to themselves.
	for b in "${brokers[@]}"; do kill -TERM "${pid[$b]}"; wait "${pid[$b]}" 2>/dev/null || true; unset "pid[$b]"; done
	kvoters="" tvoters=""
	declare -A kp=() kc=() tp=() tc=()
	for i in 1 2 3; do
		kp[$i]=$(bin/benchcompare freeport) kc[$i]=$(bin/benchcompare freeport)
		tp[$i]=$(bin/benchcompare freeport) tc[$i]=$(bin/benchcompare freeport)
		kvoters+="${kvoters:+,}$i@127.0.0.1:${kc[$i]}" tvoters+="${tvoters:+,}$i@127.0.0.1:${tc[$i]}"
	done
	addr[kafka]="127.0.0.1:${kp[1]},127.0.0.1:${kp[2]},127.0.0.1:${kp[3]}"
	addr[tributary]="127.0.0.1:${tp[1]},127.0.0.1:${tp[2]},127.0.0.1:${tp[3]}"
	cid=$(J kafka.tools.StorageTool random-uuid)
	for i in 1 2 3; do
		sed -e "s/^node.id=.*/node.id=$i/" -e "s/^controller.quorum.voters=.*/controller.quorum.voters=$kvoters/" \
			-e "s|^listeners=.*|listeners=PLAINTEXT://127.0.0.1:${kp[$i]},CONTROLLER://127.0.0.1:${kc[$i]}|" \
			-e "s|^advertised.listeners=.*|advertised.listeners=PLAINTEXT://127.0.0.1:${kp[$i]}|" \
			-e "s|^log.dirs=.*|log.dirs=$dir/kafka-rf3-$i|" -e "s/replication.factor=1/replication.factor=3/" \
			"$dir/server.properties" >"$dir/server-rf3-$i.properties"
		echo "min.insync.replicas=2" >>"$dir/server-rf3-$i.properties"
		J kafka.tools.StorageTool format -t "$cid" -c "$dir/server-rf3-$i.properties" >/dev/null
		"${kafka_cmd[@]:0:${#kafka_cmd[@]}-1}" "$dir/server-rf3-$i.properties" >"$dir/kafka-rf3-$i.log" 2>&1 &
		pid[kafka$i]=$! pids[kafka]+=" $!"
		bin/tributary broker --node-id "$i" --log-dirs "$dir/tributary-rf3-$i" --admin-listen 127.0.0.1:0 \
			--listeners "PLAINTEXT://127.0.0.1:${tp[$i]},CONTROLLER://127.0.0.1:${tc[$i]}" \
			--set controller.listener.names=CONTROLLER --set controller.quorum.voters="$tvoters" \
			--set num.network.threads="$cores" --set num.io.threads="$cores" --set log.segment.bytes=1073741824 \
			--set group.initial.rebalance.delay.ms=0 --set default.replication.factor=3 --set min.insync.replicas=2 \
			>"$dir/tributary-rf3-$i.log" 2>&1 &
		pid[tributary$i]=$! pids[tributary]+=" $!"
	done
	for i in 1 2 3; do
		wait_port "kafka$i" "127.0.0.1:${kp[$i]}" "$dir/kafka-rf3-$i.log"
		wait_port "tributary$i" "127.0.0.1:${tp[$i]}" "$dir/tributary-rf3-$i.log"
	done
	{
		echo "# rf3 kafka: 3 nodes, each: ${kafka_cmd[*]:0:${#kafka_cmd[@]}-1} server-rf3-N.properties (server.properties with node.id, listeners, log.dirs, controller.quorum.voters=$kvoters, replication factors 3, min.insync.replicas=2)"
		echo "# rf3 tributary: 3 nodes, each: bin/tributary broker --node-id N --listeners PLAINTEXT://...,CONTROLLER://... --set controller.listener.names=CONTROLLER --set controller.quorum.voters=$tvoters (and the single node's settings, default.replication.factor=3, min.insync.replicas=2)"
	} | tee -a "$OUT"
	sleep 5
	for rep in $(seq "$REPS"); do
		echo "== replicated round $rep of $REPS" | tee -a "$OUT"
		for b in "${brokers[@]}"; do
			bin/tributary topic create "rf3-$rep" -p 6 -r 3 -b "${addr[$b]}" >/dev/null
			produce rf3 "$b" "rf3-$rep" "$N100RF3" 100 all
			consume consume3 "$b" "rf3-$rep" "$N100RF3"
		done
		for b in "${brokers[@]}"; do
			bin/tributary topic create "lat3-$rep" -p 6 -r 3 -b "${addr[$b]}" >/dev/null
			r=$(bin/benchcompare latency -b "${addr[$b]}" -topics "lat3-$rep" -rate "$LAT_RATE" -size 100 \
				-warmup 3s -duration "${LAT_SECONDS}s")
			record "w=lat3 b=$b rep=$rep $r"
		done
	done
	for b in "${brokers[@]}"; do
		hwm=0
		for p in ${pids[$b]}; do hwm=$((hwm + $(kb "$p" VmHWM))); done
		record "w=rss3 b=$b hwm_kb=$hwm"
	done
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"

# The table: medians over the rounds; ratio = Tributary / Apache Kafka.
table=$(awk -v cores="$cores" -v tls_size="$TLS_SIZE" '
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	if (n == 0) return ""
	for (i = 0; i < n; i++) a[i] = val[key, i]
	for (i = 1; i < n; i++) for (j = i; j > 0 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2
}
function add(key, v) { val[key, cnt[key]++] = v; if (rep != "") { pv[key, rep] = v; reps[rep] = 1 } }
/^w=/ {
	delete f
	for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	w = f["w"]; b = f["b"]; rep = ""
	if (w == "disk") { add("disk", f["MBs"]); next }
	if (w == "cwrite") { add("cwrite", f["MBs"]); add("cwrite" SUBSEP "machine", f["machine_share"]); next }
	if (w == "rss") { add(b SUBSEP "rss", f["hwm_kb"] / 1024); next }
	if (w == "rss3") { add(b SUBSEP "rss3", f["hwm_kb"] / 1024); next }
	rep = f["rep"]
	if (w ~ /^txn/) {
		add(b SUBSEP w SUBSEP "recs", f["recs"]); add(b SUBSEP w SUBSEP "p50", f["p50_ms"]); add(b SUBSEP w SUBSEP "p99", f["p99_ms"])
		next
	}
	if (w == "lat" || w == "lat80" || w == "lat3" || w == "many") {
		if (w == "lat80") add(b SUBSEP w SUBSEP "rate", f["rate"])
		add(b SUBSEP w SUBSEP "p50", f["p50_ms"]); add(b SUBSEP w SUBSEP "p99", f["p99_ms"]); add(b SUBSEP w SUBSEP "p999", f["p999_ms"])
		if (w == "many") add(b SUBSEP w SUBSEP "idle", f["idle_cpu_pct"])
		next
	}
	add(b SUBSEP w SUBSEP "recs", f["recs"]); add(b SUBSEP w SUBSEP "MBs", f["MBs"])
	if (f["bytes"] > 0) add(b SUBSEP w SUBSEP "cpugb", f["cpu"] / (f["bytes"] / 1e9))
	if ("client_share" in f) add(b SUBSEP w SUBSEP "share", f["client_share"])
	if ("machine_share" in f) add(b SUBSEP w SUBSEP "machine", f["machine_share"])
}
# The MB/s of Tributary in workload w against the sequential write speed
# of the disk measured in the same run.
function disk(name, w,    d, t) {
	if (cnt["disk"] == 0) return
	d = median("disk"); t = median("tributary" SUBSEP w SUBSEP "MBs")
	if (t == "") return
	printf "| %s (dd oflag=direct, %.0f MB/s) | | %.1f MB/s | %.2f | ≥ 0.80 | %s |\n", name, d, t, t / d, (t / d >= 0.8) ? "yes" : "**no**"
}
# The MB/s of each broker in workload w as a share of the ceiling measured in
# the same run (benchfetch ceiling: the same transfer with no protocol).
function share(name, w, ceil,    k, t, c) {
	k = median("kafka" SUBSEP w SUBSEP "MBs"); t = median("tributary" SUBSEP w SUBSEP "MBs")
	if (k == "" || t == "") return
	if (ceil != "") { c = median(ceil); if (c == "" || c == 0) return; k = k / c; t = t / c }
	else {
		c = median("kafka" SUBSEP "cread" SUBSEP "MBs"); if (c == "" || c == 0) return; k = k / c
		c = median("tributary" SUBSEP "cread" SUBSEP "MBs"); if (c == "" || c == 0) return; t = t / c
	}
	printf "| %s | %.0f %% | %.0f %% | | | limit |\n", name, 100 * k, 100 * t
}
# A limit row shows what stops a ratio from showing: the producer share
# of the machine CPU over its run, against each broker.
function limit(name, key,    k, t) {
	k = median("kafka" SUBSEP key); t = median("tributary" SUBSEP key)
	if (k == "" || t == "") return
	printf "| %s | %.0f %% | %.0f %% | | | limit |\n", name, k, t
}
# The ratio is the median of the per-round ratios (Kafka and Tributary
# ran back to back in each round), which resists load from elsewhere better
# than the ratio of the medians; rss has one value each.
function row(name, key, unit, target, better, fmt,    k, t, r, met, tg, q, m) {
	k = median("kafka" SUBSEP key); t = median("tributary" SUBSEP key)
	if (k == "" || t == "") return
	r = k > 0 ? t / k : 0
	q = "ratio" SUBSEP key; m = 0
	for (rp in reps) if ((("kafka" SUBSEP key), rp) in pv && (("tributary" SUBSEP key), rp) in pv && pv["kafka" SUBSEP key, rp] > 0) {
		val[q, m++] = pv["tributary" SUBSEP key, rp] / pv["kafka" SUBSEP key, rp]
	}
	cnt[q] = m
	if (m > 0) r = median(q)
	met = "-"
	if (target != "") met = (better == "hi" ? r >= target : r <= target) ? "yes" : "**no**"
	tg = target == "" ? "" : (better == "hi" ? "≥ " : "≤ ") target
	printf "| %s | " fmt " %s | " fmt " %s | %.2f | %s | %s |\n", name, k, unit, t, unit, r, tg, met
}
# The SSL run of each broker against its own PLAINTEXT run: op "/" gives
# SSL / PLAINTEXT, "-" gives SSL less PLAINTEXT (the CPU s/GB TLS adds).
function tls(name, w, key, op, fmt,    kp, ks, tp, ts, k, t) {
	kp = median("kafka" SUBSEP w "_PLAINTEXT" SUBSEP key); ks = median("kafka" SUBSEP w "_SSL" SUBSEP key)
	tp = median("tributary" SUBSEP w "_PLAINTEXT" SUBSEP key); ts = median("tributary" SUBSEP w "_SSL" SUBSEP key)
	if (kp == "" || ks == "" || tp == "" || ts == "" || kp == 0 || tp == 0) return
	if (op == "/") { k = ks / kp; t = ts / tp } else { k = ks - kp; t = ts - tp }
	printf "| %s | " fmt " | " fmt " | %.2f | | - |\n", name, k, t, k != 0 ? t / k : 0
}
END {
	print "| workload | Apache Kafka | Tributary | ratio T/K (median of rounds) | target | met? |"
	print "|---|---|---|---|---|---|"
	row("produce 100 B, acks=1", "p100a1" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	row("produce 100 B, acks=all idempotent", "p100all" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	row("produce 100 B, acks=1, raw Go producer (" cores " connections)", "p100raw" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	limit("limit: the whole machine CPU busy (all " cores " cores, softirq included) during the raw 100 B run", "p100raw" SUBSEP "machine")
	row("produce 1 KiB, acks=1", "p1k" SUBSEP "MBs", "MB/s", "", "hi", "%.1f")
	row("produce 16 KiB, acks=1", "p16k" SUBSEP "MBs", "MB/s", 1.2, "hi", "%.1f")
	limit("limit: ProducerPerformance CPU, share of all " cores " cores over its run, 100 B acks=1", "p100a1" SUBSEP "share")
	limit("limit: the same, 100 B acks=all", "p100all" SUBSEP "share")
	limit("limit: the same, 16 KiB", "p16k" SUBSEP "share")
	disk("produce 16 KiB: Tributary / disk write", "p16k")
	row("produce 16 KiB, acks=1, raw Go producer (" cores " connections)", "p16kraw" SUBSEP "MBs", "MB/s", 1.2, "hi", "%.1f")
	disk("produce 16 KiB, raw Go producer: Tributary / disk write", "p16kraw")
	limit("limit: the whole machine CPU busy (all " cores " cores, softirq included) during the raw 16 KiB run", "p16kraw" SUBSEP "machine")
	if (cnt["cwrite"] > 0) share(sprintf("limit: the raw 16 KiB run as a share of the same bytes sent over loopback and written into page-cache files with no protocol (benchfetch ceiling write: %.0f MB/s, the machine %.0f %% busy)", median("cwrite"), median("cwrite" SUBSEP "machine")), "p16kraw", "cwrite")
	row("consume, ConsumerPerformance", "consume" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	row("consume, franz-go", "kgo" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	row("consume, raw Go consumer, 16 KiB records", "craw" SUBSEP "MBs", "MB/s", 1.5, "hi", "%.1f")
	limit("limit: the whole machine CPU busy (all " cores " cores, softirq included) during the raw consume", "craw" SUBSEP "machine")
	row("limit: the segment files of that topic of each broker, sent over loopback with sendfile and no protocol (benchfetch ceiling read)", "cread" SUBSEP "MBs", "MB/s", "", "hi", "%.1f")
	share("limit: the raw consume as a share of the files of its broker sent that way", "craw", "")
	row("e2e latency at 50k rec/s, p50", "lat" SUBSEP "p50", "ms", "", "lo", "%.2f")
	row("e2e latency at 50k rec/s, p99", "lat" SUBSEP "p99", "ms", 0.5, "lo", "%.2f")
	row("e2e latency at 50k rec/s, p99.9", "lat" SUBSEP "p999", "ms", "", "lo", "%.2f")
	row("e2e latency at 80 % of the produce 100 B acks=1 rec/s of Kafka: rate the client sent", "lat80" SUBSEP "rate", "rec/s", "", "hi", "%.0f")
	row("e2e latency at 80 % of that: p50", "lat80" SUBSEP "p50", "ms", "", "lo", "%.2f")
	row("e2e latency at 80 % of that: p99", "lat80" SUBSEP "p99", "ms", "", "lo", "%.2f")
	row("e2e latency at 80 % of that: p99.9", "lat80" SUBSEP "p999", "ms", "", "lo", "%.2f")
	for (ti = 1; ti <= 3; ti++) {
		tw = ti == 1 ? "txn1" : ti == 2 ? "txn10" : "txn100"; tms = substr(tw, 4)
		row("transactional produce 100 B, commit every " tms " ms", tw SUBSEP "recs", "rec/s", 1, "hi", "%.0f")
		row("EndTxn p50, commit every " tms " ms", tw SUBSEP "p50", "ms", "", "lo", "%.2f")
		row("EndTxn p99, commit every " tms " ms", tw SUBSEP "p99", "ms", 1, "lo", "%.2f")
	}
	row("1,000 partitions: idle broker CPU", "many" SUBSEP "idle", "% of a core", "", "lo", "%.1f")
	row("1,000 partitions, 5k rec/s: p99", "many" SUBSEP "p99", "ms", "", "lo", "%.2f")
	row("3 brokers, RF 3, min ISR 2: produce 100 B, acks=all idempotent", "rf3" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	row("3 brokers, RF 3: consume, ConsumerPerformance", "consume3" SUBSEP "recs", "rec/s", 1.5, "hi", "%.0f")
	row("peak RSS (VmHWM)", "rss", "MiB", 0.25, "lo", "%.0f")
	row("3 brokers, RF 3: e2e latency at 50k rec/s, p50", "lat3" SUBSEP "p50", "ms", "", "lo", "%.2f")
	row("3 brokers, RF 3: e2e latency at 50k rec/s, p99", "lat3" SUBSEP "p99", "ms", 0.5, "lo", "%.2f")
	row("3 brokers, RF 3: e2e latency at 50k rec/s, p99.9", "lat3" SUBSEP "p999", "ms", "", "lo", "%.2f")
	row("3 brokers: peak RSS, sum of the three", "rss3", "MiB", 0.25, "lo", "%.0f")
	row("broker CPU s/GB, produce 100 B acks=1", "p100a1" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, produce 100 B acks=all", "p100all" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, produce 100 B, raw Go producer", "p100raw" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("3 brokers: CPU s/GB (sum), produce 100 B RF 3 acks=all", "rf3" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("3 brokers: CPU s/GB (sum), consume (ConsumerPerformance)", "consume3" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, produce 16 KiB", "p16k" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, produce 16 KiB, raw Go producer", "p16kraw" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, consume (ConsumerPerformance)", "consume" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, consume (franz-go)", "kgo" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	row("broker CPU s/GB, consume (raw Go consumer)", "craw" SUBSEP "cpugb", "", 0.6, "lo", "%.2f")
	sz = tls_size " B"
	row("TLS: produce " sz ", acks=1, PLAINTEXT listener", "tlsp_PLAINTEXT" SUBSEP "MBs", "MB/s", "", "hi", "%.1f")
	row("TLS: produce " sz ", acks=1, SSL listener", "tlsp_SSL" SUBSEP "MBs", "MB/s", "", "hi", "%.1f")
	tls("TLS: produce, SSL / PLAINTEXT MB/s", "tlsp", "MBs", "/", "%.2f")
	row("TLS: consume " sz ", PLAINTEXT listener", "tlsc_PLAINTEXT" SUBSEP "MBs", "MB/s", "", "hi", "%.1f")
	row("TLS: consume " sz ", SSL listener", "tlsc_SSL" SUBSEP "MBs", "MB/s", "", "hi", "%.1f")
	tls("TLS: consume, SSL / PLAINTEXT MB/s", "tlsc", "MBs", "/", "%.2f")
	row("TLS: broker CPU s/GB, produce, PLAINTEXT", "tlsp_PLAINTEXT" SUBSEP "cpugb", "", "", "lo", "%.2f")
	row("TLS: broker CPU s/GB, produce, SSL", "tlsp_SSL" SUBSEP "cpugb", "", "", "lo", "%.2f")
	tls("TLS: broker CPU s/GB TLS adds to produce (SSL less PLAINTEXT)", "tlsp", "cpugb", "-", "%.2f")
	row("TLS: broker CPU s/GB, consume, PLAINTEXT", "tlsc_PLAINTEXT" SUBSEP "cpugb", "", "", "lo", "%.2f")
	row("TLS: broker CPU s/GB, consume, SSL", "tlsc_SSL" SUBSEP "cpugb", "", "", "lo", "%.2f")
	tls("TLS: broker CPU s/GB TLS adds to consume (SSL less PLAINTEXT)", "tlsc", "cpugb", "-", "%.2f")
}' "$OUT")
echo
echo "== medians of $REPS rounds ($OUT); ratio = median over rounds of Tributary / Apache Kafka; GB = 1e9 bytes of record values"
echo "$table" | tee -a "$OUT"

# With WRITE_DOC=1 (the default for a full run: REPS >= 3, SCALE=1, every
# workload), the lines between the two markers in docs/PERFORMANCE.md's
# section "# Against Apache Kafka" become this run's description and table;
# for a run of tls alone, those between the bench-vs-kafka-tls markers of its
# section "TLS: what it costs per GB".
full=0
[ "$REPS" -ge 3 ] && [ "$SCALE" = 1 ] && [ -z "${WORKLOADS_SET:-}" ] && full=1
if [ "${WRITE_DOC:-$full}" = 1 ]; then
	doc=docs/PERFORMANCE.md
	marker=bench-vs-kafka
	[ "$(echo $WORKLOADS)" = tls ] && marker=bench-vs-kafka-tls
	begin="<!-- $marker:begin -->" end="<!-- $marker:end -->"
	if grep -qF "$begin" "$doc" && grep -qF "$end" "$doc"; then
		gen="$dir/generated.md"
		{
			echo "$begin"
			echo
			echo "Run finished $(date -u +%Y-%m-%dT%H:%MZ), commit at the end $(git describe --always --dirty 2>/dev/null || echo unknown), by \`scripts/bench-vs-kafka.sh\`:"
			echo
			echo '```'
			grep '^# ' "$OUT" | sed 's/^# //'
			echo '```'
			echo
			echo "Medians of $REPS rounds; ratio = median over the rounds of Tributary / Apache Kafka in that round; GB = 1e9 bytes of record values."
			echo
			echo "$table"
			echo
			echo "$end"
		} >"$gen"
		awk -v begin="$begin" -v end="$end" -v gen="$gen" '
			$0 == begin { while ((getline l < gen) > 0) print l; skip = 1; next }
			$0 == end { skip = 0; next }
			!skip' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
		echo "bench-vs-kafka: wrote the table into $doc"
	else
		echo "bench-vs-kafka: $doc has no $begin / $end markers; not written" >&2
	fi
fi
