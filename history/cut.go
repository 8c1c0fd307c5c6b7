package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// ErrNoCut is a warehouse whose tables record no complete cut yet: the
// bridge records one with each flush.
var ErrNoCut = errors.New("no consistent cut recorded yet")

// SourceTables loads every table of the warehouse that the bridge writes
// (it has the pg2iceberg.source property), sorted by name. Tables of more
// than one source are refused: an LSN of one source means nothing to
// another's tables.
func SourceTables(ctx context.Context, cat catalog.Catalog) ([]*table.Table, error) {
	idents, err := allTables(ctx, cat, nil)
	if err != nil {
		return nil, err
	}
	var out []*table.Table
	sources := map[string]bool{}
	for _, ident := range idents {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err)
		}
		src := tbl.Properties()[iceberg.PropSource]
		if src == "" {
			continue
		}
		sources[src] = true
		out = append(out, tbl)
	}
	if len(sources) > 1 {
		return nil, fmt.Errorf("the warehouse holds tables of %d sources (%s): a cut is one source's LSN, so give each source its own warehouse", len(sources), strings.Join(slices.Sorted(maps.Keys(sources)), ", "))
	}
	return out, nil
}

// allTables lists the tables of ns and every namespace below it.
func allTables(ctx context.Context, cat catalog.Catalog, ns []string) ([]table.Identifier, error) {
	var out []table.Identifier
	if len(ns) > 0 {
		for ident, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			out = append(out, ident)
		}
	}
	children, err := cat.ListNamespaces(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, child := range children {
		if len(child) <= len(ns) || !slices.Equal(child[:len(ns)], ns) || len(child) != len(ns)+1 {
			continue
		}
		more, err := allTables(ctx, cat, child)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	slices.SortFunc(out, func(a, b table.Identifier) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	return slices.CompactFunc(out, func(a, b table.Identifier) bool { return slices.Equal(a, b) }), nil
}

// Cut is the newest complete cut of tables (SourceTables): the largest
// pg2iceberg.cut property among them. Each value was recorded by a flush
// that began after every table was committed through it, so at that LSN
// each table's state is its newest snapshot with a watermark at or below
// it (Resolve with an LSN point), and reading every table there sees each
// source transaction whole or not at all.
func Cut(tables []*table.Table) (decode.LSN, error) {
	var cut decode.LSN
	for _, tbl := range tables {
		v, ok := tbl.Properties()[iceberg.PropCut]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("table %s: bad %s %q: %w", strings.Join(tbl.Identifier(), "."), iceberg.PropCut, v, err)
		}
		cut = max(cut, decode.LSN(n))
	}
	if cut == 0 {
		return 0, fmt.Errorf("%w: the bridge records one with each flush (none has committed yet); give an LSN instead", ErrNoCut)
	}
	return cut, nil
}

// CutSnapshots resolves every table at LSN l, or fails naming each table
// that has no snapshot there (not yet copied, or expired by retention).
func CutSnapshots(tables []*table.Table, l decode.LSN) ([]*table.Snapshot, error) {
	out := make([]*table.Snapshot, len(tables))
	var errs []error
	for i, tbl := range tables {
		s, err := Resolve(tbl, Point{Kind: LSN, LSN: l})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i] = s
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("no consistent cut at %s: %w", l, errors.Join(errs...))
	}
	return out, nil
}

// TagAll tags every table of tables at its snapshot for LSN l with name.
// Every table is resolved before any is tagged; a table that already has
// the name is refused then too. It returns the snapshots tagged, in the
// order of tables.
func TagAll(ctx context.Context, cat catalog.Catalog, tables []*table.Table, name string, l decode.LSN) ([]*table.Snapshot, error) {
	if len(tables) == 0 {
		return nil, errors.New("the warehouse holds no table written by pg2iceberg: nothing to tag")
	}
	if err := checkRefName(name); err != nil {
		return nil, err
	}
	snaps, err := CutSnapshots(tables, l)
	if err != nil {
		return nil, err
	}
	var taken []string
	for _, tbl := range tables {
		if _, ok := findRef(tbl, name); ok {
			taken = append(taken, strings.Join(tbl.Identifier(), "."))
		}
	}
	if len(taken) > 0 {
		return nil, fmt.Errorf("tables %s already have a ref %q: pick another name, or drop it from each first", strings.Join(taken, ", "), name)
	}
	for i, tbl := range tables {
		if _, err := CreateRef(ctx, cat, tbl, name, table.TagRef, snaps[i].SnapshotID); err != nil {
			return nil, fmt.Errorf("%w (tagged before it: %d of %d tables; drop those tags and try again)", err, i, len(tables))
		}
	}
	return snaps, nil
}
