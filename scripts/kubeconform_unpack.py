"""Unpack the Kubernetes JSON schemas from the kubernetes-validate wheel.

    python kubeconform_unpack.py DIR WHEEL SHA256 OUT

DIR is what `pip download` wrote; it must hold exactly one wheel, named
WHEEL, whose sha256 is SHA256 (scripts/kubeconform.sh pins both). The
schemas go to OUT, rewritten for kubeconform (see kubeconform.sh). A member
whose path would leave OUT stops the unpacking: nothing of it is written.
"""
import glob
import hashlib
import json
import os
import sys


def fail(msg):
    sys.stderr.write("kubeconform: %s\n" % msg)
    sys.exit(1)


def main():
    import zipfile

    tmp, wheel, want, out = sys.argv[1:5]
    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(tmp, "*.whl")))
    if wheels != [wheel]:
        fail("pip download gave %s, want exactly %s" % (wheels or "no wheel", wheel))
    path = os.path.join(tmp, wheel)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != want:
        fail("%s has sha256 %s, want %s" % (wheel, h.hexdigest(), want))
    root = os.path.realpath(out)
    prefix = "kubernetes_validate/kubernetes-json-schema/"
    with zipfile.ZipFile(path) as z:
        members = []
        for name in z.namelist():
            if not name.startswith(prefix) or not name.endswith(".json"):
                continue
            dst = os.path.realpath(os.path.join(root, name[len(prefix):]))
            if os.path.commonpath([root, dst]) != root or dst == root:
                fail("%s: member %r leaves the output directory" % (wheel, name))
            members.append((name, dst))
        for name, dst in members:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            doc = json.loads(z.read(name).replace(b'"/api/_definitions.json', b'"_definitions.json'))
            # Their $id is on kubernetes.io, which would make
            # _definitions.json a URL to fetch: without it a ref is
            # relative to the file.
            doc.pop("$id", None)
            with open(dst, "w") as f:
                json.dump(doc, f)


if __name__ == "__main__":
    main()
