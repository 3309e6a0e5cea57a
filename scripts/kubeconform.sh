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
KV_VERSION=1.37.0
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
if [[ ! -x "$bin" ]]; then
  command -v go >/dev/null || die "go not found"
  log "building kubeconform $KUBECONFORM_VERSION from the Go module proxy ..."
  GOBIN="$(dirname "$bin")" GOFLAGS=-mod=mod go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" >&2 ||
    die "go install github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION failed"
fi
if [[ ! -f "$schemas/.complete" ]]; then
  py=$(bash "$here/python-deps.sh") || die "no Python venv (scripts/python-deps.sh)"
  tmp=$(mktemp -d "$cache/schemas.tmp.XXXXXX")
  log "fetching the Kubernetes JSON schemas (kubernetes-validate $KV_VERSION) from PyPI ..."
  "$py" -m pip download -q --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
    "kubernetes-validate==$KV_VERSION" -d "$tmp" >&2 || { rm -rf "$tmp"; die "pip download kubernetes-validate==$KV_VERSION failed"; }
  "$py" - "$tmp" "$tmp/out" <<'PY' || { rm -rf "$tmp"; die "unpacking the schemas failed"; }
import glob, json, os, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
prefix = "kubernetes_validate/kubernetes-json-schema/"
with zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0]) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or not name.endswith(".json"):
            continue
        dst = os.path.join(out, name[len(prefix):])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        doc = json.loads(z.read(name).replace(b'"/api/_definitions.json', b'"_definitions.json'))
        # Their $id is on kubernetes.io, which would make _definitions.json
        # a URL to fetch: without it a ref is relative to the file.
        doc.pop("$id", None)
        with open(dst, "w") as f:
            json.dump(doc, f)
PY
  rm -rf "$schemas"
  mv "$tmp/out" "$schemas"
  rm -rf "$tmp"
  touch "$schemas/.complete"
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
