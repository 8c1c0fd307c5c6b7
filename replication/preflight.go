package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/jackc/pgx/v5"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// PreflightError is a problem found before anything is written, with the
// SQL that fixes it.
type PreflightError struct {
	Problem string
	Fix     string
}

func (e *PreflightError) Error() string {
	if e.Fix == "" {
		return e.Problem
	}
	return e.Problem + "\n  fix: " + e.Fix
}

// Preflight checks that the source can be replicated and returns the
// publication's tables, with their columns in pgoutput's order and their
// mirror keys (primary key, or the replica identity index).
//
// overrides (from the configuration file, may be nil) are attached to the
// columns they match.
func Preflight(ctx context.Context, conn *pgx.Conn, publication string, overrides *mapping.Overrides) ([]*decode.Relation, error) {
	rels, problems, err := preflight(ctx, conn, publication, overrides)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(flatten(problems)...); err != nil {
		return nil, err
	}
	return rels, nil
}

// problems is what preflight found: the source's (all) and each table's,
// by table (tables, in the order of the tables found).
type problems struct {
	all    []error
	tables []*UnmirrorableError
}

// flatten returns every problem, the source's then the tables'.
func flatten(p problems) []error {
	errs := p.all
	for _, t := range p.tables {
		errs = append(errs, t.Err)
	}
	return errs
}

// preflight is Preflight's checks: the tables found (nil when the
// publication does not exist), every problem, or an error that stopped the
// checks.
func preflight(ctx context.Context, conn *pgx.Conn, publication string, overrides *mapping.Overrides) ([]*decode.Relation, problems, error) {
	var walLevel string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&walLevel); err != nil {
		return nil, problems{}, fmt.Errorf("read wal_level: %w", err)
	}
	var errs []error
	if walLevel != "logical" {
		errs = append(errs, &PreflightError{
			Problem: fmt.Sprintf("wal_level is %q, logical replication needs \"logical\"", walLevel),
			Fix:     "ALTER SYSTEM SET wal_level = logical; -- then restart PostgreSQL",
		})
	}
	var user string
	var canReplicate bool
	if err := conn.QueryRow(ctx, "SELECT current_user, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &canReplicate); err != nil {
		return nil, problems{}, fmt.Errorf("read role attributes: %w", err)
	}
	if !canReplicate {
		errs = append(errs, &PreflightError{
			Problem: fmt.Sprintf("role %s may not start replication", user),
			Fix:     fmt.Sprintf("ALTER ROLE %s REPLICATION;", decode.QuoteIdent(user)),
		})
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", publication).Scan(&exists); err != nil {
		return nil, problems{}, fmt.Errorf("look up publication: %w", err)
	}
	if !exists {
		errs = append(errs, &PreflightError{
			Problem: fmt.Sprintf("publication %q does not exist in this database", publication),
			Fix:     fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE schema.table, ...;  -- or FOR ALL TABLES", decode.QuoteIdent(publication)),
		})
		return nil, problems{all: errs}, nil
	}
	rels, err := publishedTables(ctx, conn, publication, 0)
	if err != nil {
		return nil, problems{}, err
	}
	if len(rels) == 0 {
		errs = append(errs, &PreflightError{
			Problem: fmt.Sprintf("publication %q publishes no tables", publication),
			Fix:     fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE schema.table;", decode.QuoteIdent(publication)),
		})
	}
	var found problems
	for _, rel := range rels {
		tableErrs, err := checkTable(ctx, conn, publication, user, rel, overrides)
		if err != nil {
			return nil, problems{}, err
		}
		if len(tableErrs) > 0 {
			found.tables = append(found.tables, &UnmirrorableError{Table: rel.QualifiedName(), Rel: rel, Err: errors.Join(tableErrs...)})
		}
	}
	found.all = errs
	return rels, found, nil
}

