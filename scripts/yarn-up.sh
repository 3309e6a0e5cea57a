#!/usr/bin/env bash
# Start a real, single-node YARN (Apache Hadoop 3.4.2: one ResourceManager,
# one NodeManager, separate JVMs) on loopback, beside an HDFS started by
# scripts/hdfs-up.sh, for tests and the demo:
#
#   eval "$(scripts/hdfs-up.sh)"
#   eval "$(HDFS_NAMENODE=$HDFS_NAMENODE scripts/yarn-up.sh)"   # sets YARN_RM_HTTP, YARN_STATE, ...
#   curl http://$YARN_RM_HTTP/ws/v1/cluster/info
#   scripts/yarn-down.sh "$YARN_STATE"
#
# Every stdout line is KEY=VALUE; the last one is YARN_RM_HTTP=127.0.0.1:PORT
# (the ResourceManager's web port: its REST API, what the yarn executor
# talks to). Progress and errors go to stderr. See docs/hdfs.md.
#
# Jars: the ResourceManager, NodeManager and DistributedShell jars and their
# runtime dependencies from Maven Central (scripts/hadoop/yarn/pom.xml) into
# ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/hadoop-3.4.2/yarn-lib, once
# (a stamp file with the pom's hash marks a complete cache; flock serialises).
#
# Containers run with the DefaultContainerExecutor: as the NodeManager's own
# OS user (root included), with no cgroups and no memory enforcement. That is
# a test cluster's choice; a production cluster runs the
# LinuxContainerExecutor, which refuses root.
#
# Environment:
#   HDFS_NAMENODE      host:port of the HDFS that containers localize from
#                      (fs.defaultFS). Required.
#   YARN_DIR           instance directory (default: a new mktemp -d, removed
#                      by yarn-down.sh).
#   YARN_NM_MEMORY_MB  memory the NodeManager offers (default 4096)
#   YARN_NM_VCORES     vcores it offers (default 8)
#   YARN_TIMEOUT       seconds to wait for a registered NodeManager (default 120)
#   YARN_HEAP          -Xmx of each daemon (default 384m)
#   YARN_OWNER_PID     stop YARN when this process exits (tests pass their PID)
#   YARN_JARS_ONLY=1   only fetch the jars, print YARN_LIB=<dir> and exit.
#   YARN_KERBEROS=1    a Kerberized YARN beside a Kerberized HDFS (below).
#
# Kerberized mode (YARN_KERBEROS=1) reuses the MiniKdc and keytab of
# `HDFS_KERBEROS=1 scripts/hdfs-up.sh` (give its HDFS_CONF_DIR, KRB5_CONFIG
# and HDFS_KEYTAB): the ResourceManager and NodeManager log in as
# hdfs/localhost (a production cluster gives them rm/ and nm/ principals of
# their own; the test KDC's principals are fixed when it starts), their web
# servers take SPNEGO only (HTTP/localhost), so the REST API must be called
# as http://localhost:PORT. The HDFS client settings (hdfs-site.xml,
# hadoop.rpc.protection) are the HDFS instance's. Containers get
# KRB5_CONFIG and -Djava.security.krb5.conf through
# yarn.nodemanager.admin-env, HADOOP_CONF_DIR from the NodeManager: what a
# real node's /etc/krb5.conf and Hadoop install give them. Readiness is read
# from the NodeManager's log (the REST API wants a ticket). It also prints
# YARN_RM_PRINCIPAL (the renewer of the applications' HDFS tokens).
#
# Besides YARN_RM_HTTP it prints YARN_DIR, YARN_STATE, YARN_RM (the client
# RPC address), YARN_CONF_DIR (yarn-site.xml + core-site.xml) and
# YARN_APP_CLASSPATH: the CLASSPATH an ApplicationMaster's container needs on
# this cluster (the cached jars and the conf dir), where a real cluster has
# its yarn.application.classpath, and YARN_DSHELL_JAR (DistributedShell).
set -euo pipefail

HADOOP_VERSION=3.4.2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/hadoop/yarn/pom.xml"
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/hadoop-$HADOOP_VERSION"
lib="$root/yarn-lib"
t0=$(date +%s%N)

