package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// PreflightStart is Preflight at the start of a command that writes: it
// also checks the configuration's rules and table entries against the
// publication (a rule naming a column, table or type that does not exist
// is a typo, and a misspelt exclude would ship the column it meant to keep
// out), reporting those problems with the others, and warns about tables
// the application cannot update or delete in (see warnKeyless).
//
// The rules are checked at start only: a column a rule names may be
// dropped while the bridge streams, which must not stop it. For the same
// reason, once the bridge has run (ran is true: its slot exists), a rule
// or table entry naming a table that is not in the publication is a
// warning, not an error: the table may have been dropped or taken out of
// the publication since the file was written (a drop_table: drop entry
// outlives its table), and the entry is idle until the table comes back.
// At the first start such an entry is a typo and stops the start.
//
// Likewise, once the bridge has run, a table that cannot be mirrored as
// it is (no GRANT, a type without an Iceberg form, a bad key: any role
// that creates a table in a FOR ALL TABLES publication can cause it) is
// held, not an error: it is left out of the tables returned, and the
// caller skips it (see UnmirrorableError) unless it is mirrored already.
// At the first start, and for the other problems, the start stops.
func PreflightStart(ctx context.Context, conn *pgx.Conn, publication string, overrides *mapping.Overrides, ran bool, log *slog.Logger) ([]*decode.Relation, []*UnmirrorableError, error) {
	rels, found, err := preflight(ctx, conn, publication, overrides)
	if err != nil {
		return nil, nil, err
	}
	errs := found.all
	if rels != nil && overrides != nil {
		cfgErr := &mapping.ConfigError{File: overrides.File}
		left := &mapping.ConfigError{File: overrides.File}
		if !ran {
			left = cfgErr
		}
		if err := checkRules(ctx, conn, publication, rels, overrides, cfgErr, left); err != nil {
			return nil, nil, err
		}
		if err := cfgErr.Err(); err != nil {
			errs = append(errs, err)
		}
		if err := left.Err(); err != nil && ran {
			log.Warn("the configuration names tables that are not in the publication: their entries have no effect until the tables are published again", "publication", publication, "entries", err.Error(), "fix", "remove the entries, or mark them added_later: true")
		}
	}
	held := found.tables
	if !ran {
		for _, u := range held {
			errs = append(errs, u.Err)
		}
		held = nil
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	rels = slices.DeleteFunc(rels, func(r *decode.Relation) bool {
		return slices.ContainsFunc(held, func(u *UnmirrorableError) bool { return u.Rel == r })
	})
	if err := warnKeyless(ctx, conn, publication, rels, log); err != nil {
		return nil, nil, err
	}
	return rels, held, nil
}

// checkRules adds to e the rules and table entries that name what the
// publication or the database does not have, unless marked added_later;
// those naming a table the publication does not have go to left.
func checkRules(ctx context.Context, conn *pgx.Conn, publication string, rels []*decode.Relation, o *mapping.Overrides, e, left *mapping.ConfigError) error {
	byName := make(map[string]*decode.Relation, len(rels))
	for _, r := range rels {
		byName[r.QualifiedName()] = r
	}
	columns := map[string][]string{} // table → every column, published or not
	var types []string
	for i, r := range o.Overrides {
		where := fmt.Sprintf("rule %d", i+1)
		switch {
		case r.AddedLater:
		case r.Type != "":
			types = append(types, r.Type)
		case strings.Count(r.Column, ".") == 2:
			i := strings.LastIndexByte(r.Column, '.')
			table, col := r.Column[:i], r.Column[i+1:]
			rel, ok := byName[table]
			if !ok {
				left.Add(r.Line, "%s: column %s: table %s is not in publication %s%s", where, r.Column, table, publication, addedLaterHint(rels))
				continue
			}
			cols, ok := columns[table]
			if !ok {
				var err error
				if cols, err = allColumns(ctx, conn, rel); err != nil {
					return err
				}
				columns[table] = cols
			}
			if !slices.Contains(cols, col) {
				e.Add(r.Line, "%s: column %s: %s has no column %s (its columns: %s); if it is added later, say so with added_later: true", where, r.Column, table, col, strings.Join(cols, ", "))
			}
		}
	}
	if len(types) > 0 {
		known, err := knownTypes(ctx, conn, types)
		if err != nil {
			return err
		}
		for i, r := range o.Overrides {
			if r.Type != "" && !r.AddedLater && !known[r.Type] {
				e.Add(r.Line, "rule %d: type %s: no type of that name in the database (write it as format_type prints it, without modifiers: numeric, character varying, timestamp without time zone, text[])", i+1, r.Type)
			}
		}
	}
	for i, p := range o.Tables {
		if p.Table == "*" || p.AddedLater {
			continue
		}
		if _, ok := byName[p.Table]; !ok {
			left.Add(p.Line, "tables entry %d: table %s is not in publication %s%s", i+1, p.Table, publication, addedLaterHint(rels))
		}
	}
	return nil
}

// addedLaterHint names the publication's tables (the first ten) for a rule
// naming a table it does not have.
func addedLaterHint(rels []*decode.Relation) string {
	names := make([]string, 0, 10)
	for _, r := range rels[:min(len(rels), 10)] {
		names = append(names, r.QualifiedName())
	}
	if len(rels) > 10 {
		names = append(names, fmt.Sprintf("and %d more", len(rels)-10))
	}
	return " (its tables: " + strings.Join(names, ", ") + "); if the table is added later, say so with added_later: true"
}

// allColumns lists a table's columns in attnum order, published or not (a
// rule for a column left out by a column list is harmless).
func allColumns(ctx context.Context, conn *pgx.Conn, rel *decode.Relation) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, rel.ID)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", rel.QualifiedName(), err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", rel.QualifiedName(), err)
	}
	return cols, nil
}