// checkTable returns what keeps one published table from being mirrored:
// the bridge's role (user) cannot read it, a column's type has no Iceberg
// form, a key column is not a single value, a rule excludes a key column.
// overrides (may be nil) are attached to the columns they match. err is a
// failure to check.
func checkTable(ctx context.Context, conn *pgx.Conn, publication, user string, rel *decode.Relation, overrides *mapping.Overrides) ([]error, error) {
	var errs []error
	var canRead bool
	var owner string
	if err := conn.QueryRow(ctx, "SELECT has_table_privilege($1::oid, 'SELECT'), pg_get_userbyid(relowner) FROM pg_class WHERE oid = $1", rel.ID).Scan(&canRead, &owner); err != nil {
		return nil, fmt.Errorf("check privileges on %s: %w", rel.QualifiedName(), err)
	}
	if !canRead {
		// Tables created later in the schema (FOR ALL TABLES, FOR TABLES
		// IN SCHEMA) need the default privileges of the role creating them.
		errs = append(errs, &PreflightError{
			Problem: fmt.Sprintf("role %s cannot read %s", user, rel.QualifiedName()),
			Fix: fmt.Sprintf("GRANT SELECT ON %s.%s TO %s;\n  and for the tables %s creates later: ALTER DEFAULT PRIVILEGES FOR ROLE %s IN SCHEMA %s GRANT SELECT ON TABLES TO %s;",
				decode.QuoteIdent(rel.Schema), decode.QuoteIdent(rel.Name), decode.QuoteIdent(user),
				owner, decode.QuoteIdent(owner), decode.QuoteIdent(rel.Schema), decode.QuoteIdent(user)),
		})
	}
	var unmapped []*mapping.UnsupportedTypeError
	for i := range rel.Columns {
		rel.Columns[i].Rule = overrides.Match(rel.QualifiedName(), rel.Columns[i].Name, rel.Columns[i].TypeName)
		c := rel.Columns[i]
		if c.Excluded() {
			if c.Key {
				errs = append(errs, fmt.Errorf("%s.%s is a key column and cannot be excluded by a rule", rel.QualifiedName(), c.Name))
			}
			continue
		}
		typ, err := mapping.For(rel.QualifiedName(), c)
		if err != nil {
			var ute *mapping.UnsupportedTypeError
			if errors.As(err, &ute) {
				unmapped = append(unmapped, ute)
			}
			errs = append(errs, err)
			continue
		}
		if _, primitive := typ.(icego.PrimitiveType); c.Key && !primitive {
			errs = append(errs, &PreflightError{
				Problem: fmt.Sprintf("%s.%s is part of the key the mirror is kept by, but its type %s becomes %s in Iceberg, and a key must be a single value", rel.QualifiedName(), c.Name, c.TypeName, typ),
				Fix:     fmt.Sprintf("ALTER TABLE %s.%s REPLICA IDENTITY USING INDEX <a unique index on other columns>;  -- or add a primary key without this column, or leave the table out of the publication", decode.QuoteIdent(rel.Schema), decode.QuoteIdent(rel.Name)),
			})
		}
		if !rel.WholeRow {
			continue
		}
		if why := mapping.WholeRowProblem(rel.QualifiedName(), c); why != "" {
			// Rows that cannot be compared: a changelog only.
			rel.WholeRow = false
			rel.KeyNote = fmt.Sprintf("REPLICA IDENTITY FULL without a usable primary key keeps the mirror by the whole row, and %s, so rows cannot be compared: add a primary key (not deferrable), or run ALTER TABLE %s REPLICA IDENTITY USING INDEX <a unique index>", why, rel.QuotedName())
		}
	}
	if len(unmapped) > 0 {
		fix, err := columnListFix(ctx, conn, publication, rel, unmapped)
		if err != nil {
			return nil, err
		}
		for _, ute := range unmapped {
			ute.Fix = fix
		}
	}
	return errs, nil
}

