package iceberg

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// RepairResult says what Repair found and what it did.
type RepairResult struct {
	// Location is the table's location (its files are under
	// Location/metadata and Location/data).
	Location string
	// Was is the metadata location the catalog held ("" without an entry).
	Was string
	// Newest is the newest valid metadata file: the catalog's entry now
	// (or, for a dry run, would) point at it.
	Newest string
	// Skipped lists newer metadata files that are not valid, with why.
	Skipped []string
	// Changed reports whether the catalog entry was (or would be) changed.
	Changed bool
}

// Repair points a table's catalog entry at the newest valid metadata file
// in the warehouse, for when the catalog and the files disagree: an entry
// lost or pointing at a missing file, or a catalog restored from an older
// copy. A metadata file is valid when it parses, belongs to the table's
// location, and its current snapshot's manifest list and manifests exist.
// Newest means the highest version number (the NNNNN- of the file name),
// then the latest last-updated-ms.
//
// location is the table's location; empty means the location in the
// catalog entry, or else the default <warehouse>/<namespace>.db/<table>.
// Only SQL catalogs (the embedded SQLite file, postgres://) can be
// repaired. Stop the bridge first: Repair does not coordinate with a
// running writer.
//
// The newest file must descend from the one the catalog points at (it
// lists it among its previous files, or has its current snapshot), unless
// that one is missing or invalid or force is set: otherwise the table's
// history forked (commits were made on top of an older catalog, such as a
// re-copy by run --on-stale-table=recopy), and the newest file by number
// is not known to be the right one.
func Repair(ctx context.Context, c CatalogConfig, ident table.Identifier, location string, dryRun, force bool) (RepairResult, error) {
	var res RepairResult
	if len(ident) < 2 {
		return res, fmt.Errorf("table %q: give namespace.table", strings.Join(ident, "."))
	}
	if strings.HasPrefix(c.Catalog, "http://") || strings.HasPrefix(c.Catalog, "https://") {
		return res, errors.New("repair works on SQL catalogs (the embedded SQLite file, postgres://...): a REST catalog keeps its own pointer, use its register-table API")
	}
	cat, err := OpenCatalog(ctx, c)
	if err != nil {
		return res, err
	}
	defer func() { _ = CloseCatalog(cat) }()
	db, dialect, err := openCatalogDB(c)
	if err != nil {
		return res, err
	}
	defer db.Close()
	name := c.Name
	if name == "" {
		name = "pg2iceberg"
	}
	row := catalogRow{db: db, dialect: dialect, catalog: name, namespace: strings.Join(catalog.NamespaceFromIdent(ident), "."), table: catalog.TableNameFromIdent(ident)}
	if res.Was, err = row.metadataLocation(ctx); err != nil {
		return res, err
	}
	switch {
	case location != "":
		res.Location = strings.TrimSuffix(location, "/")
	case strings.LastIndex(res.Was, "/metadata/") > 0:
		res.Location = res.Was[:strings.LastIndex(res.Was, "/metadata/")]
	default:
		wh, err := c.WarehouseURI()
		if err != nil {
			return res, err
		}
		res.Location = wh + "/" + row.namespace + ".db/" + row.table
	}
	props := c.IOProps()
	fsys, err := icebergio.LoadFS(ctx, props, res.Location)
	if err != nil {
		return res, fmt.Errorf("open warehouse at %s: %w", res.Location, err)
	}
	files, err := metadataFiles(fsys, res.Location+"/metadata")
	if err != nil {
		return res, err
	}
	if len(files) == 0 {
		return res, fmt.Errorf("no metadata files under %s/metadata: check the table name and --warehouse", res.Location)
	}
	var newest *table.Table
	newestVersion := -1
	for _, f := range files {
		if newest != nil && f.version != newestVersion {
			break // only a file of the same version can still be newer
		}
		tbl, err := validMetadata(ctx, ident, f.location, res.Location, props, fsys)
		if err != nil {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %v", f.location, err))
			continue
		}
		if newest == nil || tbl.Metadata().LastUpdatedMillis() > newest.Metadata().LastUpdatedMillis() {
			newest, newestVersion = tbl, f.version
		}
	}
	if newest == nil {
		return res, fmt.Errorf("no valid metadata file under %s/metadata:\n  %s", res.Location, strings.Join(res.Skipped, "\n  "))
	}
	res.Newest = newest.MetadataLocation()
	res.Changed = res.Newest != res.Was
	if res.Changed && res.Was != "" && !force {
		if was, err := validMetadata(ctx, ident, res.Was, res.Location, props, fsys); err == nil && !descends(newest, was) {
			return res, fmt.Errorf("the newest metadata file %s does not descend from %s, which the catalog points at: the table's history forked (commits were made on top of an older catalog, for example by run --on-stale-table=recopy, which copied the table again), so the catalog entry is kept. "+
				"If the catalog's branch is the right one there is nothing to do; to take the newest file's branch instead, run repair again with --force", path.Base(res.Newest), path.Base(res.Was))
		}
	}
	if !res.Changed || dryRun {
		return res, nil
	}
	ns := catalog.NamespaceFromIdent(ident)
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return res, fmt.Errorf("create namespace %s: %w", row.namespace, err)
	}
	if err := row.set(ctx, res.Newest, res.Was); err != nil {
		return res, err
	}
	return res, nil
}

