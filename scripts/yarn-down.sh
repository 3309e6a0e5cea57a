#!/usr/bin/env bash
# Stop a YARN started by scripts/yarn-up.sh:  scripts/yarn-down.sh STATE_FILE
# SIGTERM to the NodeManager and the ResourceManager (their containers go
# with the NodeManager), SIGKILL after 10 s; removes the instance directory
# if yarn-up.sh made it. Stopping a stopped instance is not an error.
set -euo pipefail
state=${1:-${YARN_STATE:-}}
[[ -n "$state" && -f "$state" ]] || { echo "yarn-down: no state file ${state:-given}" >&2; exit 0; }
get() { sed -n "s/^$1=//p" "$state" | tail -n 1; }
dir=$(get YARN_DIR)
ours() { [[ -n "$1" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-Dtributary.yarn.dir=$dir "; }
# shellcheck source=lib/watchdog.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/watchdog.sh"
watchdog_stop "$(get YARN_WATCHDOG_PID)" "$state"
pids=()
for k in YARN_NM_PID YARN_RM_PID; do
  p=$(get "$k")
  if ours "$p"; then kill -TERM "$p" 2>/dev/null || true; pids+=("$p"); fi
done
for _ in $(seq 50); do
  left=()
  for p in "${pids[@]}"; do ours "$p" && left+=("$p"); done
  ((${#left[@]} == 0)) && break
  sleep 0.2
done
for p in "${pids[@]}"; do ours "$p" && kill -KILL "$p" 2>/dev/null || true; done
# Containers of the DefaultContainerExecutor are process groups of their own:
# any left (a NodeManager killed hard) are found by their working directory.
for p in $(ls /proc | grep -E '^[0-9]+$'); do
  case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$dir"/local/*) kill -KILL "$p" 2>/dev/null || true ;; esac
done
[[ "$(get YARN_DIR_OWNED)" == 1 ]] && rm -rf "$dir"
exit 0
