package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// holdTables answers the tables PreflightStart held at a restart (they
// cannot be mirrored as they are): one with no Iceberg table yet is
// skipped, needing a human, as the stream skips a table that joins the
// publication in that state (the stream's next relation message for it
// looks it up again, and once fixed it is copied). One that is mirrored
// already stops the start: skipping its changes would leave its mirror
// wrong for good.
func (b *bridge) holdTables(ctx context.Context, cat catalog.Catalog, held []*replication.UnmirrorableError) error {
	var mirrored []error
	for _, u := range held {
		has, err := hasIcebergTables(ctx, cat, u.Rel)
		if err != nil {
			return err
		}
		if has {
			mirrored = append(mirrored, u.Err)
			continue
		}
		b.progress.NeedsHuman(u.Rel.ID, u.Table, u.Error())
		b.log.Warn("table cannot be mirrored: its changes are skipped until it is fixed", "table", u.Table, "relid", u.Rel.ID, "problem", u)
	}
	if err := errors.Join(mirrored...); err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	return nil
}

// hasIcebergTables reports whether rel's mirror or changelog exists (one
// recording another source table, dropped since, is not rel's).
func hasIcebergTables(ctx context.Context, cat catalog.Catalog, rel *decode.Relation) (bool, error) {
	mid, cid := iceberg.Identifiers(rel.Schema, rel.Name)
	for _, ident := range []table.Identifier{mid, cid} {
		tbl, err := cat.LoadTable(ctx, ident)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("look up %s: %w", strings.Join(ident, "."), err)
		}
		if oid, ok := tbl.Properties()[iceberg.PropSourceOID]; !ok || oid == strconv.FormatUint(uint64(rel.ID), 10) {
			return true, nil
		}
	}
	return false, nil
}

// alignKeyless is backfill --table of a table without a key: it has no
// rows to copy, but its changelog's schema is brought in line with the
// source (a rename the stream could not follow without the DDL capture).
// With nothing to bring in line it is the error that says why there is
// nothing to copy.
// attnums are its columns by attnum now.
func (b *bridge) alignKeyless(ctx context.Context, rel *decode.Relation, attnums map[int]string) error {
	changed, err := b.sink.AlignKeyless(ctx, rel, attnums)
	if err != nil {
		return err
	}
	if !changed {
		return replication.Copyable(rel)
	}
	b.log.Info("table has no key: no rows copied, its changelog follows the source's columns from the next change", "table", rel.QualifiedName())
	return nil
}
