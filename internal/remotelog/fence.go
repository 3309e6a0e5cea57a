package remotelog

import (
	"encoding/json"
	"path"

	"github.com/tributary-io/tributary/internal/fsys"
)

// The fence: what stands in manifest.json once a partition has versioned
// manifests.
//
// Earlier builds know only manifest.json. As a partition's leader, such a
// build reads it and then removes every entry of the partition directory
// it does not name: the manifests/ directory and every segment file
// named by upload, i.e. all of this build's remote data. With no
// manifest.json it starts from an empty manifest and sweeps the same. So
// manifest.json is never left absent and never left a manifest those
// builds can adopt: it holds the fence, a document their parser refuses
// (version 2; they read only version 1) before anything is removed. Their
// leader's pass, follower rebuild and the loader's --from-tier then fail
// with "manifest version 2, this reader reads 1" instead of sweeping or
// answering an empty log. This build ignores the fence (readLegacy), and
// gc never removes it.

// fenceDoc is the fence's content. Fence names where the metadata is.
type fenceDoc struct {
	Version int    `json:"version"`
	Fence   string `json:"fence"`
	Note    string `json:"note"`
}

// Fence is the content of manifest.json in a partition with versions.
var Fence = func() []byte {
	data, _ := json.MarshalIndent(fenceDoc{
		Version: ManifestVersion,
		Fence:   ManifestDir + "/",
		Note:    "this partition's remote metadata is the versioned manifests in " + ManifestDir + "/; a build that reads only manifest.json must not lead it",
	}, "", " ")
	return append(data, '\n')
}()

// IsFence reports whether data, manifest.json's content, is the fence.
func IsFence(data []byte) bool {
	var d fenceDoc
	return json.Unmarshal(data, &d) == nil && d.Fence != ""
}

// FenceState is what manifest.json holds.
type FenceState int

const (
	FenceAbsent FenceState = iota // no manifest.json
	FenceLegacy                   // a manifest an earlier build wrote
	FenceInPlace
)

// ReadFence reports what the partition's manifest.json holds.
func ReadFence(fs fsys.FS, dir string) (FenceState, error) {
	data, err := fs.ReadFile(path.Join(dir, LegacyManifestFile))
	switch {
	case fsys.IsNotExist(err):
		return FenceAbsent, nil
	case err != nil:
		return 0, err
	case IsFence(data):
		return FenceInPlace, nil
	}
	return FenceLegacy, nil
}

// WriteFence puts the fence in manifest.json. The caller makes sure a
// legacy manifest's segments are in a version first: the fence replaces
// it.
func WriteFence(fs fsys.FS, dir string) error {
	return fs.WriteFileAtomic(path.Join(dir, LegacyManifestFile), Fence)
}
