#!/usr/bin/env bash
# make demo: a single-node broker on its embedded defaults (localhost:9092,
# data in ./tributary-data), a topic with a few page views produced and read
# back through the Kafka protocol, then the broker keeps serving until Ctrl-C.
# A second run continues with the same data.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=./bin/tributary
data=${TRIBUTARY_DEMO_DATA:-./tributary-data}

"$bin" broker --log-dirs "$data" &
pid=$!
stop() { kill -TERM "$pid" 2>/dev/null && wait "$pid" || true; }
trap stop EXIT
trap 'exit 0' INT TERM

for _ in $(seq 1 100); do
  "$bin" topic list >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "the broker did not start; see its log above" >&2; exit 1; }
  sleep 0.1
done

"$bin" topic describe page-views >/dev/null 2>&1 || "$bin" topic create page-views --partitions 3
now=$(date +%s)
since=$(date +%s%3N)
printf '%s\n' \
  "visitor-1	{\"type\":\"page\",\"path\":\"/\",\"t\":$now}" \
  "visitor-2	{\"type\":\"page\",\"path\":\"/pricing\",\"t\":$now}" \
  "visitor-1	{\"type\":\"track\",\"event\":\"Signed Up\",\"t\":$now}" \
  | "$bin" produce page-views --key-separator $'\t'
echo "--- read back from the time they were sent, as partition/offset key value:"
"$bin" consume page-views --timestamp "$since" --count 3 --format '%p/%o %k %s\n'

cat <<MSG

Tributary is running on localhost:9092 (data in $data). In another terminal:
  ./bin/tributary topic describe page-views
  ./bin/tributary consume page-views --from-beginning --format '%p/%o %k %s\n'
  echo 'visitor-3	hello' | ./bin/tributary produce page-views --key-separator \$'\t'
  ./bin/tributary perf produce --topic bench --records 200000 --record-size 100
Any Kafka client works too: point it at localhost:9092. Ctrl-C stops the broker cleanly.
MSG
wait "$pid"
