package history

import (
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
)

// SnapshotInfo is one snapshot as `pg2iceberg snapshots` shows it.
type SnapshotInfo struct {
	ID        int64     `json:"snapshot_id"`
	Parent    *int64    `json:"parent_id,omitempty"`
	Time      time.Time `json:"time"`
	Operation string    `json:"operation"`
	// LSN is the source LSN the snapshot is complete up to (its own
	// pg2iceberg.lsn or its nearest ancestor's), "" when none.
	LSN string `json:"lsn,omitempty"`
	// CopyLSN: the snapshot is a chunk of the table's first copy, which
	// reads the source at this LSN.
	CopyLSN string `json:"copy_lsn,omitempty"`
	// Current: the snapshot is main's head; Ancestor: of main's head.
	Current  bool `json:"current"`
	Ancestor bool `json:"ancestor_of_current"`
	// From the summary (Iceberg's standard keys); -1 when absent.
	AddedRows         int64    `json:"added_rows"`
	DeletedRows       int64    `json:"deleted_rows"`     // in data files removed whole
	PositionDeletes   int64    `json:"position_deletes"` // rows deleted by position
	AddedDataFiles    int64    `json:"added_data_files"`
	RemovedDataFiles  int64    `json:"removed_data_files"`
	AddedDeleteFiles  int64    `json:"added_delete_files"`
	RemovedDeleteFile int64    `json:"removed_delete_files"`
	TotalRecords      int64    `json:"total_records"`
	Refs              []string `json:"refs"`
}

// Snapshots lists tbl's snapshots, oldest first, with the refs that point
// at each.
func Snapshots(tbl *table.Table) ([]SnapshotInfo, error) {
	meta := tbl.Metadata()
	refs := map[int64][]string{}
	for name, ref := range meta.Refs() {
		refs[ref.SnapshotID] = append(refs[ref.SnapshotID], name)
	}
	onMain := map[int64]bool{}
	for _, s := range Ancestry(tbl) {
		onMain[s.SnapshotID] = true
	}
	var current int64 = -1
	if s := tbl.CurrentSnapshot(); s != nil {
		current = s.SnapshotID
	}
	var out []SnapshotInfo
	for _, s := range meta.Snapshots() {
		info := SnapshotInfo{
			ID: s.SnapshotID, Parent: s.ParentSnapshotID, Time: time.UnixMilli(s.TimestampMs).UTC(),
			Current: s.SnapshotID == current, Ancestor: onMain[s.SnapshotID],
			Refs: refs[s.SnapshotID],
		}
		if info.Refs == nil {
			info.Refs = []string{}
		}
		slices.Sort(info.Refs)
		wm, ok, err := Watermark(tbl, &s)
		if err != nil {
			return nil, err
		}
		if ok {
			info.LSN = wm.String()
		}
		if cl, chunk := copyLSN(&s); chunk {
			info.CopyLSN = cl.String()
		}
		var props map[string]string
		if s.Summary != nil {
			info.Operation, props = string(s.Summary.Operation), s.Summary.Properties
		}
		num := func(k string) int64 {
			n, err := strconv.ParseInt(props[k], 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
		info.AddedRows, info.DeletedRows = num("added-records"), num("deleted-records")
		info.PositionDeletes = num("added-position-deletes")
		info.AddedDataFiles, info.RemovedDataFiles = num("added-data-files"), num("deleted-data-files")
		info.AddedDeleteFiles, info.RemovedDeleteFile = num("added-delete-files"), num("removed-delete-files")
		info.TotalRecords = num("total-records")
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b SnapshotInfo) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func sortStrings(s []string) { slices.Sort(s) }
