package mapping

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Override overrides the default mapping of the columns it matches: by type
// (the type's name without modifiers, as format_type prints it: numeric,
// jsonb, "timestamp without time zone") or by column (schema.table.column).
// A column rule wins over a type rule.
type Override struct {
	Type   string `yaml:"type"`
	Column string `yaml:"column"`
	// To is "string", "decimal(P,S)", "timestamptz" (for timestamp
	// without time zone: the values are wall-clock times in Zone) or
	// "exclude" (the column is not written to Iceberg at all).
	To string `yaml:"to"`
	// Lossy is "fail" (the default: a value that does not fit stops the
	// bridge, naming table, column and key) or "allow" (round it).
	Lossy string `yaml:"lossy"`
	// Zone is the IANA time zone a timestamptz rule reads timestamps in
	// (default UTC).
	Zone string `yaml:"zone"`
	// AddedLater says the column (or type) does not exist yet: the rule
	// waits for it. Without it, a rule naming a column, table or type the
	// publication does not have is an error at start (a typo).
	AddedLater bool `yaml:"added_later"`
	// Line is the rule's line in the file.
	Line int `yaml:"-"`

	// rule is what the rule says to a column it matches (see Match).
	rule decode.Rule
}

// Overrides is a configuration file: type mapping rules and per-table
// schema change policies.
type Overrides struct {
	Overrides []Override      `yaml:"rules"`
	Tables    []TablePolicies `yaml:"tables"`
	// File is the file read, for messages.
	File string `yaml:"-"`
}

// TablePolicies says what schema changes do to one table's Iceberg tables
// (Table is schema.table, or * for every table without an entry of its own).
type TablePolicies struct {
	Table string `yaml:"table"`
	// TypeChange is fail (the default: stop before writing) or new-column
	// (keep the old field under a suffixed name, add a new one) for a type
	// change Iceberg cannot promote.
	TypeChange string `yaml:"type_change"`
	// DropTable is keep (the default: the Iceberg tables stay, marked
	// dropped in their properties) or drop (they are dropped too).
	DropTable string `yaml:"drop_table"`
	// AddedLater says the table is not in the publication yet.
	AddedLater bool `yaml:"added_later"`
	// Retention is how long the table's snapshots are kept (a field not
	// given: the * entry's, else the run flags', else the table's
	// history.expire.* properties).
	Retention Retention `yaml:"retention"`
	// Compaction overrides the table's compaction policy (its mirror's and
	// changelog's pg2iceberg.compaction.* properties); nil: none.
	Compaction *CompactionPolicy `yaml:"compaction"`
	// Tiering overrides the table's hot/cold tiering policy (its Iceberg
	// tables' pg2iceberg.tiering.* properties); nil: none.
	Tiering *TieringPolicy `yaml:"tiering"`
	// Properties are Iceberg table properties set on the table's Iceberg
	// tables when the bridge creates them (write.parquet.compression-codec,
	// ...); a table that exists keeps its own.
	Properties map[string]string `yaml:"properties"`
	// Partition is the mirror's partition spec, one field a line in
	// Iceberg's transform syntax ("day(created_at)", "bucket(16, id)",
	// "truncate(4, name)", "region" for identity). A change applies at
	// the next start, as a new spec (see iceberg.ParsePartitionField).
	Partition []string `yaml:"partition"`
	// ChangelogPartition is the changelog's partition spec, in the same
	// syntax, over its columns op, lsn, xid, commit_ts and seq; nil keeps
	// day(commit_ts) (or the spec another writer set). A change applies
	// at the next start, as a new spec.
	ChangelogPartition []string `yaml:"changelog_partition"`
	// Sort is the mirror's sort order, one column a line, optionally with
	// asc or desc and nulls first or nulls last ("created_at desc"): the
	// rows of each data file the bridge writes are sorted by it. A change
	// applies at the next start (see iceberg.ParseSortField).
	Sort []string `yaml:"sort"`
	// FormatVersion is the mirror's Iceberg format version: 2 (position
	// delete files) or 3 (deletion vectors); 0 takes the * entry's, else
	// 2. A v2 mirror configured as 3 is upgraded at the next start; a v3
	// one cannot go back (see iceberg.followFormatVersion). Changelogs
	// stay v2: they are only appended to.
	FormatVersion int `yaml:"format_version"`
	// Line is the entry's line in the file.
	Line int `yaml:"-"`
}

