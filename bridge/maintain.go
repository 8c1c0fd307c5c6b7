package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// OrphanSafetyAge is the shortest orphan age maintain accepts while a
// bridge holds a fresh writer lease on the warehouse: a running bridge
// writes a flush's files, a copy chunk's or a speculated large
// transaction's before the commit that names them, and none of those stays
// uncommitted for a day.
const OrphanSafetyAge = 24 * time.Hour

// maintainAttempts is how often a maintenance commit that conflicts with
// another writer's is tried (the table reloaded each time).
const maintainAttempts = 4

// MaintainConfig configures Maintain.
type MaintainConfig struct {
	// Catalog is the warehouse and its catalog.
	Catalog iceberg.CatalogConfig
	// Table is the one Iceberg table to maintain (namespace.table); "":
	// every table the bridge writes.
	Table string
	// OrphansOlderThan is the age past which a file no metadata references
	// is removed (nil: tiering.DefaultOrphanAge).
	OrphansOlderThan *time.Duration
	// DryRun changes nothing and says what would be done.
	DryRun bool
	// Retention is the retention of tables Rules gives none (zero: the
	// tables' properties).
	Retention tiering.Retention
	// Rules is the configuration file (nil: none): its retention blocks.
	Rules *mapping.Overrides
	// Out receives the report, a line per table and step.
	Out io.Writer
	// Log receives warnings (nil: slog.Default()).
	Log *slog.Logger
}

// TableMaintenance is what Maintain did to one table.
type TableMaintenance struct {
	Table                   string
	FilesBefore, FilesAfter int
	BytesBefore, BytesAfter int64
	Expired                 int
	Compaction              iceberg.CompactReport
	CompactionSkipped       string                // why compaction did not run ("": it did, see Compaction.Skipped)
	Tiering                 iceberg.CompactReport // the files moved cold (FilesRewritten)
	Manifests               tiering.ManifestRewrite
	ManifestsSkipped        string // why the rewrite did not run ("": it did)
	Orphans                 tiering.Orphans
	Took                    time.Duration
}

// Maintain runs the lake maintenance once (pg2iceberg maintain): on every
// table the bridge writes (or cfg.Table), snapshot expiry, manifest
// rewrite and orphan-file cleanup, and reports each table to cfg.Out. It
// works with the bridge stopped; while a bridge holds a fresh writer lease
// on the warehouse it refuses an orphan age under OrphanSafetyAge and
// leaves the manifest rewrite to that bridge (see maintainable). It starts
// no goroutine.
func Maintain(ctx context.Context, cfg MaintainConfig) ([]TableMaintenance, error) {
	log := logOr(cfg.Log)
	age := tiering.DefaultOrphanAge
	if cfg.OrphansOlderThan != nil {
		age = *cfg.OrphansOlderThan
	}
	if age < 0 {
		return nil, fmt.Errorf("--orphans-older-than %s is negative: give 0s or more", age)
	}
	running, err := writersRunning(ctx, cfg.Catalog, age, cfg.Out, log)
	if err != nil {
		return nil, err
	}
	cat, err := iceberg.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return nil, err
	}
	defer closeCatalog(cat, log)
	idents, err := maintainable(ctx, cat, cfg.Table)
	if err != nil {
		return nil, err
	}
	var out []TableMaintenance
	var errs []error
	for i, ident := range idents {
		name := strings.Join(ident, ".")
		fmt.Fprintf(cfg.Out, "[%d/%d] %s\n", i+1, len(idents), name)
		m, err := maintainTable(ctx, cat, ident, cfg, age, running)
		if err != nil {
			fmt.Fprintf(cfg.Out, "  failed: %v\n", err)
			errs = append(errs, err)
		}
		if m != nil {
			printMaintenance(cfg.Out, *m, cfg.DryRun)
			out = append(out, *m)
		}
	}
	return out, errors.Join(errs...)
}

