package iceberg

import (
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
