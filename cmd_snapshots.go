package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/history"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

func snapshotsCommand() *cli.Command {
	return &cli.Command{
		Name:  "snapshots",
		Usage: "list a table's snapshots: time, operation, LSN watermark, rows and files added and removed, refs",
		Description: `Example:
   pg2iceberg snapshots --warehouse ./warehouse --table shop.orders`,
		Flags:  flags(storageFlags, []cli.Flag{flagHistoryTable, flagJSON}),
		Action: snapshotsCmd,
	}
}

func snapshotsCmd(c *cli.Context) error {
	_, tbl, err := openTable(c.Context, c)
	if err != nil {
		return err
	}
	list, err := history.Snapshots(tbl)
	if err != nil {
		return err
	}
	if c.Bool(flagJSON.Name) {
		enc := json.NewEncoder(os.Stdout)
		for _, s := range list {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}
	n := func(v int64) string {
		if v < 0 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	var rows [][]string
	for _, s := range list {
		mark := ""
		switch {
		case s.Current:
			mark = "*"
		case !s.Ancestor:
			mark = "-"
		}
		lsn := s.LSN
		if s.CopyLSN != "" {
			lsn = "copy at " + s.CopyLSN
		}
		rows = append(rows, []string{mark, strconv.FormatInt(s.ID, 10), s.Time.Format("2006-01-02T15:04:05.000Z"), s.Operation, lsn,
			n(s.AddedRows), n(s.DeletedRows), n(s.PositionDeletes), n(s.AddedDataFiles), n(s.RemovedDataFiles), n(s.AddedDeleteFiles), n(s.RemovedDeleteFile), n(s.TotalRecords), strings.Join(s.Refs, ",")})
	}
	cols := []string{"", "snapshot", "time", "operation", "lsn", "+rows", "-rows", "pos-deletes", "+data", "-data", "+deletes", "-deletes", "records", "refs"}
	if err := history.WriteTable(os.Stdout, cols, rows); err != nil {
		return err
	}
	fmt.Println("* current; - not on the current snapshot's history (rolled back, or a branch's)")
	return nil
}

// openTable opens the catalog and loads --table, with an error that says
// which tables exist when it is not there.
func openTable(ctx context.Context, c *cli.Context) (catalog.Catalog, *table.Table, error) {
	name := c.String(flagHistoryTable.Name)
	ident := strings.Split(name, ".")
	if len(ident) < 2 {
		return nil, nil, fmt.Errorf("--table %q: name it as namespace.table, e.g. public.orders", name)
	}
	cat, err := iceberg.OpenCatalog(ctx, catalogConfig(c))
	if err != nil {
		return nil, nil, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		var names []string
		for id, lerr := range cat.ListTables(ctx, catalog.NamespaceFromIdent(ident)) {
			if lerr != nil {
				break
			}
			names = append(names, strings.Join(id, "."))
		}
		if len(names) == 0 {
			names = []string{"none"}
		}
		return nil, nil, fmt.Errorf("no table %s in the catalog (tables in namespace %s: %s)", name, strings.Join(catalog.NamespaceFromIdent(ident), "."), strings.Join(names, ", "))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load table %s: %w", name, err)
	}
	return cat, tbl, nil
}
