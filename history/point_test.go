package history

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// historyTable is a table with the history a bridge leaves: two chunks of
// a first copy at LSN 100 (0/64), a stream commit at 150 (0/96), a
// compaction (no watermark), a stream commit at 300 (0/12C), a tag t on
// the compaction; current is main's head, and log the snapshot log.
func historyTable(t *testing.T, current int64, log string) *table.Table {
	t.Helper()
	snap := func(id, parent int64, op, props string) string {
		p := ""
		if parent != 0 {
			p = fmt.Sprintf(`"parent-snapshot-id": %d,`, parent)
		}
		return fmt.Sprintf(`{"snapshot-id": %d, %s "sequence-number": %d, "timestamp-ms": %d, "manifest-list": "file:///x/%d.avro", "schema-id": 0, "summary": {"operation": %q %s}}`,
			id, p, id, id*1000, id, op, props)
	}
	progress := `, "pg2iceberg.lsn": "0", "pg2iceberg.copy-progress": "{\"lsn\":100,\"done\":[[0,1]]}"`
	meta := fmt.Sprintf(`{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "file:///x",
		"last-sequence-number": 5, "last-updated-ms": 6000, "last-column-id": 2, "current-schema-id": 0,
		"schemas": [{"type": "struct", "schema-id": 0, "identifier-field-ids": [1], "fields": [
			{"id": 1, "name": "id", "required": true, "type": "long"}, {"id": 2, "name": "v", "required": false, "type": "string"}]}],
		"default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
		"default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
		"properties": {"pg2iceberg.copy-lsn": "100"},
		"current-snapshot-id": %d,
		"snapshots": [%s, %s, %s, %s, %s],
		"snapshot-log": [%s],
		"refs": {"main": {"snapshot-id": %d, "type": "branch"}, "t": {"snapshot-id": 4, "type": "tag"}}}`,
		current,
		snap(1, 0, "append", progress), snap(2, 1, "append", progress),
		snap(3, 2, "overwrite", `, "pg2iceberg.lsn": "150"`), snap(4, 3, "replace", ""),
		snap(5, 4, "overwrite", `, "pg2iceberg.lsn": "300"`),
		log, current)
	md, err := table.ParseMetadataBytes([]byte(meta))
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return table.New(table.Identifier{"shop", "orders"}, md, "file:///x/metadata/00001.metadata.json", nil, nil)
}

const straightLog = `{"snapshot-id": 1, "timestamp-ms": 1000}, {"snapshot-id": 2, "timestamp-ms": 2000}, {"snapshot-id": 3, "timestamp-ms": 3000}, {"snapshot-id": 4, "timestamp-ms": 4000}, {"snapshot-id": 5, "timestamp-ms": 5000}`

func TestResolve(t *testing.T) {
	tbl := historyTable(t, 5, straightLog)
	rolled := historyTable(t, 3, straightLog+`, {"snapshot-id": 3, "timestamp-ms": 6000}`)
	copied := historyTable(t, 2, `{"snapshot-id": 1, "timestamp-ms": 1000}, {"snapshot-id": 2, "timestamp-ms": 2000}`)
	at := func(ms int64) Point { return Point{Kind: Time, Time: time.UnixMilli(ms)} }
	lsn := func(l decode.LSN) Point { return Point{Kind: LSN, LSN: l} }
	tests := []struct {
		name string
		tbl  *table.Table
		p    Point
		want int64 // 0: an error
	}{
		{"current", tbl, Point{}, 5},
		{"snapshot", tbl, Point{Kind: Snapshot, ID: 2}, 2},
		{"unknown snapshot", tbl, Point{Kind: Snapshot, ID: 9}, 0},
		{"tag", tbl, Point{Kind: Ref, Ref: "t"}, 4},
		{"main", tbl, Point{Kind: Ref, Ref: "main"}, 5},
		{"unknown ref", tbl, Point{Kind: Ref, Ref: "x"}, 0},
		{"lsn before the copy", tbl, lsn(50), 0},
		{"lsn at the copy: its last chunk", tbl, lsn(100), 2},
		{"lsn inside the copy's window", tbl, lsn(149), 2},
		{"lsn at a complete copy, nothing streamed yet", copied, lsn(120), 2},
		{"lsn at a commit: the compaction after it, same rows", tbl, lsn(150), 4},
		{"lsn after a compaction", tbl, lsn(299), 4},
		{"lsn at the head", tbl, lsn(300), 5},
		{"lsn beyond", tbl, lsn(1 << 40), 5},
		{"time before the first", tbl, at(999), 0},
		{"time between", tbl, at(3500), 3},
		{"time of the head", tbl, at(5000), 5},
		{"time before a rollback", rolled, at(5500), 5},
		{"time after a rollback", rolled, at(6000), 3},
		{"lsn after a rollback follows main", rolled, lsn(1 << 40), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.tbl, tc.p)
			switch {
			case tc.want == 0 && !errors.Is(err, ErrNoSnapshot):
				t.Errorf("Resolve(%s) = %v, %v; want ErrNoSnapshot", tc.p, s, err)
			case tc.want != 0 && (err != nil || s.SnapshotID != tc.want):
				t.Errorf("Resolve(%s) = %v, %v; want snapshot %d", tc.p, s, err, tc.want)
			}
		})
	}
	if _, err := Resolve(tbl, Point{Kind: Ref, Ref: "x"}); err == nil || !strings.Contains(err.Error(), "its refs: main, t") {
		t.Errorf("Resolve(ref:x) error = %v, want the refs listed", err)
	}
	if _, err := Resolve(tbl, lsn(50)); err == nil || !strings.Contains(err.Error(), "the oldest kept snapshot with one is at 0/64") {
		t.Errorf("Resolve(lsn:0/32) error = %v, want the oldest watermark named", err)
	}
}

func TestSnapshots(t *testing.T) {
	rolled := historyTable(t, 3, straightLog+`, {"snapshot-id": 3, "timestamp-ms": 6000}`)
	list, err := Snapshots(rolled)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list {
		got = append(got, fmt.Sprintf("%d %s lsn=%s copy=%s current=%v ancestor=%v refs=%s", s.ID, s.Operation, s.LSN, s.CopyLSN, s.Current, s.Ancestor, strings.Join(s.Refs, ",")))
	}
	want := []string{
		"1 append lsn=0/0 copy=0/64 current=false ancestor=true refs=",
		"2 append lsn=0/0 copy=0/64 current=false ancestor=true refs=",
		"3 overwrite lsn=0/96 copy= current=true ancestor=true refs=main",
		"4 replace lsn=0/96 copy= current=false ancestor=false refs=t",
		"5 overwrite lsn=0/12C copy= current=false ancestor=false refs=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Snapshots =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