// descends reports whether newer's history contains older: older is among
// its previous metadata files, or its current snapshot is one of newer's.
func descends(newer, older *table.Table) bool {
	for e := range newer.Metadata().PreviousFiles() {
		if e.MetadataFile == older.MetadataLocation() {
			return true
		}
	}
	snap := older.CurrentSnapshot()
	return snap == nil || newer.Metadata().SnapshotByID(snap.SnapshotID) != nil
}

type metadataFile struct {
	location string
	version  int
}

// metadataFiles lists dir's NNNNN-*.metadata.json files, newest version
// first.
func metadataFiles(fsys icebergio.IO, dir string) ([]metadataFile, error) {
	lister, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("the file IO of %s cannot list files", dir)
	}
	var out []metadataFile
	err := lister.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() {
			if d.Name() == path.Base(dir) {
				return nil // dir itself
			}
			return fs.SkipDir
		}
		name := d.Name()
		if v, ok := metadataVersion(name); ok {
			out = append(out, metadataFile{location: dir + "/" + name, version: v})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].version != out[j].version {
			return out[i].version > out[j].version
		}
		return out[i].location > out[j].location
	})
	return out, nil
}

// metadataVersion returns the version of a metadata file (the NNNNN of
// .../NNNNN-<uuid>.metadata.json).
func metadataVersion(loc string) (int, bool) {
	name := path.Base(loc)
	if !strings.HasSuffix(name, ".metadata.json") {
		return 0, false
	}
	num, _, ok := strings.Cut(name, "-")
	v, err := strconv.Atoi(num)
	return v, ok && err == nil
}

// validMetadata loads the metadata file at loc and checks that it belongs
// to the table at location and that its current snapshot's files exist.
func validMetadata(ctx context.Context, ident table.Identifier, loc, location string, props map[string]string, fsys icebergio.IO) (*table.Table, error) {
	tbl, err := table.NewFromLocation(ctx, ident, loc, icebergio.LoadFSFunc(props, loc), nil)
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	if got := strings.TrimSuffix(tbl.Location(), "/"); got != location {
		return nil, fmt.Errorf("belongs to the table at %s", got)
	}
	if err := currentFilesExist(tbl, fsys); err != nil {
		return nil, err
	}
	return tbl, nil
}

// currentFilesExist checks that the manifest list and the manifests of a
// table's current snapshot exist.
func currentFilesExist(tbl *table.Table, fsys icebergio.IO) error {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		f, err := fsys.Open(m.FilePath())
		if err != nil {
			return fmt.Errorf("manifest of snapshot %d: %w", snap.SnapshotID, err)
		}
		_ = f.Close()
	}
	return nil
}

// catalogRow is a table's row in a SQL catalog's iceberg_tables.
type catalogRow struct {
	db                        *dbsql.DB
	dialect                   sqlcat.SupportedDialect
	catalog, namespace, table string
}

// bind rewrites ? placeholders as $1, $2... for Postgres.
func (r catalogRow) bind(q string) string {
	if r.dialect != sqlcat.Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, ch := range q {
		if ch == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(ch)
	}
	return b.String()
}

// metadataLocation returns the row's metadata location, "" without a row.
func (r catalogRow) metadataLocation(ctx context.Context) (string, error) {
	var loc dbsql.NullString
	err := r.db.QueryRowContext(ctx, r.bind(`SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`),
		r.catalog, r.namespace, r.table).Scan(&loc)
	if errors.Is(err, dbsql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the catalog entry of %s.%s: %w", r.namespace, r.table, err)
	}
	return loc.String, nil
}

// set points the row at loc, inserting it when missing.
func (r catalogRow) set(ctx context.Context, loc, previous string) error {
	prev := dbsql.NullString{String: previous, Valid: previous != ""}
	res, err := r.db.ExecContext(ctx, r.bind(`UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`),
		loc, prev, r.catalog, r.namespace, r.table)
	if err != nil {
		return fmt.Errorf("update the catalog entry of %s.%s: %w", r.namespace, r.table, err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	// iceberg-go's catalogs have an iceberg_type column; pyiceberg's do not.
	q := `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type) VALUES (?, ?, ?, ?, NULL, 'TABLE')`
	if _, err := r.db.ExecContext(ctx, `SELECT iceberg_type FROM iceberg_tables WHERE 1 = 0`); err != nil {
		q = `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)`
	}
	if _, err := r.db.ExecContext(ctx, r.bind(q), r.catalog, r.namespace, r.table, loc); err != nil {
		return fmt.Errorf("insert the catalog entry of %s.%s: %w", r.namespace, r.table, err)
	}
	return nil
}