// writersRunning reads the warehouse's writer leases: it reports whether a
// bridge writes the warehouse now (a fresh lease), says which, and refuses
// an orphan age shorter than OrphanSafetyAge while one does. A stale lease
// is a bridge killed: noted, and taken for stopped.
func writersRunning(ctx context.Context, c iceberg.CatalogConfig, age time.Duration, out io.Writer, log *slog.Logger) (bool, error) {
	fsys, wh, err := warehouseFS(ctx, c)
	if err != nil {
		return false, err
	}
	leases, err := tiering.ReadLeases(ctx, fsys, wh)
	if err != nil {
		return false, err
	}
	now, running := time.Now(), false
	for _, l := range leases {
		ago := now.Sub(l.Refreshed).Round(time.Second)
		if !l.Fresh(now) {
			log.Warn("writer lease is stale; taking its bridge for stopped", "slot", l.Slot, "host", l.Host, "pid", l.PID, "refreshed_ago", ago)
			continue
		}
		running = true
		if age < OrphanSafetyAge {
			return true, fmt.Errorf("a bridge is writing this warehouse (slot %s, host %s, pid %d, lease refreshed %s ago): --orphans-older-than %s could delete the files of a commit still in flight; give --orphans-older-than %s or more, or stop the bridge first (it removes its lease when it stops; a killed bridge's lease goes stale after %s)",
				l.Slot, l.Host, l.PID, ago, age, OrphanSafetyAge, tiering.LeaseTTL)
		}
		fmt.Fprintf(out, "a bridge is writing this warehouse (slot %s, host %s, pid %d): it rewrites its own manifests, so maintain only expires snapshots and removes orphans older than %s\n", l.Slot, l.Host, l.PID, age)
	}
	return running, nil
}

// maintainable lists the tables to maintain: only (namespace.table) when
// given, which must be one the bridge writes, else every table of the
// catalog that the bridge writes (see bridgeWritten).
func maintainable(ctx context.Context, cat catalog.Catalog, only string) ([]table.Identifier, error) {
	if only != "" {
		ident := strings.Split(only, ".")
		if len(ident) < 2 {
			return nil, fmt.Errorf("--table %q: name the Iceberg table as namespace.table", only)
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, fmt.Errorf("--table %s: %w", only, err)
		}
		if !bridgeWritten(tbl) {
			return nil, fmt.Errorf("--table %s: the bridge does not write this table (it has no %s property and no snapshot of the bridge's); maintain only touches the bridge's tables", only, iceberg.PropSourceOID)
		}
		return []table.Identifier{ident}, nil
	}
	namespaces, err := cat.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var out []table.Identifier
	for _, ns := range namespaces {
		for ident, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				return nil, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err)
			}
			if bridgeWritten(tbl) {
				out = append(out, ident)
			}
		}
	}
	slices.SortFunc(out, func(a, b table.Identifier) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	return out, nil
}

// bridgeWritten reports whether the bridge writes tbl: it records its
// source table, or a snapshot carries the bridge's source identity.
func bridgeWritten(tbl *table.Table) bool {
	if _, ok := tbl.Properties()[iceberg.PropSourceOID]; ok {
		return true
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[iceberg.PropSource] != "" {
			return true
		}
	}
	return false
}

// maintainTable runs each step on one table. A step that fails stops the
// table's later steps (the orphans of a table whose expiry failed are
// still theirs to find next time).
func maintainTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, cfg MaintainConfig, age time.Duration, running bool) (*TableMaintenance, error) {
	start := time.Now()
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	m := &TableMaintenance{Table: name}
	defer func() { m.Took = time.Since(start) }()
	if m.FilesBefore, m.BytesBefore, err = footprint(ctx, tbl); err != nil {
		return nil, err
	}
	// Compaction first, so that the manifest rewrite, the expiry and the
	// orphan cleanup tidy up after it. Beside a running bridge it is left
	// to the bridge, which compacts its tables itself (a rewrite from here
	// would make it rebuild the mirror's key index and replay its batch).
	if running {
		m.CompactionSkipped = "the running bridge compacts its tables"
	} else {
		if m.Compaction, err = iceberg.CompactOnce(ctx, cat, ident, iceberg.CompactOptions{DryRun: cfg.DryRun}); err != nil {
			return m, err
		}
		if m.Tiering, err = iceberg.TierOnce(ctx, cat, ident, tieringRules(cfg, tbl), cfg.DryRun); err != nil {
			return m, err
		}
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return m, fmt.Errorf("load table %s: %w", name, err)
		}
	}
	if tbl, err = expireOnce(ctx, cat, tbl, cfg, m); err != nil {
		return m, err
	}
	if running {
		m.ManifestsSkipped = "the running bridge rewrites them"
	} else if tbl, err = retryCommit(ctx, cat, tbl, func(t *table.Table) (*table.Table, error) {
		out, r, err := tiering.TidyManifests(ctx, cat, t, 0, cfg.DryRun)
		m.Manifests = r
		return out, err
	}); err != nil {
		return m, err
	}
	opts := tiering.OrphanOptions{OlderThan: age, Keep: []string{keyindex.FileName}, DryRun: cfg.DryRun}
	if c, err := iceberg.TierConfigOf(tbl, tieringRules(cfg, tbl)); err == nil && c.Enabled() {
		opts.Roots = []string{c.ColdRoot(tbl.Identifier(), tbl.Location())}
	}
	if m.Orphans, err = tiering.RemoveOrphans(ctx, tbl, opts); err != nil {
		return m, err
	}
	if m.FilesAfter, m.BytesAfter, err = footprint(ctx, tbl); err != nil {
		return m, err
	}
	return m, nil
}

