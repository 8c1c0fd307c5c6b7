package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// Kind says how a Point names a snapshot.
type Kind int

const (
	Current  Kind = iota // the table's current snapshot (main)
	Snapshot             // a snapshot id
	Ref                  // a tag or branch
	Time                 // the table as it was at a time
	LSN                  // the table as of a source LSN
)

// Point is a place in a table's history; the zero value is the current
// snapshot.
type Point struct {
	Kind Kind
	ID   int64
	Ref  string
	Time time.Time
	LSN  decode.LSN
}

func (p Point) String() string {
	switch p.Kind {
	case Snapshot:
		return strconv.FormatInt(p.ID, 10)
	case Ref:
		return "ref:" + p.Ref
	case Time:
		return "time:" + p.Time.UTC().Format(time.RFC3339Nano)
	case LSN:
		return "lsn:" + p.LSN.String()
	default:
		return "current"
	}
}

// pointSyntax is what ParsePoint accepts, for error messages.
const pointSyntax = "a snapshot id (123456789), ref:NAME (a tag or branch), time:2026-12-02T03:00:00Z (RFC 3339) or lsn:0/16B3748 (a source LSN)"

// ParsePoint reads a point written as a plain snapshot id, or with a
// prefix saying what it is: snapshot:ID, ref:NAME, time:RFC3339, lsn:X/Y;
// "current" is the current snapshot.
func ParsePoint(s string) (Point, error) {
	if s == "current" {
		return Point{}, nil
	}
	kind, val, ok := strings.Cut(s, ":")
	if !ok {
		kind, val = "snapshot", s
	}
	if val == "" {
		return Point{}, fmt.Errorf("point %q is empty after %q: give %s", s, kind+":", pointSyntax)
	}
	switch kind {
	case "snapshot":
		return SnapshotPoint(val)
	case "ref":
		return Point{Kind: Ref, Ref: val}, nil
	case "time":
		return TimePoint(val)
	case "lsn":
		return LSNPoint(val)
	default:
		return Point{}, fmt.Errorf("point %q: unknown kind %q: give %s", s, kind, pointSyntax)
	}
}

// SnapshotPoint reads a snapshot id.
func SnapshotPoint(s string) (Point, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Point{}, fmt.Errorf("snapshot id %q is not a number: give %s", s, pointSyntax)
	}
	return Point{Kind: Snapshot, ID: id}, nil
}

// TimePoint reads an RFC 3339 time (2026-12-02T03:00:00Z, fractions and
// offsets allowed).
func TimePoint(s string) (Point, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Point{}, fmt.Errorf("time %q is not RFC 3339, e.g. 2026-12-02T03:00:00Z or 2026-12-02T04:00:00+01:00", s)
	}
	return Point{Kind: Time, Time: t}, nil
}

// LSNPoint reads a source LSN as PostgreSQL prints it (0/16B3748).
func LSNPoint(s string) (Point, error) {
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		return Point{}, fmt.Errorf("LSN %q is not of the form 0/16B3748 (as pg_current_wal_lsn() prints it)", s)
	}
	return Point{Kind: LSN, LSN: l}, nil
}

// ErrNoSnapshot is a point that names no snapshot of the table.
var ErrNoSnapshot = errors.New("no such snapshot")

// Resolve returns the snapshot p names in tbl.
//
//   - Snapshot: that snapshot, if the table still has it.
//   - Ref: the snapshot the tag or branch points at.
//   - Time: the table's current snapshot at that time (the snapshot log,
//     which follows rollbacks), or, without a log, the newest ancestor of
//     the current snapshot committed at or before it.
//   - LSN: the newest ancestor of the current snapshot whose watermark is
//     at or below the LSN (see Watermark); a chunk of a first copy counts
//     only when it completed the copy, at the copy's LSN.
func Resolve(tbl *table.Table, p Point) (*table.Snapshot, error) {
	meta := tbl.Metadata()
	name := strings.Join(tbl.Identifier(), ".")
	switch p.Kind {
	case Current:
		s := tbl.CurrentSnapshot()
		if s == nil {
			return nil, fmt.Errorf("table %s has no snapshot yet: %w", name, ErrNoSnapshot)
		}
		return s, nil
	case Snapshot:
		if s := meta.SnapshotByID(p.ID); s != nil {
			return s, nil
		}
		return nil, fmt.Errorf("table %s has no snapshot %d (never, or expired since): list them with pg2iceberg snapshots --table %s: %w", name, p.ID, name, ErrNoSnapshot)
	case Ref:
		if s := meta.SnapshotByName(p.Ref); s != nil {
			return s, nil
		}
		return nil, fmt.Errorf("table %s has no ref %q (its refs: %s): %w", name, p.Ref, strings.Join(refNames(meta), ", "), ErrNoSnapshot)
	case Time:
		return atTime(tbl, p.Time)
	case LSN:
		return atLSN(tbl, p.LSN)
	}
	return nil, fmt.Errorf("point of unknown kind %d", p.Kind)
}

