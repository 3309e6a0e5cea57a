#!/usr/bin/env bash
# Stop an HDFS started by scripts/hdfs-up.sh:
#
#   scripts/hdfs-down.sh [--keep] [STATE_FILE | HDFS_DIR]
#
# Without an argument: $HDFS_STATE, else the most recent instance
# (${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/hdfs-last). Sends SIGTERM to the
# DataNode and the NameNode, waits up to 20 s, then SIGKILL. Removes the
# instance directory if hdfs-up.sh created it (a temporary dir), unless --keep
# or HDFS_KEEP=1; a dir given as HDFS_DIR to hdfs-up.sh is always kept.
# Stopping an instance that is already stopped is not an error.
set -euo pipefail

keep=${HDFS_KEEP:-0}
arg=
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) arg=$a ;;
  esac
done
log() { printf 'hdfs-down: %s\n' "$*" >&2; }

last="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/hdfs-last"
state=${arg:-${HDFS_STATE:-}}
if [[ -z "$state" && -f "$last" ]]; then state=$(cat "$last"); fi
[[ -n "$state" ]] || { log "no instance given and none recorded in $last"; exit 0; }
[[ -d "$state" ]] && state="$state/hdfs.env"
if [[ ! -f "$state" ]]; then
  log "no state file $state: nothing to stop"
  exit 0
fi

get() { sed -n "s/^$1=//p" "$state" | tail -n 1; }
dir=$(get HDFS_DIR)
owned=$(get HDFS_DIR_OWNED)
# Only signal a PID that is still a JVM of this instance (PIDs get reused).
ours() { [[ -n "$1" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-Dtributary.hdfs.dir=$dir "; }

# shellcheck source=lib/watchdog.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/watchdog.sh"
watchdog_stop "$(get HDFS_WATCHDOG_PID)" "$state"

pids=()
# The KDC last: the daemons may still renew their tickets while they stop.
for k in HDFS_DATANODE_PID HDFS_NAMENODE_PID HDFS_KDC_PID; do
  p=$(get "$k")
  if ours "$p"; then
    kill -TERM "$p" 2>/dev/null || true
    pids+=("$p")
  fi
done
for _ in $(seq 100); do
  left=()
  for p in "${pids[@]}"; do ours "$p" && left+=("$p"); done
  ((${#left[@]} == 0)) && break
  sleep 0.2
done
for p in "${pids[@]}"; do
  if ours "$p"; then
    log "pid $p did not stop within 20s after SIGTERM; SIGKILL"
    kill -KILL "$p" 2>/dev/null || true
  fi
done
log "stopped ${#pids[@]} daemon(s) of $dir"

if [[ -f "$last" && "$(cat "$last")" == "$state" ]]; then rm -f "$last"; fi
if [[ "$owned" == 1 && "$keep" != 1 ]]; then
  # The JVMs may still be closing files for a moment after SIGKILL.
  rm -rf "$dir" 2>/dev/null || { sleep 0.5; rm -rf "$dir"; }
  log "removed $dir"
else
  sed -i '/^HDFS_\(NAMENODE\|DATANODE\|WATCHDOG\|KDC\)_PID=/d' "$state"
  log "kept $dir"
fi
