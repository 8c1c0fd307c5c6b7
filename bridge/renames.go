package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/evolution"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// checkRenames stops a start at tables whose columns were renamed since
// their Iceberg schema was last brought in line, when the DDL capture is
// not installed: the stream would stop at the table's next row change
// (its relation message shows a drop and an add), or never notice while
// the table has none. The attnums recorded with the Iceberg tables prove
// the rename. Tables about to be copied (copied) are left out: a copy
// brings the schema in line itself.
func checkRenames(ctx context.Context, conn *pgx.Conn, sink *iceberg.Sink, rels, copied []*decode.Relation) error {
	capture, err := replication.CaptureInstalled(ctx, conn)
	if err != nil || capture {
		// With the capture, the WAL carries an event for each rename.
		return err
	}
	var errs []error
	for _, rel := range rels {
		if slices.ContainsFunc(copied, func(r *decode.Relation) bool { return r.ID == rel.ID }) {
			continue
		}
		attnums, err := replication.AttNums(ctx, conn, rel.ID)
		if err != nil {
			return err
		}
		if renames := sink.RenamedSince(rel.ID, attnums); len(renames) > 0 {
			errs = append(errs, renamedError(rel.QualifiedName(), renames))
		}
	}
	return errors.Join(errs...)
}

func renamedError(table string, renames map[string]string) error {
	var rs []string
	for from, to := range renames {
		rs = append(rs, fmt.Sprintf("column %s was renamed to %s", from, to))
	}
	sort.Strings(rs)
	return fmt.Errorf("%s: %s since its Iceberg schema was last updated, and without the DDL capture the stream cannot follow a rename (its replication messages show a drop and an add); nothing was written. %s",
		table, strings.Join(rs, ", "), evolution.RecopyAdvice(table))
}