// columnListFix returns the statements that publish rel without its
// unmapped columns (keeping its row filter), or "" when the table is not
// in the publication by name (FOR ALL TABLES, TABLES IN SCHEMA: no column
// list possible) or has no other column.
func columnListFix(ctx context.Context, conn *pgx.Conn, publication string, rel *decode.Relation, unmapped []*mapping.UnsupportedTypeError) (string, error) {
	var named bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
		WHERE p.pubname = $1 AND pr.prrelid = $2)`, publication, rel.ID).Scan(&named); err != nil {
		return "", fmt.Errorf("look up %s in publication %q: %w", rel.QualifiedName(), publication, err)
	}
	var others []string
	for _, c := range rel.Columns {
		if !slices.ContainsFunc(unmapped, func(u *mapping.UnsupportedTypeError) bool { return u.Column == c.Name }) {
			others = append(others, decode.QuoteIdent(c.Name))
		}
	}
	if !named || len(others) == 0 {
		return "", nil
	}
	pub, tbl := decode.QuoteIdent(publication), decode.QuoteIdent(rel.Schema)+"."+decode.QuoteIdent(rel.Name)
	where := ""
	if rel.RowFilter != "" {
		where = " WHERE (" + rel.RowFilter + ")"
	}
	return fmt.Sprintf("BEGIN; ALTER PUBLICATION %s DROP TABLE %s; ALTER PUBLICATION %s ADD TABLE %s (%s)%s; COMMIT;",
		pub, tbl, pub, tbl, strings.Join(others, ", "), where), nil
}

// publishedTables lists the publication's tables (only relID's, unless it
// is 0) with their published columns in attnum order (pgoutput's order).
// The DDL capture's schema is left out: a FOR ALL TABLES publication holds
// its key.
func publishedTables(ctx context.Context, conn *pgx.Conn, publication string, relID uint32) ([]*decode.Relation, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.oid, pt.schemaname, pt.tablename, c.relreplident, pt.attnames, COALESCE(pt.rowfilter, ''),
		       EXISTS (SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
		               WHERE p.pubname = pt.pubname AND pr.prrelid = c.oid AND pr.prattrs IS NOT NULL)
		FROM pg_publication_tables pt
		JOIN pg_namespace n ON n.nspname = pt.schemaname
		JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
		WHERE pt.pubname = $1 AND pt.schemaname <> $2 AND ($3::oid = 0 OR c.oid = $3::oid)
		ORDER BY 2, 3`, publication, CaptureSchema, relID)
	if err != nil {
		return nil, fmt.Errorf("list tables of publication %q: %w", publication, err)
	}
	type pub struct {
		rel   *decode.Relation
		names []string
	}
	var pubs []pub
	for rows.Next() {
		var p pub
		p.rel = &decode.Relation{}
		var ident string
		if err := rows.Scan(&p.rel.ID, &p.rel.Schema, &p.rel.Name, &ident, &p.names, &p.rel.RowFilter, &p.rel.ColumnList); err != nil {
			return nil, fmt.Errorf("list tables of publication %q: %w", publication, err)
		}
		p.rel.ReplicaIdentity = ident[0]
		pubs = append(pubs, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables of publication %q: %w", publication, err)
	}
	var out []*decode.Relation
	for _, p := range pubs {
		if err := loadColumns(ctx, conn, p.rel, p.names); err != nil {
			return nil, err
		}
		out = append(out, p.rel)
	}
	return out, nil
}

