# Sourced, not run: fetching jars from Maven Central into the cache, one
# way for every script that needs them (kafka-jars.sh, kafka-streams-jars.sh,
# iceberg-jars.sh, hdfs-up.sh, yarn-up.sh).
#
#   maven_jars OPTIONS || exit 1
#
#   --log NAME       prefix of its stderr lines ("kafka-jars: ...")
#   --dir DIR        the flat jar directory to fill; its parent is the
#                    version's cache root, which holds the lock (.lock)
#   --pom POM        mvn dependency:copy-dependencies of this pom, or
#   --artifact G:A:V mvn dependency:copy of this one artifact
#   --stamp FILE     written last, holding the pom's hash: DIR is complete
#                    when it holds the current hash. Without a stamp
#                    (--artifact), DIR is complete when the --need jars are
#                    in it (it only ever appears whole, by rename).
#   --need GLOB      a jar that must be there after mvn (repeatable): a
#                    missing one leaves the cache incomplete
#   --also PATH      a path --then makes that must exist too (repeatable)
#   --then FUNC      run after DIR is in place and before the stamp
#   --what TEXT      what is resolved, for the progress line
#
# A complete cache returns at once, touching nothing. Otherwise it takes an
# flock on <root>/.lock (so concurrent runs fetch once), resolves into a
# temporary directory beside DIR and renames it into place only when every
# --need jar is there. The lock's descriptor is closed before it returns: a
# caller that goes on to start daemons must not hand it to them.
# Errors go to stderr; it returns non-zero and leaves DIR as it was.

maven_jars() {
  local mj_log="maven-jars" mj_dir="" mj_pom="" mj_artifact="" mj_stamp="" mj_then="" mj_what=""
  local -a mj_need=() mj_also=()
  while (($#)); do
    if (($# < 2)); then printf '%s: maven_jars: %s needs a value\n' "$mj_log" "$1" >&2; return 2; fi
    case "$1" in
      --log) mj_log=$2 ;;
      --dir) mj_dir=$2 ;;
      --pom) mj_pom=$2 ;;
      --artifact) mj_artifact=$2 ;;
      --stamp) mj_stamp=$2 ;;
      --need) mj_need+=("$2") ;;
      --also) mj_also+=("$2") ;;
      --then) mj_then=$2 ;;
      --what) mj_what=$2 ;;
      *) printf '%s: maven_jars: unknown option %s\n' "$mj_log" "$1" >&2; return 2 ;;
    esac
    shift 2
  done
  if [[ -z "$mj_dir" || -z "$mj_pom$mj_artifact" || (-n "$mj_pom" && -n "$mj_artifact") ]]; then
    printf '%s: maven_jars: --dir and one of --pom or --artifact are required\n' "$mj_log" >&2
    return 2
  fi
  local mj_want=""
  [[ -n "$mj_pom" ]] && mj_want=$(sha256sum "$mj_pom" | cut -d' ' -f1)

  if _maven_jars_complete; then return 0; fi

  command -v mvn >/dev/null || { printf '%s: mvn not found (install Maven 3.8+ and Java 17+)\n' "$mj_log" >&2; return 1; }
  local mj_root mj_lockfd
  mj_root=$(dirname "$mj_dir")
  mkdir -p "$mj_root" || return 1
  exec {mj_lockfd}>"$mj_root/.lock" || return 1
  if command -v flock >/dev/null; then flock "$mj_lockfd"; fi
  _maven_jars_fetch
  local mj_rc=$?
  exec {mj_lockfd}>&-
  return "$mj_rc"
}

# _maven_jars_complete: maven_jars's variables say a complete cache.
_maven_jars_complete() {
  [[ -d "$mj_dir" ]] || return 1
  if [[ -n "$mj_stamp" ]]; then
    [[ -f "$mj_stamp" && "$(cat "$mj_stamp")" == "$mj_want" ]] || return 1
  else
    local g
    for g in "${mj_need[@]}"; do compgen -G "$mj_dir/$g" >/dev/null || return 1; done
  fi
  local p
  for p in "${mj_also[@]}"; do [[ -e "$p" ]] || return 1; done
}

# _maven_jars_fetch: the part of maven_jars under the lock.
_maven_jars_fetch() {
  if _maven_jars_complete; then return 0; fi # another process finished while we waited
  [[ -n "$mj_stamp" ]] && rm -f "$mj_stamp"
  local mj_tmp mj_start=$SECONDS
  mj_tmp=$(mktemp -d "$mj_dir.tmp.XXXXXX") || return 1
  printf '%s: resolving %s from Maven Central into %s ...\n' "$mj_log" "${mj_what:-${mj_artifact:-the jars of $mj_pom}}" "$mj_dir" >&2
  local -a mj_goal
  if [[ -n "$mj_pom" ]]; then
    mj_goal=(-f "$mj_pom" dependency:copy-dependencies)
  else
    mj_goal=(dependency:copy -Dartifact="$mj_artifact")
  fi
  # An interrupted run leaves no temporary directory behind.
  local mj_old_trap
  mj_old_trap=$(trap -p EXIT)
  trap 'rm -rf "$mj_tmp"' EXIT
  local mj_ok=1 g
  if ! mvn -B -q -Dstyle.color=never "${mj_goal[@]}" -DoutputDirectory="$mj_tmp" >&2; then
    printf '%s: mvn failed\n' "$mj_log" >&2
    mj_ok=0
  fi
  if ((mj_ok)); then
    for g in "${mj_need[@]}"; do
      compgen -G "$mj_tmp/$g" >/dev/null && continue
      printf '%s: missing %s after mvn; not marking the cache complete\n' "$mj_log" "$g" >&2
      mj_ok=0
      break
    done
  fi
  if ((mj_ok)); then
    rm -rf "$mj_dir" && mv -T "$mj_tmp" "$mj_dir" || mj_ok=0
  fi
  rm -rf "$mj_tmp"
  eval "${mj_old_trap:-trap - EXIT}"
  ((mj_ok)) || return 1
  if [[ -n "$mj_then" ]]; then "$mj_then" || return 1; fi
  [[ -n "$mj_stamp" ]] && { echo "$mj_want" >"$mj_stamp" || return 1; }
  printf '%s: done in %ss: %s jars, %s\n' "$mj_log" "$((SECONDS - mj_start))" "$(ls "$mj_dir" | wc -l)" "$(du -sh "$mj_dir" | cut -f1)" >&2
  return 0
}
