#!/usr/bin/env bash
# Validate Kubernetes manifests with kubeconform against the Kubernetes API's
# JSON schemas, offline:
#
#   scripts/kubeconform.sh deploy/k8s/broker.yaml job.json ...
#
# kubeconform (github.com/yannh/kubeconform) is built from the Go module
# proxy into the cache. Its default schemas live on GitHub, which this
# project's machines cannot reach, so the schemas come from PyPI instead:
# the kubernetes-validate wheel ships the same per-kind JSON schemas
# (generated from each release's OpenAPI), one directory per Kubernetes
# version. Its schemas refer to each other as /api/_definitions.json (the
# Python package resolves that itself) under an $id on kubernetes.io, which
# kubeconform would fetch; the copy in the cache has no $id and says
# _definitions.json, beside them, which kubeconform resolves as a file.
#
# Strict mode: a field the API does not have is an error, as the API server
# itself rejects it (kubectl --validate=strict).
#
# Environment:
#   K8S_VERSIONS  Kubernetes versions to validate against (default
#                 "1.33.0 1.37.0": the oldest with backoffLimitPerIndex GA,
#                 the newest the package ships)
# Cache: ${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kubeconform.
set -euo pipefail

KUBECONFORM_VERSION=v0.8.0
KUBECONFORM_SUM=h1:loDYd3a3spjIFrauqW67CDKF55Oo9R6uvC8AvpVd4ug=
KV_VERSION=1.37.0
# The wheel's name and sha256 as PyPI lists them: pip refuses other bytes
# (--require-hashes) whatever index or find-links it is configured with,
# and the unpacker checks both again.
KV_WHEEL=kubernetes_validate-$KV_VERSION-py3-none-any.whl
KV_SHA256=85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache="${TRIBUTARY_CACHE:-$HOME/.cache/tributary}/kubeconform"
bin="$cache/bin-$KUBECONFORM_VERSION/kubeconform"
schemas="$cache/kubernetes-validate-$KV_VERSION"
versions=${K8S_VERSIONS:-1.33.0 1.37.0}

log() { printf 'kubeconform: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
(($#)) || die "usage: scripts/kubeconform.sh FILE..."

mkdir -p "$cache"
exec 9>"$cache/.lock"
if command -v flock >/dev/null; then flock 9; fi
# The module's h1: hash as go.sum and `go version -m` print it: the build
# is checked against it whatever GOSUMDB, GONOSUMDB or GOPRIVATE say, and
# kubeconform's own go.sum pins its dependencies.
built() { go version -m "$bin" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/yannh/kubeconform" { print $3, $4 }'; }
command -v go >/dev/null || die "go not found"
if [[ ! -x "$bin" || "$(built)" != "$KUBECONFORM_VERSION $KUBECONFORM_SUM" ]]; then
  log "building kubeconform $KUBECONFORM_VERSION from the Go module proxy ..."
  rm -f "$bin"
  GOBIN="$(dirname "$bin")" GOFLAGS=-mod=mod GOSUMDB=sum.golang.org GONOSUMDB= GOPRIVATE= GOINSECURE= \
    go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" >&2 ||
    die "go install github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION failed"
  got=$(built)
  [[ "$got" == "$KUBECONFORM_VERSION $KUBECONFORM_SUM" ]] || {
    rm -f "$bin"
    die "kubeconform built from ${got:-an unknown module}, want $KUBECONFORM_VERSION $KUBECONFORM_SUM"
  }
fi
if [[ "$(cat "$schemas/.complete" 2>/dev/null)" != "$KV_SHA256" ]]; then
  py=$(bash "$here/python-deps.sh") || die "no Python venv (scripts/python-deps.sh)"
  tmp=$(mktemp -d "$cache/schemas.tmp.XXXXXX")
  log "fetching the Kubernetes JSON schemas (kubernetes-validate $KV_VERSION) from PyPI ..."
  printf 'kubernetes-validate==%s --hash=sha256:%s\n' "$KV_VERSION" "$KV_SHA256" >"$tmp/requirements.txt"
  "$py" -m pip download -q --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
    --require-hashes -r "$tmp/requirements.txt" -d "$tmp/dl" >&2 || { rm -rf "$tmp"; die "pip download kubernetes-validate==$KV_VERSION failed"; }
  "$py" "$here/kubeconform_unpack.py" "$tmp/dl" "$KV_WHEEL" "$KV_SHA256" "$tmp/out" || { rm -rf "$tmp"; die "unpacking the schemas failed"; }
  rm -rf "$schemas"
  mv "$tmp/out" "$schemas"
  rm -rf "$tmp"
  echo "$KV_SHA256" >"$schemas/.complete"
fi
exec 9>&-

status=0
for v in $versions; do
  [[ -d "$schemas/v$v-local-strict" ]] || die "kubernetes-validate $KV_VERSION has no schemas for Kubernetes $v"
  "$bin" -strict -summary -output text -kubernetes-version "$v" \
    -schema-location "$schemas/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    "$@" || status=1
done
exit $status