// Retention is a tables entry's retention block.
type Retention struct {
	// MaxSnapshotAge: snapshots older than this expire, e.g. 24h.
	MaxSnapshotAge time.Duration `yaml:"max_snapshot_age"`
	// MinSnapshots: the newest this many are kept whatever their age.
	MinSnapshots int `yaml:"min_snapshots"`
}

// CompactionPolicy is a tables entry's compaction: block. A zero field
// keeps what the table's properties (or the defaults) say.
type CompactionPolicy struct {
	Enabled         *bool   `yaml:"enabled"`
	MinInputFiles   int     `yaml:"min_input_files"`
	MaxLiveFiles    int     `yaml:"max_live_files"`
	MaxDeleteFiles  int     `yaml:"max_delete_files"`
	DeleteRatio     float64 `yaml:"delete_ratio"`
	TargetFileBytes int64   `yaml:"target_file_size_bytes"`
}

// TieringPolicy is a tables entry's tiering: block. A zero field keeps
// what the table's properties say.
type TieringPolicy struct {
	Column       string        `yaml:"column"`
	ColdAfter    time.Duration `yaml:"cold_after"`
	ColdLocation string        `yaml:"cold_location"`
	StorageClass string        `yaml:"storage_class"`
}

// check adds the policy's problems to e.
func (c *TieringPolicy) check(e *ConfigError, line int, where string) {
	if c == nil {
		return
	}
	if c.ColdAfter < 0 {
		e.Add(line, "%s: tiering cold_after %s is negative; give a duration such as 720h", where, c.ColdAfter)
	}
	if l := c.ColdLocation; l != "" && !strings.HasPrefix(l, "s3://") && !strings.HasPrefix(l, "file://") && !strings.HasPrefix(l, "/") {
		e.Add(line, "%s: tiering cold_location %q must be s3://bucket/prefix or an absolute directory", where, l)
	}
}

// check adds the policy's problems to e.
func (c *CompactionPolicy) check(e *ConfigError, line int, where string) {
	if c == nil {
		return
	}
	if c.MinInputFiles != 0 && c.MinInputFiles < 2 {
		e.Add(line, "%s: compaction min_input_files is %d; use 2 or more", where, c.MinInputFiles)
	}
	if c.MaxLiveFiles != 0 && c.MaxLiveFiles < 2 {
		e.Add(line, "%s: compaction max_live_files is %d; use 2 or more", where, c.MaxLiveFiles)
	}
	if c.MaxDeleteFiles < 0 || c.TargetFileBytes < 0 {
		e.Add(line, "%s: compaction max_delete_files and target_file_size_bytes cannot be negative", where)
	}
	if c.DeleteRatio < 0 || c.DeleteRatio > 1 {
		e.Add(line, "%s: compaction delete_ratio is %v; use a fraction above 0 and at most 1", where, c.DeleteRatio)
	}
}

// Policies returns the policies for table (schema.table): its own entry,
// else the * entry, else the defaults.
func (o *Overrides) Policies(table string) TablePolicies {
	def := TablePolicies{Table: table, TypeChange: "fail", DropTable: "keep"}
	if o == nil {
		return def
	}
	var star *TablePolicies
	for i := range o.Tables {
		if o.Tables[i].Table == "*" && star == nil {
			star = &o.Tables[i]
		}
	}
	if star != nil {
		def.Retention = star.Retention
		def.FormatVersion = star.FormatVersion
	}
	for i := range o.Tables {
		if o.Tables[i].Table == table {
			return withDefaults(o.Tables[i], def)
		}
	}
	if star != nil {
		return withDefaults(*star, def)
	}
	return def
}

