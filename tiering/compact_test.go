package tiering

import (
	"fmt"
	"slices"
	"testing"

	icego "github.com/apache/iceberg-go"
)

func files(n int, bytes, rows, deleted int64) []FileStat {
	var out []FileStat
	for i := range n {
		out = append(out, FileStat{Path: fmt.Sprintf("f%02d", i), Bytes: bytes, Rows: rows, Deleted: deleted, Seq: int64(n - i)})
	}
	return out
}

func TestPlanCompaction(t *testing.T) {
	const mib = 1 << 20
	big := DefaultCompact.TargetBytes
	tests := []struct {
		name        string
		c           CompactConfig
		files       []FileStat
		deleteFiles int
		wantData    int
		wantDeletes bool
	}{
		{"few small files", DefaultCompact, files(15, mib, 100, 0), 0, 0, false},
		{"small files and delete files", DefaultCompact, files(8, mib, 100, 1), 8, 8, true},
		{"enough small files", DefaultCompact, files(16, mib, 100, 0), 3, 16, true},
		{"big files, no deletes", DefaultCompact, files(30, big, 100, 0), 0, 0, false},
		{"big files over the live count", DefaultCompact, files(40, big, 100, 0), 0, 0, false},
		{"one heavy big file", DefaultCompact, append(files(3, big, 100, 0), FileStat{Path: "h", Bytes: big, Rows: 100, Deleted: 31}), 1, 1, true},
		{"a dead file", DefaultCompact, append(files(2, big, 100, 0), FileStat{Path: "d", Bytes: mib, Rows: 10, Deleted: 10}), 1, 1, true},
		{"many delete files only", DefaultCompact, files(3, big, 100, 1), 17, 0, true},
		{"delete files under the bound", DefaultCompact, files(3, big, 100, 1), 16, 0, false},
		{"over the live count with small files", DefaultCompact, append(files(30, big, 100, 0), files(3, mib, 100, 0)...), 0, 3, false},
		{"a single small file alone", DefaultCompact, files(1, mib, 100, 0), 40, 0, true},
		{"turned off", CompactConfig{}, files(40, mib, 100, 50), 40, 0, false},
		{"rewrite bounded", CompactConfig{Enabled: true, TargetBytes: 100 * mib, MinInputFiles: 2, MaxLiveFiles: 100, DeleteRatio: 0.5, MaxDeleteFiles: 10, MaxRewriteBytes: 100 * mib}, files(20, 10*mib, 100, 0), 0, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanCompaction(tt.c, tt.files, tt.deleteFiles)
			if len(got.Data) != tt.wantData || got.Deletes != tt.wantDeletes {
				t.Errorf("PlanCompaction = %d data files, deletes %v; want %d, %v", len(got.Data), got.Deletes, tt.wantData, tt.wantDeletes)
			}
		})
	}
}

func TestPlanCompactionOldestFirst(t *testing.T) {
	c := DefaultCompact
	c.MaxRewriteBytes = 4
	fs := files(20, 1, 10, 0) // f00 is the newest
	got := PlanCompaction(c, fs, 0)
	if want := []string{"f19", "f18", "f17", "f16"}; !slices.Equal(got.Data, want) {
		t.Errorf("PlanCompaction data = %v, want %v", got.Data, want)
	}
}

func TestCompactConfigOf(t *testing.T) {
	c := CompactConfigOf(icego.Properties{PropCompactEnabled: "false", PropTargetFileSize: "1048576", PropCompactMinFiles: "4", PropCompactDeleteRatio: "0.5", PropCompactMaxFiles: "1"})
	want := DefaultCompact
	want.Enabled, want.TargetBytes, want.MinInputFiles, want.DeleteRatio = false, 1<<20, 4, 0.5
	if c != want {
		t.Errorf("CompactConfigOf = %+v, want %+v", c, want)
	}
	if c := CompactConfigOf(nil); c != DefaultCompact {
		t.Errorf("CompactConfigOf(nil) = %+v, want %+v", c, DefaultCompact)
	}
}
