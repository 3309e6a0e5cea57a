# Sourced, not run: the watchdog hdfs-up.sh and yarn-up.sh leave behind when
# their caller passes its PID (HDFS_OWNER_PID, YARN_OWNER_PID), and how
# hdfs-down.sh and yarn-down.sh find and stop it.

# watchdog_start NAME OWNER_PID DOWN_SCRIPT STATE: a process in its own
# session (a Ctrl-C or kill of the caller's process group leaves it be) that
# runs `bash DOWN_SCRIPT STATE` once OWNER_PID is gone, however it ended (a
# test binary killed by -timeout, even while the up script still waits).
# Its PID is then $!; NAME is its argv[0], for ps.
watchdog_start() {
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" "$3"' \
    "$1" "$2" "$3" "$4" </dev/null >/dev/null 2>&1 &
}

# watchdog_of PID STATE: PID is still the watchdog of the instance whose
# state file is STATE (PIDs get reused; its command line names STATE).
watchdog_of() {
  [[ -n "$1" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# watchdog_stop PID STATE: stops the watchdog, unless it is this process:
# the watchdog runs the down script in its own place (exec).
watchdog_stop() {
  if [[ "$1" != "$$" ]] && watchdog_of "$1" "$2"; then
    kill -TERM "$1" 2>/dev/null || true
  fi
}