func withDefaults(p, def TablePolicies) TablePolicies {
	if p.TypeChange == "" {
		p.TypeChange = def.TypeChange
	}
	if p.DropTable == "" {
		p.DropTable = def.DropTable
	}
	if p.Retention.MaxSnapshotAge == 0 {
		p.Retention.MaxSnapshotAge = def.Retention.MaxSnapshotAge
	}
	if p.Retention.MinSnapshots == 0 {
		p.Retention.MinSnapshots = def.Retention.MinSnapshots
	}
	if p.FormatVersion == 0 {
		p.FormatVersion = def.FormatVersion
	}
	return p
}

var decimalRE = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// ParseOverrides reads and checks a configuration file's rules: every
// problem at once, as a *ConfigError.
func ParseOverrides(data []byte) (*Overrides, error) { return parseConfig("", data, false) }

func parseConfig(name string, data []byte, settings bool) (*Overrides, error) {
	var r Overrides
	e := decodeConfig(name, data, &r, settings)
	if err := e.Err(); err != nil {
		return nil, err
	}
	for i, rule := range r.Overrides {
		where, line := fmt.Sprintf("rule %d", i+1), rule.Line
		if (rule.Type == "") == (rule.Column == "") {
			e.Add(line, "%s: give exactly one of the keys type and column", where)
		}
		if rule.Column != "" && strings.Count(rule.Column, ".") != 2 {
			e.Add(line, "%s: column %q must be schema.table.column", where, rule.Column)
		}
		t, _, err := target(rule.To)
		if err != nil {
			e.Add(line, "%s: %v", where, err)
		}
		if rule.Zone != "" && t != iceberg.PrimitiveTypes.TimestampTz {
			e.Add(line, "%s: zone applies only to a rule with to: timestamptz", where)
		}
		var loc *time.Location
		if t == iceberg.PrimitiveTypes.TimestampTz {
			zone := rule.Zone
			if zone == "" {
				zone = "UTC"
			}
			if loc, err = time.LoadLocation(zone); err != nil {
				e.Add(line, "%s: zone %q is not an IANA time zone name such as Europe/Paris or UTC", where, rule.Zone)
			}
		}
		r.Overrides[i].rule = decode.Rule{To: rule.To, Lossy: rule.Lossy == "allow", Zone: loc}
		switch rule.Lossy {
		case "", "fail", "allow":
		default:
			e.Add(line, "%s: lossy is %q; use fail or allow", where, rule.Lossy)
		}
	}
	for i, p := range r.Tables {
		where, line := fmt.Sprintf("tables entry %d", i+1), p.Line
		if p.Table != "*" && strings.Count(p.Table, ".") != 1 {
			e.Add(line, "%s: table %q must be schema.table or *", where, p.Table)
		}
		switch p.TypeChange {
		case "", "fail", "new-column":
		default:
			e.Add(line, "%s: type_change is %q; use fail or new-column", where, p.TypeChange)
		}
		switch p.DropTable {
		case "", "keep", "drop":
		default:
			e.Add(line, "%s: drop_table is %q; use keep or drop", where, p.DropTable)
		}
		if p.Retention.MaxSnapshotAge < 0 {
			e.Add(line, "%s: retention: max_snapshot_age %s is negative; give a duration such as 24h", where, p.Retention.MaxSnapshotAge)
		}
		if p.Retention.MinSnapshots < 0 {
			e.Add(line, "%s: retention: min_snapshots %d is negative; give 1 or more", where, p.Retention.MinSnapshots)
		}
		if v := p.FormatVersion; v != 0 && v != 2 && v != 3 {
			e.Add(line, "%s: format_version is %d; use 2 (position delete files) or 3 (deletion vectors)", where, v)
		}
		p.Compaction.check(e, line, where)
		p.Tiering.check(e, line, where)
	}
	if err := e.Err(); err != nil {
		return nil, err
	}
	return &r, nil
}