log() { printf 'yarn-up: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
elapsed() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"; }

# shellcheck source=lib/maven-jars.sh
source "$here/lib/maven-jars.sh"
maven_jars --log yarn-up --dir "$lib" --pom "$pom" --stamp "$root/.yarn-complete" \
  --what "Hadoop $HADOOP_VERSION's YARN jars" \
  --need "hadoop-yarn-server-nodemanager-$HADOOP_VERSION.jar" \
  --need "hadoop-yarn-applications-distributedshell-$HADOOP_VERSION.jar" || exit 1
dshell="$lib/hadoop-yarn-applications-distributedshell-$HADOOP_VERSION.jar"
if [[ "${YARN_JARS_ONLY:-}" == 1 ]]; then
  echo "YARN_LIB=$lib"
  exit 0
fi

command -v java >/dev/null || die "java not found (install Java 17+)"
command -v curl >/dev/null || die "curl not found"
[[ -n "${HDFS_NAMENODE:-}" ]] || die "HDFS_NAMENODE is not set (start HDFS first: scripts/hdfs-up.sh)"

owned=0
if [[ -n "${YARN_DIR:-}" ]]; then
  mkdir -p "$YARN_DIR"; dir=$(cd "$YARN_DIR" && pwd)
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/tributary-yarn.XXXXXX"); owned=1
fi
state="$dir/yarn.env"
conf="$dir/conf"
mkdir -p "$conf" "$dir/logs" "$dir/local" "$dir/nmlogs" "$dir/tmp"

free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12768))
    if [[ -z "$(ss -tan "sport = :$p" 2>/dev/null | tail -n +2)" ]] && ! grep -q ":$p<" "$conf/yarn-site.xml" 2>/dev/null; then
      echo "$p"; return
    fi
  done
  die "no free port found"
}
krb=${YARN_KERBEROS:-0}
if ((krb)); then
  for v in HDFS_CONF_DIR KRB5_CONFIG HDFS_KEYTAB; do
    [[ -n "${!v:-}" ]] || die "YARN_KERBEROS=1 needs $v (from HDFS_KERBEROS=1 scripts/hdfs-up.sh)"
  done
  realm=$(sed -n 's/^ *default_realm *= *//p' "$KRB5_CONFIG" | head -1)
  [[ -n "$realm" ]] || die "no default_realm in $KRB5_CONFIG"
  # The HDFS client settings of the Kerberized instance: its RPC
  # protection, NameNode principal and data transfer protection.
  cp "$HDFS_CONF_DIR/hdfs-site.xml" "$conf/hdfs-site.xml"
  rpc_prot=$(grep -o '<name>hadoop.rpc.protection</name><value>[^<]*' "$HDFS_CONF_DIR/core-site.xml" | sed 's/.*<value>//')
fi
rm -f "$conf/yarn-site.xml"
rm_port=$(free_port); sched_port=$(free_port); track_port=$(free_port); admin_port=$(free_port)
web_port=$(free_port); loc_port=$(free_port); nm_web=$(free_port); nm_port=$(free_port)
mem=${YARN_NM_MEMORY_MB:-4096}
vcores=${YARN_NM_VCORES:-8}