// knownTypes reports which of names are types of the database, named as
// rules match them (format_type without modifiers).
func knownTypes(ctx context.Context, conn *pgx.Conn, names []string) (map[string]bool, error) {
	rows, err := conn.Query(ctx, `SELECT DISTINCT format_type(oid, NULL) FROM pg_type WHERE format_type(oid, NULL) = ANY($1)`, names)
	if err != nil {
		return nil, fmt.Errorf("look up the types of the rules: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look up the types of the rules: %w", err)
	}
	known := make(map[string]bool, len(found))
	for _, n := range found {
		known[n] = true
	}
	return known, nil
}

// warnKeyless warns about each published table without a key (no primary
// key, no replica identity index, not REPLICA IDENTITY FULL) when the
// publication publishes updates or deletes: PostgreSQL then refuses the
// application's own UPDATE or DELETE on that table ("cannot update table
// ... because it does not have a replica identity and publishes updates").
// It says what to do. (The sink warns about every keyless table that it
// gets no mirror.)
func warnKeyless(ctx context.Context, conn *pgx.Conn, publication string, rels []*decode.Relation, log *slog.Logger) error {
	var keyless []*decode.Relation
	for _, r := range rels {
		if !r.HasKey() && r.ReplicaIdentity != 'f' {
			keyless = append(keyless, r)
		}
	}
	if len(keyless) == 0 {
		return nil
	}
	var upd, del bool
	if err := conn.QueryRow(ctx, "SELECT pubupdate, pubdelete FROM pg_publication WHERE pubname = $1", publication).Scan(&upd, &del); err != nil {
		return fmt.Errorf("read what publication %q publishes: %w", publication, err)
	}
	var refused []string
	if upd {
		refused = append(refused, "UPDATE")
	}
	if del {
		refused = append(refused, "DELETE")
	}
	if len(refused) == 0 {
		return nil
	}
	pub := decode.QuoteIdent(publication)
	for _, r := range keyless {
		name := decode.QuoteIdent(r.Schema) + "." + decode.QuoteIdent(r.Name)
		// publish applies to every table of the publication: suggested only
		// when no table of it needs its updates and deletes.
		or := "ALTER PUBLICATION " + pub + " DROP TABLE " + name + " (the bridge then leaves it out)"
		if len(keyless) == len(rels) {
			or = "ALTER PUBLICATION " + pub + " SET (publish = 'insert, truncate') (the table keeps a changelog of inserts only)"
		}
		log.Warn("table has no primary key or replica identity and the publication publishes its updates or deletes: PostgreSQL refuses the application's UPDATE or DELETE on it",
			"table", r.QualifiedName(), "publication", publication, "refused", strings.Join(refused, ", "),
			"fix", "ALTER TABLE "+name+" REPLICA IDENTITY FULL (the bridge then mirrors it, keyed on all columns), or add a primary key",
			"or", or)
	}
	return nil
}

// Copyable says why a table cannot be copied: one with no key has no
// mirror, and its changelog records changes, not existing rows.
func Copyable(rel *decode.Relation) error {
	if rel.HasKey() {
		return nil
	}
	return fmt.Errorf("table %s has no primary key or replica identity, so it has no mirror to copy into (its changelog records changes, not existing rows): run ALTER TABLE %s.%s REPLICA IDENTITY FULL or add a primary key, and the next run creates its mirror and copies it",
		rel.QualifiedName(), decode.QuoteIdent(rel.Schema), decode.QuoteIdent(rel.Name))
}

// skipKeyless reports (and logs) that a table is not copied because it
// has no key: reading its rows would write nothing.
func skipKeyless(rel *decode.Relation, log *slog.Logger) bool {
	if Copyable(rel) == nil {
		return false
	}
	log.Info("table not copied: it has no primary key or replica identity, so it has no mirror, and its changelog records changes, not existing rows", "table", rel.QualifiedName())
	return true
}

// PublishedTables lists the publication's tables as Preflight does, with
// none of its checks (for status, which reports state: a type a rule
// maps, or a missing privilege, must not stop it).
func PublishedTables(ctx context.Context, conn *pgx.Conn, publication string) ([]*decode.Relation, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", publication).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look up publication: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("publication %q does not exist in this database", publication)
	}
	return publishedTables(ctx, conn, publication, 0)
}
