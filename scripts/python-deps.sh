#!/usr/bin/env bash
# Create a Python venv with the packages the conformance and Parquet tests need
# (scripts/python/requirements.txt, from PyPI) and print its python as the
# last line of stdout:
#
#   py=$(scripts/python-deps.sh)
#   "$py" broker/conformance/python/conformance.py --bootstrap 127.0.0.1:9092
#
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/venv. Idempotent: a stamp
# file (written last, holding the hash of the requirements and of the Python
# version) marks a complete venv; with it in place the script only prints the
# path. Safe to run concurrently (flock). Progress and errors go to stderr.
# The interpreter is $PYTHON if set, else python3 (3.9+ with the venv module).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
req="$here/python/requirements.txt"
venv="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/venv"
stamp="$venv/.complete"
base="${PYTHON:-python3}"

log() { printf 'python-deps: %s\n' "$*" >&2; }

command -v "$base" >/dev/null || { log "$base not found (install Python 3.9+ with venv)"; exit 1; }
want="$(sha256sum "$req" | cut -d' ' -f1) $("$base" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
complete() { [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; }

if complete; then
  echo "$venv/bin/python"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
if command -v flock >/dev/null; then flock 9; fi
if complete; then # another process finished while we waited
  echo "$venv/bin/python"
  exit 0
fi

start=$SECONDS
log "creating $venv with $("$base" --version 2>&1) and installing $(grep -v '^#' "$req" | xargs) from PyPI ..."
rm -rf "$venv"
"$base" -m venv "$venv" >&2
# Wheels only: a source build of confluent-kafka would need librdkafka headers.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input \
  --only-binary=:all: -r "$req" >&2
"$venv/bin/python" -c 'import confluent_kafka as c; print("confluent-kafka", c.__version__, "librdkafka", c.libversion()[0])' >&2
"$venv/bin/python" -c 'import pyarrow as pa; print("pyarrow", pa.__version__)' >&2
"$venv/bin/python" -c 'import fastavro; from confluent_kafka.schema_registry.avro import AvroSerializer; print("fastavro", fastavro.__version__)' >&2
"$venv/bin/python" -c 'import pyiceberg; print("pyiceberg", pyiceberg.__version__)' >&2

echo "$want" >"$stamp"
log "done in $((SECONDS - start))s"
echo "$venv/bin/python"