prop() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }
{
  echo '<?xml version="1.0"?>'
  echo '<!-- Written by scripts/yarn-up.sh. -->'
  echo '<configuration>'
  prop fs.defaultFS "hdfs://$HDFS_NAMENODE"
  prop hadoop.tmp.dir "$dir/tmp"
  prop hadoop.http.filter.initializers org.apache.hadoop.security.AuthenticationFilterInitializer
  if ((krb)); then
    prop hadoop.security.authentication kerberos
    prop hadoop.security.auth_to_local DEFAULT
    prop hadoop.rpc.protection "${rpc_prot:-authentication}"
    # Every web request, the REST API's included, with SPNEGO.
    prop hadoop.http.authentication.type kerberos
    prop hadoop.http.authentication.kerberos.principal "HTTP/localhost@$realm"
    prop hadoop.http.authentication.kerberos.keytab "$HDFS_KEYTAB"
    prop hadoop.http.authentication.simple.anonymous.allowed false
  else
    prop hadoop.security.authentication simple
    # REST calls name their user with ?user.name= (the yarn executor does).
    prop hadoop.http.authentication.type simple
    prop hadoop.http.authentication.simple.anonymous.allowed true
  fi
  prop ipc.client.connect.max.retries 2
  prop ipc.client.connect.retry.interval 200
  echo '</configuration>'
} >"$conf/core-site.xml"
{
  echo '<?xml version="1.0"?>'
  echo '<!-- Written by scripts/yarn-up.sh. -->'
  echo '<configuration>'
  prop yarn.resourcemanager.hostname 127.0.0.1
  prop yarn.resourcemanager.address "127.0.0.1:$rm_port"
  prop yarn.resourcemanager.scheduler.address "127.0.0.1:$sched_port"
  prop yarn.resourcemanager.resource-tracker.address "127.0.0.1:$track_port"
  prop yarn.resourcemanager.admin.address "127.0.0.1:$admin_port"
  prop yarn.resourcemanager.webapp.address "127.0.0.1:$web_port"
  prop yarn.nodemanager.hostname 127.0.0.1
  prop yarn.nodemanager.address "127.0.0.1:$nm_port"
  prop yarn.nodemanager.localizer.address "127.0.0.1:$loc_port"
  prop yarn.nodemanager.webapp.address "127.0.0.1:$nm_web"
  prop yarn.nodemanager.local-dirs "$dir/local"
  prop yarn.nodemanager.log-dirs "$dir/nmlogs"
  prop yarn.nodemanager.resource.memory-mb "$mem"
  prop yarn.nodemanager.resource.cpu-vcores "$vcores"
  prop yarn.nodemanager.vmem-check-enabled false
  prop yarn.nodemanager.pmem-check-enabled false
  # A nearly full test disk must not mark the only node unhealthy.
  prop yarn.nodemanager.disk-health-checker.enable false
  prop yarn.nodemanager.container-executor.class org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor
  prop yarn.nodemanager.delete.debug-delay-sec 600
  prop yarn.nodemanager.sleep-delay-before-sigkill.ms 250
  prop yarn.scheduler.minimum-allocation-mb 64
  prop yarn.scheduler.maximum-allocation-mb "$mem"
  # Heartbeats fast: allocation latency is what a load's overhead is made of.
  prop yarn.resourcemanager.nodemanagers.heartbeat-interval-ms 200
  prop yarn.nodemanager.container-monitor.interval-ms 1000
  prop yarn.am.liveness-monitor.expiry-interval-ms 30000
  prop yarn.resourcemanager.am.max-attempts 2
  prop yarn.log-aggregation-enable false
  prop yarn.timeline-service.enabled false
  prop yarn.webapp.ui2.enable false
  if ((krb)); then
    for d in resourcemanager nodemanager; do
      prop yarn.$d.principal "hdfs/localhost@$realm"
      prop yarn.$d.keytab "$HDFS_KEYTAB"
      prop yarn.$d.webapp.spnego-principal "HTTP/localhost@$realm"
      prop yarn.$d.webapp.spnego-keytab-file "$HDFS_KEYTAB"
    done
    prop yarn.nodemanager.admin-env "MALLOC_ARENA_MAX=4,KRB5_CONFIG=$KRB5_CONFIG,JAVA_TOOL_OPTIONS=-Djava.security.krb5.conf=$KRB5_CONFIG"
  fi
  echo '</configuration>'
} >"$conf/yarn-site.xml"
{
  echo '<?xml version="1.0"?>'
  echo '<configuration>'
  prop yarn.scheduler.capacity.root.queues default
  prop yarn.scheduler.capacity.root.default.capacity 100
  prop yarn.scheduler.capacity.root.default.maximum-capacity 100
  # One node: AMs may take half of it (the default 10% starves a small node).
  prop yarn.scheduler.capacity.maximum-am-resource-percent 0.5
  prop yarn.scheduler.capacity.root.default.acl_submit_applications '*'
  prop yarn.scheduler.capacity.root.default.acl_administer_queue '*'
  echo '</configuration>'
} >"$conf/capacity-scheduler.xml"
cp "$here/hadoop/log4j.properties" "$conf/log4j.properties"

cp_="$conf:$lib/*"
# Containers find java through {{JAVA_HOME}}, which the NodeManager passes on
# from its own environment.
if [[ -z "${JAVA_HOME:-}" ]]; then
  JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
  export JAVA_HOME
fi
jflags=(-Xmx"${YARN_HEAP:-384m}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true
        -Dtributary.yarn.dir="$dir" -Dhadoop.home.dir="$root" -Dhadoop.log.dir="$dir/logs"
        -Dyarn.log.dir="$dir/logs" -Dhadoop.root.logger=INFO,console
        -Dlog4j.configuration="file:$conf/log4j.properties"
        --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
        --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
        --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
        --add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED)
