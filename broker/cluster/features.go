package cluster

import (
	"maps"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Features (KIP-584) are cluster-wide versions of behaviour that every
// broker must agree on before clients may use it. Kafka 4.x finalizes
// them when the cluster is formatted and changes them with UpdateFeatures
// (`kafka-features.sh upgrade|downgrade`); a broker tells clients the
// finalized levels in ApiVersions. Two are served: transaction.version
// (at 2, KIP-890 part 2, clients bump the producer epoch at every EndTxn
// and leave adding partitions to the leaders) and group.version (at 1,
// group configs are kept in the metadata log; see GroupVersion).
//
// A new cluster's first metadata finalizes every feature at its default
// (bootstrapFeatures), as Kafka's format does. A cluster whose metadata
// has no level for a feature runs at level 0, as Kafka treats a cluster
// upgraded from a version without it: an existing cluster keeps
// transactions v1 through a rolling upgrade, until the operator runs
// `kafka-features.sh upgrade --feature transaction.version=2` once every
// node runs this version.

// TransactionVersion is the name of the transactions feature.
const TransactionVersion = "transaction.version"

// GroupVersion is the name of the groups feature (Kafka's group.version).
// At 1, group configs (IncrementalAlterConfigs on a GROUP resource) are
// written to the metadata log as GroupConfig records; below it they are
// refused, so that a node of an older version, which cannot read the
// record, never meets one during a rolling upgrade (review M6). A new
// cluster starts at 1, as Kafka 4.4's format does; an upgraded one stays
// at 0 until `kafka-features.sh upgrade --feature group.version=1`.
const GroupVersion = "group.version"

// SupportedFeature is a feature this version can run, and its levels.
type SupportedFeature struct {
	Name          string
	Min, Max      int16
	Default       int16 // the level a new cluster starts at
	DowngradeSafe bool  // a downgrade loses no metadata
}

// SupportedFeatures are the features this version serves.
var SupportedFeatures = []SupportedFeature{
	// Level 0 and 1 are the same protocol (v1 transactions); a downgrade
	// from 2 is safe: v2 transactions already written complete as they
	// are, and clients see the new level at their next ApiVersions.
	{Name: TransactionVersion, Min: 0, Max: 2, Default: 2, DowngradeSafe: true},
	// A downgrade to 0 leaves the GroupConfig records an older node
	// cannot read: only the unsafe type does it.
	{Name: GroupVersion, Min: 0, Max: 1, Default: 1},
}

func supportedFeature(name string) (SupportedFeature, bool) {
	for _, f := range SupportedFeatures {
		if f.Name == name {
			return f, true
		}
	}
	return SupportedFeature{}, false
}

// FeatureLevelRecord sets a feature's finalized level (Kafka's
// FeatureLevelRecord).
type FeatureLevelRecord struct {
	Name  string `json:"name"`
	Level int16  `json:"level"`
}

// FeatureLevel is the finalized level of a feature: the one set, or 0.
func (img *Image) FeatureLevel(name string) int16 {
	return img.Features[name]
}

// bootstrapFeatures are the records that finalize a new cluster's
// features at their defaults: those img has no level for.
func bootstrapFeatures(img *Image) []Record {
	var rs []Record
	for _, f := range SupportedFeatures {
		if _, ok := img.Features[f.Name]; !ok {
			rs = append(rs, Record{FeatureLevel: &FeatureLevelRecord{Name: f.Name, Level: f.Default}})
		}
	}
	return rs
}

// FinalizedFeatures are every supported feature's finalized level, by
// name; features at level 0 are left out, as Kafka leaves them out.
func (img *Image) FinalizedFeatures() map[string]int16 {
	out := map[string]int16{}
	for _, f := range SupportedFeatures {
		if l := img.FeatureLevel(f.Name); l > 0 {
			out[f.Name] = l
		}
	}
	return out
}

func (n *Image) applyFeatureLevel(r *FeatureLevelRecord) {
	n.Features = maps.Clone(n.Features)
	if n.Features == nil {
		n.Features = map[string]int16{}
	}
	n.Features[r.Name] = r.Level
}

func (img *Image) featureRecords() []Record {
	names := make([]string, 0, len(img.Features))
	for k := range img.Features {
		names = append(names, k)
	}
	sort.Strings(names)
	var rs []Record
	for _, k := range names {
		rs = append(rs, Record{FeatureLevel: &FeatureLevelRecord{Name: k, Level: img.Features[k]}})
	}
	return rs
}

// FeatureUpdate is one change of UpdateFeatures: Kafka's upgrade types
// are 1 upgrade, 2 safe downgrade, 3 unsafe downgrade.
type FeatureUpdate struct {
	Name        string
	Level       int16
	UpgradeType int8
}

// UpdateFeature sets a feature's finalized level, with Kafka's checks: an
// unknown feature or a level outside the supported range is
// INVALID_UPDATE_VERSION, a lower level needs a downgrade type.
func (c *Controller) UpdateFeature(u FeatureUpdate, validateOnly bool) error {
	f, ok := supportedFeature(u.Name)
	if !ok {
		return errorf(kerr.InvalidUpdateVersion, "Feature %s is not supported by this controller.", u.Name)
	}
	if u.UpgradeType < 1 || u.UpgradeType > 3 {
		return errorf(kerr.InvalidUpdateVersion, "Invalid upgrade type %d for feature %s.", u.UpgradeType, u.Name)
	}
	if u.Level < f.Min || u.Level > f.Max {
		return errorf(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. Local controller supports versions %d-%d.", u.Level, u.Name, f.Min, f.Max)
	}
	return c.decide(validateOnly, func(img *Image) ([]Record, error) {
		cur := img.FeatureLevel(u.Name)
		switch {
		case u.Level < cur && u.UpgradeType == 1:
			return nil, errorf(kerr.InvalidUpdateVersion, "Can't downgrade the version of feature %s from %d to %d without setting the upgrade type to either safe or unsafe downgrade.", u.Name, cur, u.Level)
		case u.Level > cur && u.UpgradeType != 1:
			return nil, errorf(kerr.InvalidUpdateVersion, "Can't upgrade the version of feature %s from %d to %d with a downgrade type.", u.Name, cur, u.Level)
		case u.Level < cur && u.UpgradeType == 2 && !f.DowngradeSafe:
			return nil, errorf(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. Refusing to perform the requested downgrade because it might delete metadata information.", u.Level)
		case u.Level == cur:
			return nil, nil
		}
		return []Record{{FeatureLevel: &FeatureLevelRecord{Name: u.Name, Level: u.Level}}}, nil
	})
}
