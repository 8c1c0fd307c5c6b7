package tiering

import (
	"fmt"
	"path"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
)

// Hot/cold tiering policy: which of a table's live data files move to the
// cold location. It is pure: package iceberg reads each file's upper bound
// of the tiering column from the manifests, asks PlanTiering, rewrites the
// chosen files under the cold location and commits the rewrite (see
// iceberg/tier.go).
//
// A file is cold when every row in it is older than the threshold: the
// upper bound of the tiering column in its manifest entry (column stats)
// is before now minus cold-after. For a table partitioned by the column
// (a day, say) that is the same as "partitions older than"; for an
// unpartitioned one it is per file. A file without a bound (no stats, or
// a column not a timestamp or date) stays where it is.

// Table properties that set a table's tiering (all but the storage class
// needed to turn it on).
const (
	PropTierColumn       = "pg2iceberg.tiering.column"        // a timestamp, timestamptz or date column
	PropTierColdAfter    = "pg2iceberg.tiering.cold-after"    // a Go duration, e.g. 720h
	PropTierColdLocation = "pg2iceberg.tiering.cold-location" // s3://bucket/prefix or a directory
	PropTierStorageClass = "pg2iceberg.tiering.storage-class" // optional S3 storage class of cold objects
)

// TierConfig is one table's tiering policy; the zero value is off.
type TierConfig struct {
	Column       string
	ColdAfter    time.Duration
	ColdLocation string // without a trailing slash
	StorageClass string
}

// Enabled reports whether the policy moves anything.
func (c TierConfig) Enabled() bool {
	return c.Column != "" && c.ColdAfter > 0 && c.ColdLocation != ""
}

// TierConfigOf reads a table's tiering policy from its properties. A
// cold-after that is not a positive duration is an error that names the
// property; a table without the properties has tiering off.
func TierConfigOf(props icego.Properties) (TierConfig, error) {
	c := TierConfig{
		Column:       props.Get(PropTierColumn, ""),
		ColdLocation: strings.TrimSuffix(props.Get(PropTierColdLocation, ""), "/"),
		StorageClass: props.Get(PropTierStorageClass, ""),
	}
	if v := props.Get(PropTierColdAfter, ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return TierConfig{}, fmt.Errorf("table property %s is %q: give a positive duration such as 720h", PropTierColdAfter, v)
		}
		c.ColdAfter = d
	}
	return c, nil
}

// With returns c with the overrides that are set (zero values are not).
func (c TierConfig) With(column string, coldAfter time.Duration, coldLocation, storageClass string) TierConfig {
	if column != "" {
		c.Column = column
	}
	if coldAfter > 0 {
		c.ColdAfter = coldAfter
	}
	if coldLocation != "" {
		c.ColdLocation = strings.TrimSuffix(coldLocation, "/")
	}
	if storageClass != "" {
		c.StorageClass = storageClass
	}
	return c
}

// ColdRoot is where a table's cold files go: its namespace and the last
// element of its location under the cold location, so two tables never
// share a directory there either (cold/ns/orders/data/...).
func (c TierConfig) ColdRoot(ident []string, tableLocation string) string {
	ns := ident[:max(len(ident)-1, 0)]
	base := path.Base(strings.TrimSuffix(tableLocation, "/"))
	return c.ColdLocation + "/" + strings.Join(append(append([]string{}, ns...), base), "/")
}

// TierFile is one live data file as the tiering policy sees it.
type TierFile struct {
	Path  string
	Upper time.Time // the upper bound of the tiering column
	Bound bool      // false: the file has no usable bound (stays hot)
}

// PlanTiering returns the files to move to root (the table's ColdRoot):
// those not there yet whose every row is older than now - ColdAfter.
func PlanTiering(c TierConfig, root string, files []TierFile, now time.Time) []string {
	if !c.Enabled() {
		return nil
	}
	cutoff := now.Add(-c.ColdAfter)
	var out []string
	for _, f := range files {
		if f.Bound && f.Upper.Before(cutoff) && !IsCold(root, f.Path) {
			out = append(out, f.Path)
		}
	}
	return out
}

// IsCold reports whether a file lies under root, a table's ColdRoot.
func IsCold(root, p string) bool {
	return root != "" && strings.HasPrefix(p, root+"/")
}