// tieringRules is the configuration file's tiering: block for tbl's
// source table (nil: none).
func tieringRules(cfg MaintainConfig, tbl *table.Table) *mapping.TieringPolicy {
	src := sourceTableOf(tbl)
	if src == "" || cfg.Rules == nil {
		return nil
	}
	return cfg.Rules.Policies(src).Tiering
}

// expireOnce expires tbl's snapshots by its retention (or, dry, counts
// those due), into m.
func expireOnce(ctx context.Context, cat catalog.Catalog, tbl *table.Table, cfg MaintainConfig, m *TableMaintenance) (*table.Table, error) {
	r := cfg.Retention
	if src := sourceTableOf(tbl); src != "" {
		p := cfg.Rules.Policies(src).Retention
		r = tiering.Retention{MaxSnapshotAge: p.MaxSnapshotAge, MinSnapshots: p.MinSnapshots}.Or(cfg.Retention)
	}
	if cfg.DryRun {
		n, err := tiering.ExpiryDue(tbl, r)
		m.Expired = n
		return tbl, err
	}
	// Files of the expired snapshots that could not be deleted are no
	// conflict: the expiry stands, and the error is reported after it.
	var leftErr error
	out, err := retryCommit(ctx, cat, tbl, func(t *table.Table) (*table.Table, error) {
		out, left, err := tiering.ExpireSnapshots(ctx, t, r)
		if err != nil {
			return nil, err
		}
		m.Expired = len(t.Metadata().Snapshots()) - len(out.Metadata().Snapshots())
		if left != nil {
			leftErr = left.Run(ctx, out)
		}
		return out, nil
	})
	if err != nil {
		return out, err
	}
	return out, leftErr
}

// sourceTableOf is the source table (schema.table) a mirror or changelog
// belongs to by its name ("" for a table whose name is not one's).
func sourceTableOf(tbl *table.Table) string {
	ident := tbl.Identifier()
	if len(ident) != 2 {
		return ""
	}
	return ident[0] + "." + strings.TrimSuffix(ident[1], iceberg.ChangelogSuffix)
}

// retryCommit runs step, a maintenance commit, on tbl; when it fails and
// the table, reloaded, has moved on (another writer's commit came first:
// the SQL catalog's failed requirements are no table.ErrCommitFailed, so
// the metadata location decides), it runs again on the reloaded table, up
// to maintainAttempts times. It returns the table after the step; any
// other failure is reported, never a partial commit.
func retryCommit(ctx context.Context, cat catalog.Catalog, tbl *table.Table, step func(*table.Table) (*table.Table, error)) (*table.Table, error) {
	var err error
	for range maintainAttempts {
		var out *table.Table
		if out, err = step(tbl); err == nil {
			return out, nil
		}
		now, lerr := cat.LoadTable(ctx, tbl.Identifier())
		if lerr != nil {
			return tbl, fmt.Errorf("%w (and reloading %s failed: %w)", err, strings.Join(tbl.Identifier(), "."), lerr)
		}
		if now.MetadataLocation() == tbl.MetadataLocation() && !errors.Is(err, table.ErrCommitFailed) {
			return tbl, err // not a conflict
		}
		tbl = now
	}
	return tbl, fmt.Errorf("%w (another writer committed first %d times: run maintain again)", err, maintainAttempts)
}