// target returns the Iceberg type of a rule's to, or exclude.
func target(to string) (t iceberg.Type, exclude bool, err error) {
	switch to := strings.TrimSpace(to); {
	case to == "exclude":
		return nil, true, nil
	case to == "string":
		return iceberg.PrimitiveTypes.String, false, nil
	case to == "timestamptz":
		return iceberg.PrimitiveTypes.TimestampTz, false, nil
	case decimalRE.MatchString(to):
		m := decimalRE.FindStringSubmatch(to)
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		if p < 1 || p > MaxDecimalPrecision || s > p {
			return nil, false, fmt.Errorf("to: %s: precision must be 1 to %d and scale at most the precision", to, MaxDecimalPrecision)
		}
		return iceberg.DecimalTypeOf(p, s), false, nil
	}
	return nil, false, fmt.Errorf("to: %q; use string, decimal(P,S), timestamptz or exclude", to)
}

// Match returns what the rule for a column of table (schema.table) says to
// it, or nil. typeName is the column's type as format_type prints it;
// modifiers are ignored.
func (o *Overrides) Match(table, column, typeName string) *decode.Rule {
	if o == nil {
		return nil
	}
	base := typeName
	if i := strings.IndexByte(base, '('); i >= 0 {
		base = strings.TrimSpace(base[:i]) + base[strings.IndexByte(base, ')')+1:]
	}
	var byType *Override
	for i := range o.Overrides {
		r := &o.Overrides[i]
		if r.Column == table+"."+column {
			return &r.rule
		}
		if r.Type != "" && r.Type == base && byType == nil {
			byType = r
		}
	}
	if byType == nil {
		return nil
	}
	return &byType.rule
}

// forOverride is For with a rule: the rule's target, when the source type can
// be written as it.
func forOverride(table string, c Column, r *decode.Rule) (iceberg.Type, error) {
	t, _, err := target(r.To)
	if err != nil {
		return nil, err
	}
	if _, ok := t.(iceberg.DecimalType); ok {
		switch c.TypeOID {
		case OIDNumeric, OIDInt2, OIDInt4, OIDInt8:
		default:
			return nil, fmt.Errorf("%s.%s: a decimal rule applies to numeric and integer columns, not %s", table, c.Name, c.TypeName)
		}
	}
	if t == iceberg.PrimitiveTypes.TimestampTz && c.TypeOID != OIDTimestamp {
		return nil, fmt.Errorf("%s.%s: a timestamptz rule applies to timestamp without time zone columns, not %s", table, c.Name, c.TypeName)
	}
	return t, nil
}

// RoundDecimal rounds a numeric's text form to scale digits after the point,
// half away from zero (as PostgreSQL's round does), for lossy: allow.
func RoundDecimal(text []byte, scale int) ([]byte, error) {
	var v big.Rat
	if _, ok := v.SetString(string(text)); !ok {
		return nil, fmt.Errorf("not a number")
	}
	return []byte(roundRat(&v, scale)), nil
}

func roundRat(v *big.Rat, scale int) string {
	neg := v.Sign() < 0
	a := new(big.Rat).Abs(v)
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	a.Mul(a, new(big.Rat).SetInt(pow))
	a.Add(a, big.NewRat(1, 2))
	q := new(big.Int).Quo(a.Num(), a.Denom())
	s := q.String()
	for len(s) <= scale {
		s = "0" + s
	}
	if scale > 0 {
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg && strings.Trim(s, "0.") != "" {
		s = "-" + s
	}
	return s
}

// WholeRowProblem says why column c cannot be compared as part of a
// whole-row key (a mirror kept by every column, see decode.Relation), or
// "" when it can: its Iceberg type must be a single value, and no rule may
// round or shift the values the source sends. A column a rule excludes is
// not part of the key.
func WholeRowProblem(table string, c Column) string {
	if c.Rule.Excluded() {
		return ""
	}
	t, err := For(table, c)
	if err != nil {
		return err.Error()
	}
	if _, ok := t.(iceberg.PrimitiveType); !ok {
		return fmt.Sprintf("column %s (%s) is not a single value", c.Name, c.TypeName)
	}
	if c.Rule.LossyAllowed() || c.Rule.Location() != nil {
		return fmt.Sprintf("the rule for column %s changes its values", c.Name)
	}
	return ""
}