// loadColumns fills rel's columns and marks its mirror key: the primary key,
// else the replica identity index, else (REPLICA IDENTITY FULL) every column.
func loadColumns(ctx context.Context, conn *pgx.Conn, rel *decode.Relation, published []string) error {
	rows, err := conn.Query(ctx, `
		SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, format_type(a.atttypid, a.atttypmod), a.attndims,
		       COALESCE((SELECT true FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY(i.indkey)), false),
		       COALESCE((SELECT true FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisreplident AND a.attnum = ANY(i.indkey)), false)
		FROM pg_attribute a
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, rel.ID)
	if err != nil {
		return fmt.Errorf("read columns of %s: %w", rel.QualifiedName(), err)
	}
	want := make(map[string]bool, len(published))
	for _, n := range published {
		want[n] = true
	}
	var pk, ri []bool
	var dims []int
	for rows.Next() {
		var c decode.Column
		var isPK, isRI bool
		var ndims int
		if err := rows.Scan(&c.Name, &c.TypeOID, &c.TypeMod, &c.NotNull, &c.TypeName, &ndims, &isPK, &isRI); err != nil {
			return fmt.Errorf("read columns of %s: %w", rel.QualifiedName(), err)
		}
		if len(published) > 0 && !want[c.Name] {
			continue
		}
		rel.Columns = append(rel.Columns, c)
		dims = append(dims, ndims)
		pk = append(pk, isPK)
		ri = append(ri, isRI)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read columns of %s: %w", rel.QualifiedName(), err)
	}
	// Describe each type from the catalog once the column query is done
	// (one connection, one query at a time).
	types := newTypeResolver(conn)
	for i := range rel.Columns {
		c := &rel.Columns[i]
		t, err := types.resolve(ctx, c.TypeOID, c.TypeMod, dims[i], 0)
		if err != nil {
			return fmt.Errorf("read columns of %s: column %s: %w", rel.QualifiedName(), c.Name, err)
		}
		c.Type = t
	}
	pkName, deferrable, err := primaryKey(ctx, conn, rel)
	if err != nil {
		return err
	}
	var key []bool
	switch {
	case rel.ReplicaIdentity == 'i' && anyTrue(ri):
		key = ri
	case rel.ReplicaIdentity == 'd' && anyTrue(pk):
		// A deferrable primary key is not PostgreSQL's replica identity:
		// UPDATE and DELETE fail at the source, so the rows keep their
		// keys, and each insert's key is new at its commit.
		key = pk
		if deferrable {
			rel.KeyNote = fmt.Sprintf("its primary key %s is DEFERRABLE, which PostgreSQL does not take as the replica identity: UPDATE and DELETE on the table fail at the source, and the mirror receives the inserts only; to replicate them, run ALTER TABLE %s DROP CONSTRAINT %s, ADD PRIMARY KEY (%s); -- not deferrable; or REPLICA IDENTITY USING INDEX <a unique index that is not deferrable>, or REPLICA IDENTITY FULL",
				pkName, rel.QuotedName(), decode.QuoteIdent(pkName), keyList(rel, pk))
		}
	case rel.ReplicaIdentity == 'f' && anyTrue(pk) && !deferrable:
		key = pk
	case rel.ReplicaIdentity == 'f':
		// Every column, compared as a whole: rows may repeat and hold
		// NULLs. A deferrable primary key can hold a key twice inside a
		// transaction (UPDATE t SET id = id + 1), so a change cannot be
		// placed by that key alone; the full old row places it exactly.
		rel.WholeRow = true
		if deferrable {
			rel.KeyNote = fmt.Sprintf("its primary key %s is DEFERRABLE, so the mirror is kept by the whole row (a digest of every row in memory); to key it by the primary key, run ALTER TABLE %s DROP CONSTRAINT %s, ADD PRIMARY KEY (%s); -- not deferrable",
				pkName, rel.QuotedName(), decode.QuoteIdent(pkName), keyList(rel, pk))
		}
	}
	for i := range key {
		rel.Columns[i].Key = key[i]
	}
	return nil
}

// primaryKey returns the name of rel's primary key and whether it is
// deferrable ("" when it has none).
func primaryKey(ctx context.Context, conn *pgx.Conn, rel *decode.Relation) (string, bool, error) {
	var name string
	var deferrable bool
	err := conn.QueryRow(ctx, `SELECT c.conname, c.condeferrable FROM pg_constraint c
		WHERE c.conrelid = $1 AND c.contype = 'p'`, rel.ID).Scan(&name, &deferrable)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read the primary key of %s: %w", rel.QualifiedName(), err)
	}
	return name, deferrable, nil
}

// keyList is the quoted names of the columns flagged in key, for SQL.
func keyList(rel *decode.Relation, key []bool) string {
	var names []string
	for i, k := range key {
		if k {
			names = append(names, decode.QuoteIdent(rel.Columns[i].Name))
		}
	}
	return strings.Join(names, ", ")
}

func anyTrue(b []bool) bool {
	for _, v := range b {
		if v {
			return true
		}
	}
	return false
}
