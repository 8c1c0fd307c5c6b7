package iceberg

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Hot/cold tiering of a mirror or changelog: a rewrite, like compaction,
// of the data files whose rows are all older than the table's threshold
// (tiering.PlanTiering, on the upper bounds of the tiering column in the
// manifests), whose new files go under the table's cold root instead of
// its data/ directory. Everything else is compaction's: the rewrite drops
// the rows deleted as of the snapshot it read and says where each kept
// row went; the stream installs it between flushes, moving the deletes
// committed meanwhile to the rows' new positions and the key index with
// Remap (compact_install.go); pg2iceberg maintain commits it outside the
// stream (TierOnce). So updates and deletes of cold rows apply exactly,
// and every engine follows the metadata to the cold files. The key index
// and the metadata stay in the table's location, and so do recent files.
// A later compaction of cold files writes its output beside them, in the
// cold root (fileRoot).

// PropTiering marks a tiering snapshot: the data files it moved cold.
const PropTiering = "pg2iceberg.tiering"

// tierCheckEvery is how often the stream asks whether files are due to
// move cold (reading the manifests, which manifest rewrites keep few):
// every 10 s, and four times per threshold for a shorter one.
func tierCheckEvery(c tiering.TierConfig) time.Duration {
	return min(10*time.Second, max(c.ColdAfter/4, time.Second))
}

// fileRoot splits a data file's path into its location (root: "" for
// the table's own, else the directory above its data/, a cold root) and
// its partition directory under data/.
func fileRoot(tbl *table.Table, p string) (root, dir string) {
	if strings.HasPrefix(p, tbl.Location()+"/data/") {
		return "", partitionDir(tbl, p)
	}
	i := strings.LastIndex(p, "/data/")
	if i < 0 {
		return "", ""
	}
	rest := p[i+len("/data/"):]
	if j := strings.LastIndex(rest, "/"); j >= 0 {
		return p[:i], rest[:j]
	}
	return p[:i], ""
}

// byRoot groups paths by location and partition directory, in order of
// first appearance.
func byRoot(tbl *table.Table, paths []string) []rewriteGroup {
	var groups []rewriteGroup
	at := make(map[[2]string]int)
	for _, p := range paths {
		root, dir := fileRoot(tbl, p)
		k := [2]string{root, dir}
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, rewriteGroup{root: root, dir: dir})
		}
		groups[i].paths = append(groups[i].paths, p)
	}
	return groups
}

// rootedDataPath is a new data file's path under root's data/ ("" root:
// the table's, see dataPath).
func rootedDataPath(tbl *table.Table, root, dir string) string {
	if root == "" {
		return dataPath(tbl, dir)
	}
	p := root + "/data/"
	if dir != "" {
		p += dir + "/"
	}
	return p + uuid.NewString() + ".parquet"
}