func atTime(tbl *table.Table, at time.Time) (*table.Snapshot, error) {
	meta := tbl.Metadata()
	ms := at.UnixMilli()
	var id int64
	found, logged := false, false
	for e := range meta.SnapshotLogs() {
		logged = true
		if e.TimestampMs <= ms {
			id, found = e.SnapshotID, true
		}
	}
	if found {
		if s := meta.SnapshotByID(id); s != nil {
			return s, nil
		}
		return nil, fmt.Errorf("table %s was at snapshot %d at %s, which has expired since: %w", strings.Join(tbl.Identifier(), "."), id, at.UTC().Format(time.RFC3339Nano), ErrNoSnapshot)
	}
	if !logged {
		for _, s := range Ancestry(tbl) {
			if s.TimestampMs <= ms {
				return s, nil
			}
		}
	}
	name := strings.Join(tbl.Identifier(), ".")
	oldest := "none"
	if a := Ancestry(tbl); len(a) > 0 {
		oldest = time.UnixMilli(a[len(a)-1].TimestampMs).UTC().Format(time.RFC3339Nano)
	}
	return nil, fmt.Errorf("table %s has no snapshot at or before %s (the oldest kept is from %s): %w", name, at.UTC().Format(time.RFC3339Nano), oldest, ErrNoSnapshot)
}

func atLSN(tbl *table.Table, l decode.LSN) (*table.Snapshot, error) {
	a := Ancestry(tbl)
	for i, s := range a {
		wm, ok, err := lsnWatermark(tbl, a, i)
		if err != nil {
			return nil, err
		}
		if ok && wm <= l {
			return s, nil
		}
	}
	name := strings.Join(tbl.Identifier(), ".")
	oldest := "no snapshot has a watermark (it was not written by pg2iceberg)"
	for i := len(a) - 1; i >= 0; i-- {
		if wm, ok, _ := lsnWatermark(tbl, a, i); ok {
			oldest = "the oldest kept snapshot with one is at " + wm.String()
			break
		}
	}
	return nil, fmt.Errorf("table %s has no snapshot with a watermark at or below %s (%s): %w", name, l, oldest, ErrNoSnapshot)
}

// lsnWatermark is the watermark of a[i] (a: main's ancestry, newest
// first) for choosing by LSN: its Watermark, except that a chunk of a
// first copy holds the source at the copy's LSN only once the copy is
// complete, so only the last chunk counts (followed by the stream's
// commits, or the head of a table whose copy is marked complete).
func lsnWatermark(tbl *table.Table, a []*table.Snapshot, i int) (decode.LSN, bool, error) {
	cl, chunk := copyLSN(a[i])
	if !chunk {
		return Watermark(tbl, a[i])
	}
	last := i == 0 && tbl.Properties()[iceberg.PropCopyLSN] != ""
	if i > 0 {
		_, next := copyLSN(a[i-1])
		last = !next
	}
	return cl, last, nil
}

// Ancestry is the current snapshot and its ancestors, newest first.
func Ancestry(tbl *table.Table) []*table.Snapshot {
	return ancestry(tbl.Metadata(), tbl.CurrentSnapshot())
}

func ancestry(meta table.Metadata, s *table.Snapshot) []*table.Snapshot {
	var out []*table.Snapshot
	for s != nil {
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out
}

// Watermark is s's LSN watermark: its own pg2iceberg.lsn, or that of its
// nearest ancestor that has one (a maintenance snapshot, such as a
// compaction, changes no rows and carries none); ok is false when no
// snapshot of s's ancestry has one.
func Watermark(tbl *table.Table, s *table.Snapshot) (decode.LSN, bool, error) {
	for _, a := range ancestry(tbl.Metadata(), s) {
		if a.Summary == nil {
			continue
		}
		if v, ok := a.Summary.Properties[iceberg.PropLSN]; ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, false, fmt.Errorf("table %s snapshot %d: bad %s %q: %w", strings.Join(tbl.Identifier(), "."), a.SnapshotID, iceberg.PropLSN, v, err)
			}
			return decode.LSN(n), true, nil
		}
	}
	return 0, false, nil
}

// refNames is the table's refs, sorted, or "none".
func refNames(meta table.Metadata) []string {
	var out []string
	for name := range meta.Refs() {
		out = append(out, name)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	sortStrings(out)
	return out
}

// copyLSN reports whether s is a chunk of a table's first copy (its
// summary has the copy's progress) and the source LSN the copy reads at.
func copyLSN(s *table.Snapshot) (decode.LSN, bool) {
	if s.Summary == nil {
		return 0, false
	}
	v, ok := s.Summary.Properties[iceberg.PropCopyProgress]
	if !ok {
		return 0, false
	}
	var p struct {
		LSN decode.LSN `json:"lsn"`
	}
	if json.Unmarshal([]byte(v), &p) != nil {
		return 0, true // unreadable: never taken as complete
	}
	return p.LSN, true
}
