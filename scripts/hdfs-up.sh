#!/usr/bin/env bash
# Start a real, single-node HDFS (Apache Hadoop 3.4.2: one NameNode, one
# DataNode, separate JVMs) on loopback for tests and the demo:
#
#   eval "$(scripts/hdfs-up.sh)"        # sets HDFS_NAMENODE, HDFS_STATE, ...
#   HADOOP_USER_NAME=tributary <client> hdfs://$HDFS_NAMENODE/user/tributary/...
#   scripts/hdfs-down.sh "$HDFS_STATE"  # stop; removes the temporary dir
#
# Every stdout line is KEY=VALUE; the last one is HDFS_NAMENODE=127.0.0.1:PORT.
# Progress and errors go to stderr. See docs/hdfs.md.
#
# Jars: Hadoop's NameNode/DataNode/common jars and their runtime dependencies
# from Maven Central (scripts/hadoop/pom.xml) into
# ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/hadoop-3.4.2/lib, once (a stamp
# file holding the pom's hash marks a complete cache; concurrent runs are
# serialised with flock).
#
# Environment (all optional):
#   HDFS_DIR           instance directory (conf, name, data, logs, hdfs.env).
#                      Default: a new mktemp -d, removed by hdfs-down.sh. A given
#                      dir is kept, and reused: its metadata is not formatted
#                      again, and if its daemons still run, the script only
#                      prints their state.
#   HDFS_USER          the HDFS user tests write as (default tributary): gets
#                      /user/$HDFS_USER. /tmp is world-writable (1777).
#   HDFS_PERMISSIONS   true (default) or false: dfs.permissions.enabled.
#   HDFS_NAMENODE_PORT, HDFS_HTTP_PORT   NameNode RPC / HTTP ports (default: free ones).
#   HDFS_TIMEOUT       seconds to wait for a writable cluster (default 120).
#   HDFS_HEAP          -Xmx of each daemon (default 512m).
#   HDFS_LOG_LEVEL     daemon log level (default INFO), logs in $HDFS_DIR/logs.
#   HDFS_OWNER_PID     stop the cluster (hdfs-down.sh) when this process exits:
#                      tests pass their own PID so nothing outlives them.
#   HDFS_JARS_ONLY=1   only fetch the jars, print HADOOP_LIB=<dir> and exit.
#   HDFS_KERBEROS=1    a Kerberized HDFS (below).
#
# Kerberized mode (HDFS_KERBEROS=1): a MiniKdc (org.apache.hadoop:hadoop-minikdc,
# an Apache Kerby KDC, jars from scripts/hadoop/minikdc/pom.xml into
# <cache>/minikdc-lib) on loopback in a third JVM, realm EXAMPLE.COM, with the
# principals hdfs/localhost (NameNode and DataNode), HTTP/localhost (their
# web servers) and $HDFS_USER, all in one keytab; the NameNode and DataNode
# run with hadoop.security.authentication=kerberos, block access tokens and
# SASL on data transfer instead of privileged ports, and HTTPS only with a
# self-signed key made by keytool (as Hadoop's secure MiniDFSCluster tests
# do); HDFS_NAMENODE_HTTP is then an HTTPS port. It prints, besides the usual lines,
#   HDFS_KERBEROS=1  KRB5_CONFIG=<krb5.conf>  HDFS_KEYTAB=<keytab>
#   HDFS_PRINCIPAL=$HDFS_USER@EXAMPLE.COM  HDFS_NAMENODE_PRINCIPAL=hdfs/localhost@EXAMPLE.COM
#   HDFS_CONF_DIR=<dir>/conf   (a client's HADOOP_CONF_DIR)
# HDFS_PERMISSIONS defaults to false here: the setup of /user and /tmp goes
# through WebHDFS, which would need SPNEGO, so the script creates no
# directories and clients create their own. More settings:
#   HDFS_RPC_PROTECTION            hadoop.rpc.protection (default authentication)
#   HDFS_DATA_TRANSFER_PROTECTION  dfs.data.transfer.protection (default authentication)
#   HDFS_KDC_TICKET_LIFETIME_MS    the KDC's max.ticket.lifetime (default 10 hours):
#                                  short tickets, for tests of ticket renewal
# The KDC keeps its database in memory: a restarted instance gets a new KDC,
# new keys and a new keytab (the daemons are restarted with it).
#
# Restarting: with the HDFS_DIR of a stopped instance (hdfs-down.sh --keep),
# the script starts it again on the same ports and data. If only its DataNode
# is gone (it died, or a test killed it), it starts the DataNode alone and
# waits until it has registered with the running NameNode.
set -euo pipefail

