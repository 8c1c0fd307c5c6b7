package decode

import (
	"strings"
	"time"
)

// Rule is a configured mapping rule as it applies to one column: what the
// configuration file's rule (mapping.Override, which mapping reads, checks
// and matches to the column) says, as plain data. Package mapping turns To
// into the column's Iceberg type; iceberg reads Lossy and Zone when it
// writes values. A nil *Rule is no rule: the default mapping.
type Rule struct {
	// To is the rule's target as written: "string", "decimal(P,S)",
	// "timestamptz" or "exclude".
	To string
	// Lossy: values may be rounded to fit (lossy: allow).
	Lossy bool
	// Zone is the time zone a timestamptz rule reads wall-clock timestamps
	// in; nil for other rules.
	Zone *time.Location
}

// Excluded reports whether the rule leaves the column out of Iceberg.
func (r *Rule) Excluded() bool { return r != nil && strings.TrimSpace(r.To) == "exclude" }

// Location is the zone a timestamptz rule reads wall-clock timestamps in;
// nil for other rules.
func (r *Rule) Location() *time.Location {
	if r == nil {
		return nil
	}
	return r.Zone
}

// LossyAllowed reports whether values may be rounded to fit.
func (r *Rule) LossyAllowed() bool { return r != nil && r.Lossy }