if ((krb)); then
  jflags+=(-Djava.security.krb5.conf="$KRB5_CONFIG")
  # Containers read the cluster's configuration here, as on a real node.
  export HADOOP_CONF_DIR=$conf
fi
start() {
  setsid java "${jflags[@]}" -Dproc_"$1" -cp "$cp_" "$2" </dev/null >>"$dir/logs/$1.log" 2>&1 &
  echo $!
}
rm_pid=$(start resourcemanager org.apache.hadoop.yarn.server.resourcemanager.ResourceManager)
nm_pid=$(start nodemanager org.apache.hadoop.yarn.server.nodemanager.NodeManager)
trap '' PIPE
# shellcheck source=lib/watchdog.sh
source "$here/lib/watchdog.sh"
watch_pid=
if [[ -n "${YARN_OWNER_PID:-}" ]]; then
  watchdog_start yarn-watchdog "$YARN_OWNER_PID" "$here/yarn-down.sh" "$state"
  watch_pid=$!
fi
app_cp="$conf:$lib/*"
write_state() {
  cat >"$state.tmp" <<EOS
# Written by scripts/yarn-up.sh; read by scripts/yarn-down.sh.
YARN_DIR=$dir
YARN_STATE=$state
YARN_DIR_OWNED=$owned
YARN_RM_PID=$rm_pid
YARN_NM_PID=$nm_pid
YARN_WATCHDOG_PID=$watch_pid
YARN_READY=${1:-0}
YARN_RM=127.0.0.1:$rm_port
YARN_CONF_DIR=$conf
YARN_APP_CLASSPATH=$app_cp
YARN_DSHELL_JAR=$dshell
YARN_NM_HTTP=127.0.0.1:$nm_web
YARN_RM_PRINCIPAL=${realm:+hdfs/localhost@$realm}
YARN_RM_HTTP=$rm_host:$web_port
EOS
  mv "$state.tmp" "$state"
}
rm_host=127.0.0.1
((krb)) && rm_host=localhost
write_state 0

deadline=$((SECONDS + ${YARN_TIMEOUT:-120}))
ready=0
while ((SECONDS < deadline)); do
  kill -0 "$rm_pid" 2>/dev/null || { log "the ResourceManager exited"; break; }
  kill -0 "$nm_pid" 2>/dev/null || { log "the NodeManager exited"; break; }
  if ((krb)); then
    if grep -q "Registered with ResourceManager" "$dir/logs/nodemanager.log" 2>/dev/null &&
       curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$web_port/ws/v1/cluster/info" 2>/dev/null; then
      ready=1; break
    fi
  elif m=$(curl -fsS --max-time 2 "http://127.0.0.1:$web_port/ws/v1/cluster/metrics" 2>/dev/null) &&
     grep -q '"activeNodes":[1-9]' <<<"$m"; then
    ready=1; break
  fi
  sleep 0.2
done
if ((!ready)); then
  for p in "$rm_pid" "$nm_pid" "$watch_pid"; do [[ -n "$p" ]] && kill -KILL "$p" 2>/dev/null || true; done
  for f in resourcemanager nodemanager; do
    log "--- last lines of $dir/logs/$f.log"
    grep -v 'STARTUP_MSG:   classpath' "$dir/logs/$f.log" 2>/dev/null | tail -n 25 | cut -c1-400 | sed 's/^/    /' >&2
  done
  ((owned)) && { cp -r "$dir/logs" "$dir.logs" 2>/dev/null; rm -rf "$dir"; }
  die "YARN not ready (no active NodeManager) after ${YARN_TIMEOUT:-120}s"
fi
write_state 1
log "YARN up in $(elapsed): ResourceManager REST http://127.0.0.1:$web_port, 1 NodeManager ($mem MB, $vcores vcores); logs in $dir/logs"
grep -E '^(YARN_DIR|YARN_STATE|YARN_RM|YARN_CONF_DIR|YARN_APP_CLASSPATH|YARN_DSHELL_JAR|YARN_NM_HTTP|YARN_RM_PRINCIPAL)=' "$state"
echo "YARN_RM_HTTP=$rm_host:$web_port"