HADOOP_VERSION=3.4.2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmpl="$here/hadoop"
pom="$tmpl/pom.xml"
root="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/hadoop-$HADOOP_VERSION"
lib="$root/lib"
res="$root/res"
t0=$(date +%s%N)

log() { printf 'hdfs-up: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
elapsed() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"; }

# --- the jars -----------------------------------------------------------------

# shellcheck source=lib/maven-jars.sh
source "$here/lib/maven-jars.sh"
# The Maven jar of hadoop-hdfs has no webapps/ (the tarball has them next to
# the jars). HttpServer2 only needs webapps/<name> to exist on the classpath;
# the JMX, WebHDFS and /conf servlets are registered in code. The HTML UI is
# therefore absent.
make_res() {
  rm -rf "$res"
  mkdir -p "$res/webapps/hdfs" "$res/webapps/datanode" "$res/webapps/secondary" \
           "$res/webapps/journal" "$res/webapps/static"
}
maven_jars --log hdfs-up --dir "$lib" --pom "$pom" --stamp "$root/.complete" \
  --what "org.apache.hadoop:hadoop-hdfs/hadoop-common:$HADOOP_VERSION" \
  --need "hadoop-hdfs-$HADOOP_VERSION.jar" --need "hadoop-hdfs-client-$HADOOP_VERSION.jar" \
  --need "hadoop-common-$HADOOP_VERSION.jar" --need "hadoop-auth-$HADOOP_VERSION.jar" \
  --then make_res --also "$res" || exit 1

kerberos=${HDFS_KERBEROS:-0}
kdc_lib="$root/minikdc-lib"
if ((kerberos)); then
  maven_jars --log hdfs-up --dir "$kdc_lib" --pom "$tmpl/minikdc/pom.xml" --stamp "$root/.minikdc-complete" \
    --what "org.apache.hadoop:hadoop-minikdc:$HADOOP_VERSION" \
    --need "hadoop-minikdc-$HADOOP_VERSION.jar" || exit 1
fi

if [[ "${HDFS_JARS_ONLY:-}" == 1 ]]; then
  echo "HADOOP_LIB=$lib"
  ((kerberos)) && echo "MINIKDC_LIB=$kdc_lib"
  exit 0
fi

command -v java >/dev/null || die "java not found (install Java 17+)"
command -v curl >/dev/null || die "curl not found (the script talks to the NameNode's HTTP/JMX port)"

# --- the instance directory -----------------------------------------------------

owned=0
if [[ -n "${HDFS_DIR:-}" ]]; then
  mkdir -p "$HDFS_DIR"
  dir=$(cd "$HDFS_DIR" && pwd)
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/tributary-hdfs.XXXXXX")
  owned=1
fi
state="$dir/hdfs.env"

# state_get KEY: a value from the state file (KEY=VALUE lines, written below).
state_get() { [[ -f "$state" ]] || return 0; sed -n "s/^$1=//p" "$state" | tail -n 1; }
# alive PID: the process exists and is a JVM of this instance (not a reused PID).
alive() { [[ -n "$1" ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-Dtributary.hdfs.dir=$dir "; }

if [[ -f "$state" && "$(state_get HDFS_KERBEROS)" == 1 ]]; then kerberos=1; fi
kdc_ok() { ((!kerberos)) || alive "$(state_get HDFS_KDC_PID)"; }
if [[ -f "$state" && "$(state_get HDFS_READY)" == 1 ]] && kdc_ok &&
   alive "$(state_get HDFS_NAMENODE_PID)" && alive "$(state_get HDFS_DATANODE_PID)"; then
  log "already running in $dir"
  grep -E '^(HDFS_DIR|HDFS_STATE|HDFS_USER|HDFS_NAMENODE_HTTP|HDFS_KERBEROS|KRB5_CONFIG|HDFS_KEYTAB|HDFS_PRINCIPAL|HDFS_NAMENODE_PRINCIPAL|HDFS_CONF_DIR)=' "$state"
  grep -E '^HDFS_NAMENODE=' "$state"
  exit 0
fi

# The NameNode runs but the DataNode does not (both running exited above).
dn_only=0
if [[ -f "$state" && "$(state_get HDFS_READY)" == 1 ]] && kdc_ok && alive "$(state_get HDFS_NAMENODE_PID)"; then
  dn_only=1
fi

user=${HDFS_USER:-tributary}
if ((kerberos)); then perms=${HDFS_PERMISSIONS:-false}; else perms=${HDFS_PERMISSIONS:-true}; fi
timeout=${HDFS_TIMEOUT:-120}
heap=${HDFS_HEAP:-512m}
level=${HDFS_LOG_LEVEL:-INFO}
superuser=$(id -un)

# free_port: a random port in 20000-32767 (below Linux's ephemeral range, so
# the kernel does not hand it to an outgoing connection or to a ":0" listener
# such as the DataNode's) that nothing listens on now.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12768))
    if command -v ss >/dev/null; then
      [[ -z "$(ss -tan "sport = :$p" 2>/dev/null | tail -n +2)" ]] && { echo "$p"; return; }
    elif ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"; return
    fi
  done
  die "no free port found"
}
nn_port=${HDFS_NAMENODE_PORT:-$(state_get HDFS_NAMENODE | sed 's/.*://')}
[[ -n "$nn_port" ]] || nn_port=$(free_port)
http_port=${HDFS_HTTP_PORT:-$(state_get HDFS_NAMENODE_HTTP | sed 's/.*://')}
[[ -n "$http_port" ]] || http_port=$(free_port)
while [[ "$http_port" == "$nn_port" ]]; do http_port=$(free_port); done

conf="$dir/conf"
mkdir -p "$conf" "$dir/name" "$dir/data" "$dir/logs" "$dir/tmp"
subst() {
  sed -e "s|@DIR@|$dir|g" -e "s|@NN_PORT@|$nn_port|g" -e "s|@NN_HTTP_PORT@|$http_port|g" \
      -e "s|@USER@|$user|g" -e "s|@PERMISSIONS@|$perms|g" "$1"
}
kdc_dir="$dir/kdc"
realm=EXAMPLE.COM
keytab="$kdc_dir/hdfs.keytab"
rpc_prot=${HDFS_RPC_PROTECTION:-authentication}
dt_prot=${HDFS_DATA_TRANSFER_PROTECTION:-authentication}
# with_kerberos FRAGMENT: the Kerberos properties of FRAGMENT go in before
# </configuration>, in place of the simple-authentication ones.
with_kerberos() {
  if ((!kerberos)); then cat; return; fi
  local frag
  frag=$(sed -e "s|@DIR@|$dir|g" -e "s|@NN_HTTP_PORT@|$http_port|g" -e "s|@REALM@|$realm|g" -e "s|@KEYTAB@|$keytab|g" -e "s|@USER@|$user|g" \
             -e "s|@RPC_PROTECTION@|$rpc_prot|g" -e "s|@DATA_TRANSFER_PROTECTION@|$dt_prot|g" "$tmpl/$1")
  grep -v -e '<name>hadoop.security.authentication</name>' -e '<name>hadoop.security.authorization</name>' \
          -e 'No Kerberos:' | awk -v frag="$frag" '/<\/configuration>/ { print frag } { print }'
}
subst "$tmpl/core-site.xml.in" | with_kerberos core-site-kerberos.xml.in >"$conf/core-site.xml"
subst "$tmpl/hdfs-site.xml.in" | with_kerberos hdfs-site-kerberos.xml.in >"$conf/hdfs-site.xml"
cp "$tmpl/log4j.properties" "$conf/log4j.properties"

# Kerberized mode serves HTTPS only: a self-signed key for localhost and
# 127.0.0.1, made once per instance directory (keytool, 1 JVM), and Hadoop's
# ssl-server.xml / ssl-client.xml pointing at it.
http_scheme=http
if ((kerberos)); then
  http_scheme=https
  ssl="$dir/ssl"
  if [[ ! -s "$ssl/keystore.jks" ]]; then
    mkdir -p "$ssl"
    command -v keytool >/dev/null || die "keytool not found (it comes with the JDK)"
    keytool -genkeypair -noprompt -alias hdfs -keyalg RSA -keysize 2048 -validity 30 \
      -dname "CN=localhost" -ext "SAN=dns:localhost,ip:127.0.0.1" \
      -keystore "$ssl/keystore.jks" -storetype JKS -storepass tributary -keypass tributary >/dev/null 2>&1 ||
      die "keytool could not make $ssl/keystore.jks"
  fi
  for side in server client; do
    cat >"$conf/ssl-$side.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by scripts/hdfs-up.sh (HDFS_KERBEROS=1): a self-signed test key, its own trust store. -->
<configuration>
  <property><name>ssl.$side.keystore.location</name><value>$ssl/keystore.jks</value></property>
  <property><name>ssl.$side.keystore.password</name><value>tributary</value></property>
  <property><name>ssl.$side.keystore.keypassword</name><value>tributary</value></property>
  <property><name>ssl.$side.truststore.location</name><value>$ssl/keystore.jks</value></property>
  <property><name>ssl.$side.truststore.password</name><value>tributary</value></property>
</configuration>
EOF
  done
fi

# --- the JVMs -------------------------------------------------------------------

jflags=(-Xmx"$heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true
        -Dtributary.hdfs.dir="$dir"
        -Dhadoop.home.dir="$root" -Dhadoop.log.dir="$dir/logs" -Dhadoop.tmp.dir="$dir/tmp"
        -Dhadoop.root.logger="$level,console" -Dlog4j.configuration="file:$conf/log4j.properties"
        -Dhadoop.security.logger=WARN,console -Dhdfs.audit.logger=WARN,console)
# JDK 17 opens. java.lang is required: without it WebHDFS fails (Jersey's
# JAXB Injector: InaccessibleObjectException on ClassLoader.defineClass), and
# the script's mkdirs go through WebHDFS. The others are taken from the list
# Hadoop's build uses for its own tests on JDK 17, for code paths our tests do
# not reach (NameNode/DataNode reflection, direct buffers, sun.nio.ch, x509);
# nothing failed without them. Java 11+ accepts these flags; Java 8 does not
# and is not supported by this script.
jflags+=(--add-opens=java.base/java.lang=ALL-UNNAMED
         --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
         --add-opens=java.base/java.io=ALL-UNNAMED
         --add-opens=java.base/java.net=ALL-UNNAMED
         --add-opens=java.base/java.nio=ALL-UNNAMED
         --add-opens=java.base/java.util=ALL-UNNAMED
         --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
         --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
         --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
         --add-opens=java.base/sun.security.util=ALL-UNNAMED
         --add-opens=java.base/sun.security.x509=ALL-UNNAMED)
cp_="$conf:$res:$lib/*"
# Every JVM of a Kerberized instance (the tools too) finds the realm here.
((kerberos)) && jflags+=(-Djava.security.krb5.conf="$kdc_dir/krb5.conf")

nn_pid= dn_pid= kdc_pid=
cleanup_failed() {
  local p victims="$dn_pid"
  # A DataNode started alone leaves the running NameNode and its watchdog be.
  ((dn_only)) || victims+=" $nn_pid ${watch_pid:-} ${kdc_pid:-}"
  for p in $victims; do kill -KILL "$p" 2>/dev/null || true; done
  for f in kdc namenode datanode; do
    if [[ -s "$dir/logs/$f.log" ]]; then
      log "--- last lines of $dir/logs/$f.log"
      grep -v 'STARTUP_MSG:   classpath' "$dir/logs/$f.log" | tail -n 25 | cut -c1-400 | sed 's/^/    /' >&2
    fi
  done
  if ((owned)); then
    cp -r "$dir/logs" "$dir.logs" 2>/dev/null && log "logs kept in $dir.logs"
    rm -rf "$dir"
  fi
}

# --- the KDC (Kerberized mode) ----------------------------------------------------

# The NameNode logs in to it even to format, so it comes first. A KDC that
# still runs (the DataNode alone is restarted) is kept; any other start gets a
# new one, whose keytab the daemons then read.
if ((kerberos)); then
  if ((dn_only)); then
    kdc_pid=$(state_get HDFS_KDC_PID)
  else
    rm -rf "$kdc_dir" && mkdir -p "$kdc_dir"
    kdc_props="$kdc_dir/kdc.properties"
    sed "s/^max.ticket.lifetime=.*/max.ticket.lifetime=${HDFS_KDC_TICKET_LIFETIME_MS:-36000000}/" \
      "$tmpl/minikdc/kdc.properties" >"$kdc_props"
    # MiniKdc's main: WORKDIR PROPERTIES KEYTAB PRINCIPAL...; it writes
    # WORKDIR/krb5.conf (with the port it got) and runs until killed.
    setsid java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true \
      -Dtributary.hdfs.dir="$dir" -Dproc_kdc -cp "$kdc_lib/*" org.apache.hadoop.minikdc.MiniKdc \
      "$kdc_dir" "$kdc_props" "$keytab" hdfs/localhost HTTP/localhost "$user" \
      </dev/null >>"$dir/logs/kdc.log" 2>&1 &
    kdc_pid=$!
    kdc_deadline=$((SECONDS + 60))
    until [[ -s "$kdc_dir/krb5.conf" && -s "$keytab" ]] && grep -q "Standalone MiniKdc Running" "$dir/logs/kdc.log"; do
      if ! kill -0 "$kdc_pid" 2>/dev/null || ((SECONDS > kdc_deadline)); then
        cleanup_failed
        die "the MiniKdc did not start"
      fi
      sleep 0.1
    done
    log "MiniKdc up (realm $realm, $(sed -n 's/^ *kdc = //p' "$kdc_dir/krb5.conf")) after $(elapsed)"
  fi
fi

# A new NameNode needs `namenode -format` (a JVM, 3-7 s here). Its result, an
# empty namespace, is the same every time up to random IDs, so the first
# format is kept in the cache and later instances start from a copy of it.
template="$root/name-template"
if [[ ! -f "$dir/name/current/VERSION" ]]; then
  if [[ -f "$template/current/VERSION" ]]; then
    rm -rf "$dir/name" && cp -r "$template" "$dir/name"
  else
    log "formatting the NameNode in $dir/name ..."
    if ! java "${jflags[@]}" -cp "$cp_" org.apache.hadoop.hdfs.server.namenode.NameNode \
          -format -nonInteractive -force -clusterid tributary-test \
          </dev/null >"$dir/logs/format.log" 2>&1; then
      tail -n 30 "$dir/logs/format.log" >&2
      ((owned)) && rm -rf "$dir"
      die "namenode -format failed (log above)"
    fi
    t_tmp=$(mktemp -d "$root/name-template.tmp.XXXXXX")
    cp -r "$dir/name/." "$t_tmp/" && mv -T "$t_tmp" "$template" 2>/dev/null || rm -rf "$t_tmp"
  fi
fi

# start NAME CLASS: one daemon in its own session (setsid: not in the caller's
# process group, so a Ctrl-C of the caller does not half-kill the cluster),
# no inherited stdin/stdout (a caller reading our stdout gets EOF when we exit).
# The NameNode only handles metadata: C1 alone starts it faster (less JIT CPU
# on 2 cores); the DataNode moves the bytes and keeps the full JIT.
start() {
  local extra=()
  [[ "$1" == namenode ]] && extra=(-XX:TieredStopAtLevel=1)
  setsid java "${jflags[@]}" "${extra[@]}" -Dproc_"$1" -cp "$cp_" "$2" \
    </dev/null >>"$dir/logs/$1.log" 2>&1 &
  echo $!
}
dn_log_from=0
if ((dn_only)); then
  nn_pid=$(state_get HDFS_NAMENODE_PID)
  dn_log_from=$(stat -c %s "$dir/logs/datanode.log" 2>/dev/null || echo 0)
  log "the NameNode runs (pid $nn_pid); starting the DataNode alone; dir $dir"
else
  log "starting NameNode (rpc 127.0.0.1:$nn_port, $http_scheme 127.0.0.1:$http_port) and DataNode; dir $dir"
  nn_pid=$(start namenode org.apache.hadoop.hdfs.server.namenode.NameNode)
fi
dn_pid=$(start datanode org.apache.hadoop.hdfs.server.datanode.DataNode)

# --- state (before waiting: whoever stops us must find the PIDs) -------------------

# A caller that dies while we wait (a test binary killed by -timeout) closes
# our stdout/stderr pipes; the next write would kill this script with SIGPIPE
# and orphan the daemons. Ignore SIGPIPE: writes then fail, and the script and
# the watchdog below carry on.
trap '' PIPE

# shellcheck source=lib/watchdog.sh
source "$here/lib/watchdog.sh"
watch_pid=
old_watch=$(state_get HDFS_WATCHDOG_PID)
if ((dn_only)) && watchdog_of "$old_watch" "$state"; then
  watch_pid=$old_watch # still watching the instance
elif [[ -n "${HDFS_OWNER_PID:-}" ]]; then
  # It stops the cluster and removes an owned dir.
  watchdog_start hdfs-watchdog "$HDFS_OWNER_PID" "$here/hdfs-down.sh" "$state"
  watch_pid=$!
fi

# kerberos_state: what a client of a Kerberized instance needs.
kerberos_state() {
  ((kerberos)) || return 0
  cat <<EOF
HDFS_KERBEROS=1
HDFS_CONF_DIR=$conf
KRB5_CONFIG=$kdc_dir/krb5.conf
HDFS_KEYTAB=$keytab
HDFS_PRINCIPAL=$user@$realm
HDFS_NAMENODE_PRINCIPAL=hdfs/localhost@$realm
EOF
}

# write_state [READY]: the state file, written atomically (tmp + rename).
write_state() {
  cat >"$state.tmp" <<EOF
# Written by scripts/hdfs-up.sh; read by scripts/hdfs-down.sh.
HDFS_DIR=$dir
HDFS_STATE=$state
HDFS_DIR_OWNED=$owned
HDFS_USER=$user
HDFS_NAMENODE_HTTP=127.0.0.1:$http_port
HDFS_NAMENODE_HTTP_SCHEME=$http_scheme
HDFS_NAMENODE_PID=$nn_pid
HDFS_DATANODE_PID=$dn_pid
HDFS_WATCHDOG_PID=$watch_pid
HDFS_KDC_PID=$kdc_pid
HADOOP_VERSION=$HADOOP_VERSION
HADOOP_CLASSPATH=$cp_
HDFS_READY=${1:-0}
$(kerberos_state)
HDFS_NAMENODE=127.0.0.1:$nn_port
EOF
  mv "$state.tmp" "$state"
}
write_state 0

# --- wait until writable ----------------------------------------------------------

jmx() { curl -kfsS --max-time 2 "$http_scheme://127.0.0.1:$http_port/jmx?qry=Hadoop:service=NameNode,name=$1" 2>/dev/null; }
jnum() { sed -n "s/.*\"$1\" *: *\\([0-9-]*\\).*/\\1/p" | head -n 1; }
deadline=$((SECONDS + timeout))
ready=0 phase="NameNode HTTP" warmed=0
while ((SECONDS < deadline)); do
  kill -0 "$nn_pid" 2>/dev/null || { log "the NameNode exited"; break; }
  kill -0 "$dn_pid" 2>/dev/null || { log "the DataNode exited"; break; }
  if info=$(jmx NameNodeInfo) && [[ -n "$info" ]]; then
    if ((!warmed && !kerberos)); then
      # WebHDFS's Jersey app initialises on its first request (2-3 s of CPU);
      # a read (allowed in safe mode) in the background overlaps that with
      # the DataNode's start instead of adding it to the mkdirs below.
      warmed=1
      curl -sS -o /dev/null --max-time 30 \
        "http://127.0.0.1:$http_port/webhdfs/v1/?op=GETFILESTATUS&user.name=$superuser" >/dev/null 2>&1 &
    fi
    phase="safe mode off"
    # "Safemode" is "" once the NameNode has left safe mode.
    if grep -q '"Safemode" *: *""' <<<"$info"; then
      phase="a live DataNode with free space"
      fs=$(jmx FSNamesystemState || true)
      live=$(jnum NumLiveDataNodes <<<"$fs")
      free=$(jnum CapacityRemaining <<<"$fs")
      if [[ "${live:-0}" -ge 1 && "${free:-0}" -gt 0 ]]; then
        # The NameNode still counts a killed DataNode as live for a while:
        # a DataNode started alone is ready once it has registered anew and
        # reported its blocks.
        if ((!dn_only)) || tail -c +$((dn_log_from + 1)) "$dir/logs/datanode.log" 2>/dev/null |
             grep -q "Successfully sent block report"; then
          ready=1; break
        fi
      fi
    fi
  fi
  sleep 0.2
done
if ((!ready)); then
  cleanup_failed
  die "HDFS not ready after ${timeout}s (waiting for: $phase)"
fi
log "safe mode off, 1 live DataNode after $(elapsed)"

# --- directories for the test user (WebHDFS on the NameNode's HTTP port, as the superuser) ---

webhdfs() { # METHOD PATH QUERY
  curl -fsS --max-time 10 -X "$1" "http://127.0.0.1:$http_port/webhdfs/v1$2?user.name=$superuser&$3" >/dev/null
}
if ((!kerberos)) && ! { webhdfs PUT /tmp "op=MKDIRS&permission=1777" &&
       webhdfs PUT /tmp "op=SETPERMISSION&permission=1777" &&
       webhdfs PUT "/user/$user" "op=MKDIRS&permission=755" &&
       webhdfs PUT "/user/$user" "op=SETOWNER&owner=$user&group=supergroup"; }; then
  cleanup_failed
  die "could not create /tmp and /user/$user over WebHDFS"
fi

write_state 1
# The most recent instance, for a bare `scripts/hdfs-down.sh`.
mkdir -p "$(dirname "$root")"
echo "$state" >"$(dirname "$root")/hdfs-last"

log "HDFS up in $(elapsed): hdfs://127.0.0.1:$nn_port (user $user), logs in $dir/logs"
echo "HDFS_DIR=$dir"
echo "HDFS_STATE=$state"
echo "HDFS_USER=$user"
echo "HDFS_NAMENODE_HTTP=127.0.0.1:$http_port"
kerberos_state
echo "HDFS_NAMENODE=127.0.0.1:$nn_port"
