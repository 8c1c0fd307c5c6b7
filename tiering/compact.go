package tiering

import (
	"cmp"
	"slices"
	"strconv"

	icego "github.com/apache/iceberg-go"
)

// Compaction policy: which of a table's live files to rewrite. It is pure:
// package iceberg reads the files and their deletes, asks Plan, does the
// rewrite and commits it (see iceberg/compact.go).

// Table properties that tune compaction (the bridge's own names, beside
// Iceberg's write.target-file-size-bytes, which sets the output size).
const (
	PropCompactEnabled     = "pg2iceberg.compaction.enabled"          // "false" turns it off
	PropCompactMinFiles    = "pg2iceberg.compaction.min-input-files"  // small files that make a rewrite due
	PropCompactMaxFiles    = "pg2iceberg.compaction.max-live-files"   // live data + delete files that make one due
	PropCompactDeleteRatio = "pg2iceberg.compaction.delete-ratio"     // deleted fraction that makes a file due, 0..1
	PropCompactMaxDeletes  = "pg2iceberg.compaction.max-delete-files" // delete files that make a delete-file rewrite due
	PropTargetFileSize     = "write.target-file-size-bytes"           // Iceberg's: the size rewritten files aim at
)

// CompactConfig is one table's compaction policy. The zero value is not
// useful: take DefaultCompact, or CompactConfigOf a table's properties.
type CompactConfig struct {
	Enabled bool
	// TargetBytes is the size a rewritten data file aims at; a data file
	// under three quarters of it is small.
	TargetBytes int64
	// MinInputFiles small data files make a rewrite of them due.
	MinInputFiles int
	// MaxLiveFiles live data plus delete files make a rewrite due,
	// whatever their sizes, so the count stays bounded.
	MaxLiveFiles int
	// DeleteRatio is the fraction of deleted rows that makes a data file
	// due for a rewrite (its dead space).
	DeleteRatio float64
	// MaxDeleteFiles position delete files make a rewrite of the delete
	// files alone due, when no data rewrite is.
	MaxDeleteFiles int
	// MaxRewriteBytes bounds the data one compaction reads, so a job
	// stays short and the stream's next install comes soon.
	MaxRewriteBytes int64
}

// DefaultCompact is the policy of a table that sets none of the
// properties. With a flush a second (a data and a delete file each), a
// rewrite is due every 8 to 16 s, and a small table is rewritten in well
// under a second: the live file count stays far below 64.
var DefaultCompact = CompactConfig{
	Enabled:         true,
	TargetBytes:     128 << 20,
	MinInputFiles:   16,
	MaxLiveFiles:    32,
	DeleteRatio:     0.3,
	MaxDeleteFiles:  16,
	MaxRewriteBytes: 1 << 30,
}

// CompactConfigOf reads a table's compaction policy from its properties,
// DefaultCompact where one is missing or not a valid value.
func CompactConfigOf(props icego.Properties) CompactConfig {
	c := DefaultCompact
	c.Enabled = props.Get(PropCompactEnabled, "true") != "false"
	if v := props.GetInt64(PropTargetFileSize, 0); v > 0 {
		c.TargetBytes = v
	}
	if v := props.GetInt(PropCompactMinFiles, 0); v >= 2 {
		c.MinInputFiles = v
	}
	if v := props.GetInt(PropCompactMaxFiles, 0); v >= 2 {
		c.MaxLiveFiles = v
	}
	if v := props.GetInt(PropCompactMaxDeletes, 0); v >= 1 {
		c.MaxDeleteFiles = v
	}
	if v, err := strconv.ParseFloat(props.Get(PropCompactDeleteRatio, ""), 64); err == nil && v > 0 && v <= 1 {
		c.DeleteRatio = v
	}
	if c.MaxRewriteBytes < c.TargetBytes {
		c.MaxRewriteBytes = c.TargetBytes
	}
	return c
}

// With returns c with the overrides that are set (zero values are not).
func (c CompactConfig) With(enabled *bool, minInput, maxLive, maxDeletes int, deleteRatio float64, targetBytes int64) CompactConfig {
	if enabled != nil {
		c.Enabled = *enabled
	}
	if minInput >= 2 {
		c.MinInputFiles = minInput
	}
	if maxLive >= 2 {
		c.MaxLiveFiles = maxLive
	}
	if maxDeletes > 0 {
		c.MaxDeleteFiles = maxDeletes
	}
	if deleteRatio > 0 && deleteRatio <= 1 {
		c.DeleteRatio = deleteRatio
	}
	if targetBytes > 0 {
		c.TargetBytes = targetBytes
		c.MaxRewriteBytes = max(c.MaxRewriteBytes, targetBytes)
	}
	return c
}

// FileStat is one live data file as the policy sees it.
type FileStat struct {
	Path    string
	Bytes   int64
	Rows    int64 // rows in the file
	Deleted int64 // of them, rows position deletes remove
	Seq     int64 // data sequence number: older files go first
}

// CompactPlan is what to rewrite: data files (by path; nil for none),
// and whether the delete files are rewritten (always, with data).
type CompactPlan struct {
	Data    []string
	Deletes bool
}

// Due reports whether the plan rewrites anything.
func (p CompactPlan) Due() bool { return len(p.Data) > 0 || p.Deletes }

// PlanCompaction chooses what to rewrite among a table's live data files
// and deleteFiles position delete files:
//   - the small files (under 3/4 of TargetBytes) and the files with more
//     than DeleteRatio of their rows deleted, when they and the delete
//     files (which every rewrite merges) are at least MinInputFiles, or
//     any file is entirely deleted, or the live file count exceeds
//     MaxLiveFiles;
//   - otherwise, only the delete files when there are more than
//     MaxDeleteFiles of them.
//
// Candidates go oldest first, up to MaxRewriteBytes. A rewrite of one
// small file with nothing deleted would change nothing: it is not due.
func PlanCompaction(c CompactConfig, files []FileStat, deleteFiles int) CompactPlan {
	if !c.Enabled {
		return CompactPlan{}
	}
	var cands []FileStat
	dead := false
	for _, f := range files {
		small := f.Bytes < c.TargetBytes*3/4
		ratio := 0.0
		if f.Rows > 0 {
			ratio = float64(f.Deleted) / float64(f.Rows)
		}
		if f.Rows > 0 && f.Deleted >= f.Rows {
			dead = true
		}
		if small || ratio > c.DeleteRatio {
			cands = append(cands, f)
		}
	}
	slices.SortStableFunc(cands, func(a, b FileStat) int { return cmp.Compare(a.Seq, b.Seq) })
	var plan CompactPlan
	over := len(files)+deleteFiles > c.MaxLiveFiles
	if len(cands)+deleteFiles >= c.MinInputFiles || dead || (over && len(cands) > 0) || anyHeavy(c, cands) {
		var total int64
		for _, f := range cands {
			if total > 0 && total+f.Bytes > c.MaxRewriteBytes {
				break
			}
			total += f.Bytes
			plan.Data = append(plan.Data, f.Path)
		}
		if len(plan.Data) == 1 && cands[0].Deleted == 0 {
			plan.Data = nil
		}
	}
	plan.Deletes = deleteFiles > 0 && (len(plan.Data) > 0 || deleteFiles > c.MaxDeleteFiles || over)
	return plan
}

// anyHeavy reports whether a candidate is due by its deletes alone.
func anyHeavy(c CompactConfig, cands []FileStat) bool {
	for _, f := range cands {
		if f.Rows > 0 && float64(f.Deleted)/float64(f.Rows) > c.DeleteRatio {
			return true
		}
	}
	return false
}
