package iceberg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

func snap(op table.Operation, props map[string]string) *table.Snapshot {
	return &table.Snapshot{SnapshotID: 1, Summary: &table.Summary{Operation: op, Properties: props}}
}

// The reconcile decision: which outside snapshots make a mirror drop its
// batch and rebuild its key index (see needsRebuild).
func TestNeedsRebuild(t *testing.T) {
	// Summaries as Spark 3.5 / Iceberg 1.10 writes them.
	rewriteData := snap(table.OpReplace, map[string]string{"added-data-files": "1", "deleted-data-files": "6", "added-records": "296", "deleted-records": "340", "engine-name": "spark"})
	rewriteDeletes := snap(table.OpReplace, map[string]string{"added-delete-files": "1", "removed-delete-files": "5", "added-position-deletes": "40", "removed-position-deletes": "44", "engine-name": "spark"})
	rewriteManifests := snap(table.OpReplace, map[string]string{"manifests-created": "1", "manifests-replaced": "12", "manifests-kept": "0", "entries-processed": "0"})
	sparkDelete := snap(table.OpDelete, map[string]string{"added-delete-files": "1", "added-position-deletes": "3"})
	sparkOverwrite := snap(table.OpOverwrite, map[string]string{"added-data-files": "1", "added-delete-files": "1"})
	appendRows := snap(table.OpAppend, map[string]string{"added-data-files": "1", "added-records": "10"})
	noSummary := &table.Snapshot{SnapshotID: 1}
	garbled := snap(table.OpReplace, map[string]string{"added-data-files": "x"})
	for _, tc := range []struct {
		name      string
		outside   []*table.Snapshot
		connected bool
		want      bool
	}{
		{"expire_snapshots only (no snapshot)", nil, true, false},
		{"rewrite_data_files", []*table.Snapshot{rewriteData}, true, true},
		{"rewrite_position_delete_files", []*table.Snapshot{rewriteDeletes}, true, false},
		{"rewrite_manifests", []*table.Snapshot{rewriteManifests}, true, false},
		{"delete files then manifests", []*table.Snapshot{rewriteManifests, rewriteDeletes}, true, false},
		{"manifests then data files", []*table.Snapshot{rewriteManifests, rewriteData}, true, true},
		{"a DELETE by Spark", []*table.Snapshot{sparkDelete}, true, true},
		{"a MERGE by Spark", []*table.Snapshot{sparkOverwrite}, true, true},
		{"an append by another writer", []*table.Snapshot{appendRows}, true, true},
		{"no summary", []*table.Snapshot{noSummary}, true, true},
		{"a summary that does not parse", []*table.Snapshot{garbled}, true, true},
		{"our base expired: history unknown", nil, false, true},
		{"rewrite_manifests, our base expired", []*table.Snapshot{rewriteManifests}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsRebuild(tc.outside, tc.connected); got != tc.want {
				t.Errorf("needsRebuild(%s) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// tableWith returns a table whose main branch is the chain of snapshots
// given oldest first, each "id:operation:writer" (writer "us" for this
// source, "spark" for another); expired lists snapshots no longer in the
// metadata.
func tableWith(t *testing.T, chain []string, expired ...int) *table.Table {
	t.Helper()
	gone := map[int]bool{}
	for _, id := range expired {
		gone[id] = true
	}
	var snaps []string
	parent, last := "", 0
	for i, c := range chain {
		var id int
		var op, who string
		if _, err := fmt.Sscanf(strings.ReplaceAll(c, ":", " "), "%d %s %s", &id, &op, &who); err != nil {
			t.Fatal(err)
		}
		props := `"engine-name": "spark"`
		if who == "us" {
			props = `"pg2iceberg.source": "src", "pg2iceberg.lsn": "` + strconv.Itoa(100+i) + `"`
		}
		if !gone[id] {
			snaps = append(snaps, fmt.Sprintf(`{"snapshot-id": %d, %s "sequence-number": %d, "timestamp-ms": %d, "manifest-list": "file:///t/m%d.avro", "summary": {"operation": %q, %s}, "schema-id": 0}`,
				id, parent, i+1, 1700000000000+i, id, op, props))
		}
		parent, last = fmt.Sprintf(`"parent-snapshot-id": %d,`, id), id
	}
	meta, err := table.ParseMetadataString(fmt.Sprintf(`{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "file:///t",
		"last-sequence-number": %d, "last-updated-ms": 1700000000000, "last-column-id": 1,
		"schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": true, "type": "int"}]}], "current-schema-id": 0,
		"partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0, "last-partition-id": 999,
		"sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0, "properties": {},
		"current-snapshot-id": %d, "refs": {"main": {"snapshot-id": %d, "type": "branch"}},
		"snapshots": [%s], "snapshot-log": [], "metadata-log": []}`, len(chain), last, last, strings.Join(snaps, ",")))
	if err != nil {
		t.Fatal(err)
	}
	return table.New(table.Identifier{"s", "t"}, meta, "file:///t/metadata/v1.metadata.json", nil, nil)
}

// outsideSnapshots finds the snapshots between the bridge's base and the
// head that another writer committed, and whether the base is still an
// ancestor; LastOutside finds the newest one on top of the bridge's last.
func TestOutsideSnapshots(t *testing.T) {
	base := tableWith(t, []string{"1:append:us", "2:overwrite:us"})
	for _, tc := range []struct {
		name      string
		now       *table.Table
		want      []int64
		connected bool
		last      int64 // LastOutside of now, 0: none
	}{
		{"nothing new", base, nil, true, 0},
		{"our own commit since", tableWith(t, []string{"1:append:us", "2:overwrite:us", "3:overwrite:us"}), nil, true, 0},
		{"spark's rewrite", tableWith(t, []string{"1:append:us", "2:overwrite:us", "3:replace:spark"}), []int64{3}, true, 3},
		{"spark's, then ours", tableWith(t, []string{"1:append:us", "2:overwrite:us", "3:replace:spark", "4:overwrite:us"}), []int64{3}, true, 0},
		{"two of spark's", tableWith(t, []string{"1:append:us", "2:overwrite:us", "3:replace:spark", "4:replace:spark"}), []int64{4, 3}, true, 4},
		{"our base expired under spark's", tableWith(t, []string{"1:append:us", "2:overwrite:us", "3:replace:spark"}, 1, 2), []int64{3}, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, connected := outsideSnapshots(tc.now, base, "src")
			var got []int64
			for _, s := range out {
				got = append(got, s.SnapshotID)
			}
			if !slices.Equal(got, tc.want) || connected != tc.connected {
				t.Errorf("outsideSnapshots = %v, %v, want %v, %v", got, connected, tc.want, tc.connected)
			}
			var last int64
			if s := LastOutside(tc.now); s != nil {
				last = s.SnapshotID
			}
			if last != tc.last {
				t.Errorf("LastOutside = %d, want %d", last, tc.last)
			}
		})
	}
}
