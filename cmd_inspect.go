package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/history"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "print a table's schema, partition specs, sort order, properties, current snapshot and live files, and what a scan for --where plans",
		Description: `Shows whether the table's layout lets a query skip files: with --where, the
   files and bytes iceberg-go's planner keeps against the table's total.
   Example:
   pg2iceberg inspect --warehouse ./warehouse --table public.orders --where "id < 1000"`,
		Flags:  flags(storageFlags, []cli.Flag{flagInspectTable, flagWhere}),
		Action: inspectCmd,
	}
}

func inspectCmd(c *cli.Context) error {
	name := c.String(flagInspectTable.Name)
	ns, tb, ok := strings.Cut(name, ".")
	if !ok || ns == "" || tb == "" {
		return fmt.Errorf("--table %q: name the table as namespace.table, e.g. public.orders", name)
	}
	cat, err := iceberg.OpenCatalog(c.Context, catalogConfig(c))
	if err != nil {
		return err
	}
	defer func() { _ = iceberg.CloseCatalog(cat) }()
	tbl, err := cat.LoadTable(c.Context, table.Identifier{ns, tb})
	if err != nil {
		return fmt.Errorf("load table %s: %w", name, err)
	}
	var filter icego.BooleanExpression
	if w := c.String(flagWhere.Name); w != "" {
		if filter, err = parseWhere(w, tbl.Schema()); err != nil {
			return err
		}
	}
	return inspect(c.Context, c.App.Writer, name, tbl, c.String(flagWhere.Name), filter)
}

// inspect prints what inspectCmd shows of tbl.
func inspect(ctx context.Context, w io.Writer, name string, tbl *table.Table, where string, filter icego.BooleanExpression) error {
	md := tbl.Metadata()
	fmt.Fprintf(w, "table %s\nlocation %s\nformat-version %d\n", name, tbl.Location(), md.Version())
	fmt.Fprintf(w, "\nschema %d:\n", tbl.Schema().ID)
	for _, f := range tbl.Schema().Fields() {
		req := ""
		if f.Required {
			req = " required"
		}
		fmt.Fprintf(w, "  %d %s %s%s\n", f.ID, f.Name, f.Type, req)
	}
	fmt.Fprintln(w, "\npartition specs:")
	for _, spec := range md.PartitionSpecs() {
		fields := "unpartitioned"
		if !spec.IsUnpartitioned() {
			var parts []string
			for _, f := range spec.Fields() {
				parts = append(parts, f.String())
			}
			fields = strings.Join(parts, ", ")
		}
		fmt.Fprintf(w, "  %d%s: %s\n", spec.ID(), mark(spec.ID() == md.DefaultPartitionSpec()), fields)
	}
	fmt.Fprintln(w, "\nsort orders:")
	for _, so := range md.SortOrders() {
		order := "unsorted"
		if !so.IsUnsorted() {
			order = strings.TrimSpace(so.String())
		}
		fmt.Fprintf(w, "  %d%s: %s\n", so.OrderID(), mark(so.OrderID() == md.DefaultSortOrder()), order)
	}
	fmt.Fprintln(w, "\nproperties:")
	props := tbl.Properties()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(w, "  %s = %s\n", k, props[k])
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		fmt.Fprintln(w, "\ncurrent snapshot: none (the table has no rows yet)")
		return nil
	}
	op := ""
	if snap.Summary != nil {
		op = " " + string(snap.Summary.Operation)
	}
	fmt.Fprintf(w, "\ncurrent snapshot %d%s at %s\n", snap.SnapshotID, op, time.UnixMilli(snap.TimestampMs).UTC().Format(time.RFC3339))
	all, err := planScan(ctx, tbl, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "live files: %s, %s\n", all.data.String("data"), all.deletes.String("delete"))
	if filter == nil {
		return nil
	}
	got, err := planScan(ctx, tbl, filter)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwhere %s: the scan plans %d of %d data files (%d of %d bytes), %d of %d delete files\n",
		where, got.data.files, all.data.files, got.data.bytes, all.data.bytes, got.deletes.files, all.deletes.files)
	return nil
}

func mark(isDefault bool) string {
	if isDefault {
		return " (default)"
	}
	return ""
}

// fileCount is a number of files and their bytes.
type fileCount struct{ files, bytes int64 }

func (f fileCount) String(what string) string {
	return fmt.Sprintf("%d %s files, %d bytes", f.files, what, f.bytes)
}

// scanPlan is what a scan plans: its data files and the delete files they
// carry, each counted once.
type scanPlan struct{ data, deletes fileCount }

// planScan plans a scan of tbl's current snapshot with iceberg-go's
// planner, filtered by filter (nil: every row).
func planScan(ctx context.Context, tbl *table.Table, filter icego.BooleanExpression) (scanPlan, error) {
	var opts []table.ScanOption
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return scanPlan{}, fmt.Errorf("plan a scan: %w", err)
	}
	var p scanPlan
	seen := map[string]bool{}
	for _, task := range tasks {
		p.data.files++
		p.data.bytes += task.File.FileSizeBytes()
		for _, d := range slices.Concat(task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles) {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				p.deletes.files++
				p.deletes.bytes += d.FileSizeBytes()
			}
		}
	}
	return p, nil
}

// predicateRE is one condition of --where: a column, an operator, a
// literal.
// parseWhere parses --where with the history package's parser (as
// pg2iceberg read does) and binds it to sc: every column exists and every
// literal converts to its column's type.
func parseWhere(s string, sc *icego.Schema) (icego.BooleanExpression, error) {
	f, err := history.ParseWhere(s)
	if err != nil {
		return nil, err
	}
	if err := f.Bind(sc); err != nil {
		return nil, err
	}
	return f.Expr, nil
}