// footprint counts the files under tbl's location and their bytes.
func footprint(ctx context.Context, tbl *table.Table) (files int, bytes int64, err error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("file IO of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	lfs, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return 0, 0, fmt.Errorf("list the files of %s: its file IO %T cannot list", strings.Join(tbl.Identifier(), "."), fsys)
	}
	err = lfs.WalkDir(tbl.Location(), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return ctx.Err()
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list the files of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	return files, bytes, nil
}

// printMaintenance writes what was done to one table (or, dry, would be).
func printMaintenance(w io.Writer, m TableMaintenance, dry bool) {
	if dry {
		fmt.Fprintf(w, "  snapshots: would expire %d\n", m.Expired)
	} else {
		fmt.Fprintf(w, "  snapshots: expired %d\n", m.Expired)
	}
	printCompaction(w, m, dry)
	printTiering(w, m.Tiering, dry)
	switch {
	case m.ManifestsSkipped != "":
		fmt.Fprintf(w, "  manifests: not rewritten: %s\n", m.ManifestsSkipped)
	case m.Manifests.Rewritten && dry:
		fmt.Fprintf(w, "  manifests: would rewrite %d data and %d delete manifests (past %d)\n", m.Manifests.Before, m.Manifests.Deletes, tiering.MaxManifests)
	case m.Manifests.Rewritten:
		fmt.Fprintf(w, "  manifests: rewrote %d data and %d delete manifests into %d and %d\n", m.Manifests.Before, m.Manifests.Deletes, m.Manifests.After, m.Manifests.DeletesAfter)
	default:
		fmt.Fprintf(w, "  manifests: %d data and %d delete manifests, no rewrite due\n", m.Manifests.Before, m.Manifests.Deletes)
	}
	if dry {
		fmt.Fprintf(w, "  orphans: would remove %d (%s)\n", m.Orphans.Found, byteSize(m.Orphans.FoundBytes))
	} else {
		fmt.Fprintf(w, "  orphans: %d found (%s), removed %d (%s)\n", m.Orphans.Found, byteSize(m.Orphans.FoundBytes), m.Orphans.Removed, byteSize(m.Orphans.RemovedBytes))
	}
	fmt.Fprintf(w, "  files: %d (%s) before, %d (%s) after; took %s\n", m.FilesBefore, byteSize(m.BytesBefore), m.FilesAfter, byteSize(m.BytesAfter), m.Took.Round(time.Millisecond))
}

// printCompaction writes the compaction line of a table's maintenance.
func printCompaction(w io.Writer, m TableMaintenance, dry bool) {
	c := m.Compaction
	switch {
	case m.CompactionSkipped != "":
		fmt.Fprintf(w, "  compaction: not run: %s\n", m.CompactionSkipped)
	case c.Skipped != "":
		fmt.Fprintf(w, "  compaction: %d data and %d delete files, %s\n", c.DataFilesBefore, c.DeleteFilesBefore, c.Skipped)
	case dry:
		fmt.Fprintf(w, "  compaction: would rewrite %d of %d data files (%s) and %d delete files\n", c.FilesRewritten, c.DataFilesBefore, byteSize(c.BytesRewritten), c.DeleteFilesBefore)
	default:
		fmt.Fprintf(w, "  compaction: rewrote %d data files (%s) into %d (%s); live files %d data + %d delete before, %d + %d after; took %s\n",
			c.FilesRewritten, byteSize(c.BytesRewritten), c.FilesWritten, byteSize(c.BytesWritten), c.DataFilesBefore, c.DeleteFilesBefore, c.DataFilesAfter, c.DeleteFilesAfter, c.Elapsed.Round(time.Millisecond))
	}
}

// printTiering writes the tiering line of a table's maintenance (none
// when tiering is off or did not run).
func printTiering(w io.Writer, t iceberg.CompactReport, dry bool) {
	switch {
	case t.Table == "" || t.Skipped == "tiering is off":
	case t.Skipped != "":
		fmt.Fprintf(w, "  tiering: %s\n", t.Skipped)
	case dry:
		fmt.Fprintf(w, "  tiering: would move %d data files (%s) to the cold location\n", t.FilesRewritten, byteSize(t.BytesRewritten))
	default:
		fmt.Fprintf(w, "  tiering: moved %d data files (%s) into %d (%s) under the cold location; took %s\n", t.FilesRewritten, byteSize(t.BytesRewritten), t.FilesWritten, byteSize(t.BytesWritten), t.Elapsed.Round(time.Millisecond))
	}
}

// byteSize is n in B, KiB, MiB or GiB.
func byteSize(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}