// TierConfigOf returns tbl's tiering policy: its properties, overridden by a
// configuration file's tiering: block (p, may be nil). A bad property is
// an error. A changelog is tiered by its commit_ts.
func TierConfigOf(tbl *table.Table, p *mapping.TieringPolicy) (tiering.TierConfig, error) {
	c, err := tiering.TierConfigOf(tbl.Properties())
	if err != nil {
		return c, fmt.Errorf("%s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	if p != nil {
		c = c.With(p.Column, p.ColdAfter, p.ColdLocation, p.StorageClass)
	}
	// A changelog row's age is its commit time (the changelog's partition
	// column, so its days move cold whole), whatever column the mirror's
	// policy names.
	if id := tbl.Identifier(); c.Column != "" && len(id) > 0 && strings.HasSuffix(id[len(id)-1], ChangelogSuffix) {
		c.Column = colCommitTS
	}
	// A directory beside a local warehouse is named as its files are.
	if strings.HasPrefix(c.ColdLocation, "/") && strings.HasPrefix(tbl.Location(), "file://") {
		c.ColdLocation = "file://" + c.ColdLocation
	}
	return c, nil
}

// upperBound returns a data file's upper bound of the field (a timestamp,
// timestamptz or date), false when its manifest entry has none.
func upperBound(df icego.DataFile, f icego.NestedField) (time.Time, bool) {
	b, ok := df.UpperBoundValues()[f.ID]
	if !ok {
		return time.Time{}, false
	}
	switch f.Type.(type) {
	case icego.TimestampType, icego.TimestampTzType:
		if len(b) != 8 {
			return time.Time{}, false
		}
		return time.UnixMicro(int64(binary.LittleEndian.Uint64(b))), true
	case icego.DateType:
		if len(b) != 4 {
			return time.Time{}, false
		}
		return time.Unix(int64(int32(binary.LittleEndian.Uint32(b)))*86400, 0), true
	}
	return time.Time{}, false
}

// planTier reads base's files and deletes and returns the files due to
// move cold under c (nil: none), grouped by partition directory.
func planTier(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table, c tiering.TierConfig, now time.Time) (*rewrite, []rewriteGroup, error) {
	name := strings.Join(base.Identifier(), ".")
	f, ok := base.Schema().FindFieldByName(c.Column)
	if !ok {
		return nil, nil, fmt.Errorf("%s: tiering column %q is not a column of the table", name, c.Column)
	}
	switch f.Type.(type) {
	case icego.TimestampType, icego.TimestampTzType, icego.DateType:
	default:
		return nil, nil, fmt.Errorf("%s: tiering column %q is %s; use a timestamp, timestamptz or date column", name, c.Column, f.Type)
	}
	data, _, deletes, err := snapshotFiles(base, fs)
	if err != nil {
		return nil, nil, err
	}
	root := c.ColdRoot(base.Identifier(), base.Location())
	files := make([]tiering.TierFile, 0, len(data))
	for _, df := range data {
		upper, ok := upperBound(df, f)
		files = append(files, tiering.TierFile{Path: df.FilePath(), Upper: upper, Bound: ok})
	}
	due := tiering.PlanTiering(c, root, files, now)
	if len(due) == 0 {
		return nil, nil, nil
	}
	if len(deletes) > 0 && !base.Spec().IsUnpartitioned() {
		return nil, nil, fmt.Errorf("%s: tiering of a partitioned table with deletes is not supported", name)
	}
	r := &rewrite{data: len(data), oldDeletes: deletes, deleted: make(map[string]map[int64]bool), files: make(map[string]icego.DataFile), tier: true}
	for _, df := range data {
		r.files[df.FilePath()] = df
	}
	for _, df := range deletes {
		if err := readPosDeletes(ctx, fs, df, r.deleted); err != nil {
			return nil, nil, err
		}
	}
	groups := byRoot(base, due)
	for i := range groups {
		groups[i].root, groups[i].class = root, c.StorageClass
	}
	return r, groups, nil
}

// tierState is a table's tiering bookkeeping (the stream's).
type tierState struct {
	next   time.Time // when to ask again whether files are due
	warned string    // the last policy error logged (logged once)
	// Bytes of live data files per tier as of the last check (set by the
	// job's goroutine, read by status); checked: they are known.
	hot, cold atomic.Int64
	checked   atomic.Bool
}

// maybeTier starts a tiering job of t (rel's mirror or changelog) when
// its policy is on and the last check is old enough; the job finds the
// files due, if any, and counts the bytes per tier.
func (t *icebergTable) maybeTier(s *Sink, rel *decode.Relation, cc tiering.CompactConfig) {
	if t.compact.job != nil || t.tbl.CurrentSnapshot() == nil || time.Now().Before(t.compact.tier.next) {
		return
	}
	c, err := TierConfigOf(t.tbl, s.cfg.Rules.Policies(rel.QualifiedName()).Tiering)
	if err == nil && !c.Enabled() {
		return
	}
	t.compact.tier.next = time.Now().Add(tierCheckEvery(c))
	if err != nil {
		if msg := err.Error(); msg != t.compact.tier.warned {
			t.compact.tier.warned = msg
			s.log.Warn("tiering is off for the table until its policy is fixed", "table", t.name(), "error", err)
		}
		return
	}
	st := &t.compact.tier
	t.startCompaction(cc, func(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table) (*rewrite, []rewriteGroup, error) {
		r, groups, err := planTier(ctx, fs, base, c, time.Now())
		if err != nil {
			return nil, nil, err
		}
		hot, cold, err := TierBytes(base, fs)
		if err == nil {
			st.hot.Store(hot)
			st.cold.Store(cold)
			st.checked.Store(true)
		}
		return r, groups, err
	})
}

// tiered counts an installed rewrite that moved files cold.
func (t *icebergTable) tiered(s *Sink, r *rewrite) {
	if !r.tier {
		return
	}
	s.stats.Tierings.Add(1)
	s.stats.BytesTiered.Add(r.bytesRead)
	st := &t.compact.tier
	st.hot.Add(-r.bytesRead)
	st.cold.Add(r.written)
	st.next = time.Time{} // more may be due: ask again at the next flush
	s.log.Info("tiering installed", "table", t.name(), "files_moved", len(r.oldData), "bytes_moved", r.bytesRead, "cold_files", len(r.newData))
}

// TierBytes returns the bytes of tbl's live data files in its own
// location (hot) and outside it (cold: moved by tiering), from its
// current snapshot's manifests.
func TierBytes(tbl *table.Table, fs icebergio.IO) (hot, cold int64, err error) {
	data, _, _, err := snapshotFiles(tbl, fs)
	if err != nil {
		return 0, 0, err
	}
	for _, df := range data {
		if !strings.HasPrefix(df.FilePath(), tbl.Location()+"/") {
			cold += df.FileSizeBytes()
		} else {
			hot += df.FileSizeBytes()
		}
	}
	return hot, cold, nil
}
