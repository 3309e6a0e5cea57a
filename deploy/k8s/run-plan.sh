#!/bin/sh
# Run a saved load plan's units as a Kubernetes Indexed Job and wait for it.
# The jobs scheduler runs this as a job's executor:
#
#   jobs:
#     - name: events-hourly
#       executor: command
#       command: [/etc/tributary/run-plan.sh]
#
# with TRIBUTARY_PLAN (the plan's URI), TRIBUTARY_RUN, TRIBUTARY_JOB,
# TRIBUTARY_UNITS and TRIBUTARY_PARALLELISM in the environment. It needs
# kubectl and envsubst, and a service account allowed to create, get and
# watch Jobs. Exit 0 once every pod succeeded; the scheduler then commits.
#
# The Job's name comes from the run, so a scheduler that restarts and
# resumes the run finds the same Job (kubectl apply changes nothing) and
# waits for it again instead of starting a second one.
set -eu
: "${TRIBUTARY_PLAN:?} ${TRIBUTARY_RUN:?} ${TRIBUTARY_JOB:?} ${TRIBUTARY_PARALLELISM:?}"
here=$(cd "$(dirname "$0")" && pwd)
template=${TRIBUTARY_LOADER_JOB_TEMPLATE:-$here/loader-job.yaml}
timeout=${TRIBUTARY_LOADER_JOB_TIMEOUT:-21600} # seconds

# A DNS-1123 name of at most 63 characters, unique per run.
suffix=$(printf %s "$TRIBUTARY_RUN" | tr 'A-Z_.' 'a-z--' | tr -cd 'a-z0-9-' | tail -c 48)
TRIBUTARY_K8S_JOB="tl-$suffix"
export TRIBUTARY_K8S_JOB TRIBUTARY_PLAN TRIBUTARY_JOB TRIBUTARY_PARALLELISM

envsubst '${TRIBUTARY_K8S_JOB} ${TRIBUTARY_PLAN} ${TRIBUTARY_JOB} ${TRIBUTARY_PARALLELISM}' <"$template" |
  kubectl apply -f -

start=$(date +%s)
while :; do
  state=$(kubectl get job "$TRIBUTARY_K8S_JOB" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
  case " $state " in
    *" Complete "*) echo "job $TRIBUTARY_K8S_JOB complete"; exit 0 ;;
    *" Failed "*)
      kubectl describe job "$TRIBUTARY_K8S_JOB" >&2 || true
      echo "job $TRIBUTARY_K8S_JOB failed: the scheduler retries the run, which reruns the units not done" >&2
      # Delete it, so that the retry's apply starts fresh pods.
      kubectl delete job "$TRIBUTARY_K8S_JOB" --wait=false >&2 || true
      exit 1 ;;
  esac
  if [ $(($(date +%s) - start)) -ge "$timeout" ]; then
    echo "job $TRIBUTARY_K8S_JOB not complete after ${timeout}s" >&2
    exit 1
  fi
  sleep 5
done
