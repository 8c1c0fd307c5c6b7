package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// Status writes the slot's position and lag and each published table's
// watermarks to w (pg2iceberg status). It reports state: it checks no
// types of mirrored tables, so it needs neither the configuration file nor
// a table every rule makes mappable, and it takes no lease. Only a table
// with no Iceberg table is checked (see tableStatus), with cfg.Rules when
// given.
func Status(ctx context.Context, cfg Config, w io.Writer) error {
	conn, err := replication.Connect(ctx, cfg.Source)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	slot := cfg.Slot
	info, err := replication.LookupSlot(ctx, conn, slot)
	switch {
	case errors.Is(err, replication.ErrNoSlot):
		fmt.Fprintf(w, "slot %s: does not exist (the bridge has not started)\n", slot)
	case err != nil:
		return err
	case info.Lost():
		fmt.Fprintf(w, "slot %s: LOST, invalidated by the server (%s) at or after confirmed_flush_lsn %s: the changes since are gone; "+
			"run the bridge with --on-slot-lost=recopy to drop it, create it again and copy every table again, and raise max_slot_wal_keep_size\n",
			slot, info.LostReason(), info.ConfirmedFlush)
	default:
		fmt.Fprintf(w, "slot %s: confirmed_flush_lsn %s, current WAL %s, lag %d bytes, active %t\n",
			slot, info.ConfirmedFlush, info.CurrentWAL, info.LagBytes(), info.Active)
	}
	rels, err := replication.PublishedTables(ctx, conn, cfg.Publication)
	if err != nil {
		return err
	}
	if err := iceberg.CheckWarehouse(ctx, cfg.Catalog, false); err != nil {
		return err
	}
	cat, err := iceberg.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, logOr(cfg.Log))
	check := statusCheck(ctx, conn, cfg.Publication, cfg.Rules)
	var lines []string
	for _, rel := range rels {
		l, err := tableStatus(ctx, cat, rel, info.ConfirmedFlush, check)
		if err != nil {
			return err
		}
		lines = append(lines, l...)
	}
	sort.Strings(lines)
	fmt.Fprintln(w, strings.Join(lines, "\n"))
	return nil
}

// tableStatus returns status's lines for one published table: its mirror's
// and its changelog's watermark and last commit. A mirror's watermark is
// at least its copy's LSN (a copy commits its rows at the stream's start,
// not at the snapshot it was taken in), so right after a copy it shows
// where the copy is consistent, not 0/0.
// confirmed is the slot's confirmed_flush_lsn (0 without a slot): a table
// whose catalog entry is behind it is flagged (see staleNote). A table
// with no Iceberg table yet is checked (check, see replication.CheckTable):
// the stream skips one that cannot be mirrored, which leaves nothing else
// to show it by.
func tableStatus(ctx context.Context, cat catalog.Catalog, rel *decode.Relation, confirmed decode.LSN, check func(relID uint32) error) ([]string, error) {
	mid, cid := iceberg.Identifiers(rel.Schema, rel.Name)
	if line, err := unmirroredStatus(ctx, cat, rel, check); line != "" || err != nil {
		return []string{line}, err
	}
	var lines []string
	if !rel.HasKey() {
		lines = append(lines, fmt.Sprintf("%-40s no mirror: the table has no primary key or replica identity", strings.Join(mid, ".")))
	} else {
		line, err := icebergTableStatus(ctx, cat, mid, true, confirmed)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	line, err := icebergTableStatus(ctx, cat, cid, false, confirmed)
	if err != nil {
		return nil, err
	}
	return append(lines, line), nil
}

func icebergTableStatus(ctx context.Context, cat catalog.Catalog, ident table.Identifier, mirror bool, confirmed decode.LSN) (string, error) {
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Sprintf("%-40s not created yet", name), nil
	}
	lsn, at, err := iceberg.Watermark(tbl, "")
	if err != nil {
		return "", err
	}
	copyLSN, copied := iceberg.CopyLSNOf(tbl)
	if !mirror && tbl.CurrentSnapshot() == nil {
		return fmt.Sprintf("%-40s no change recorded yet", name), nil
	}
	when := "never"
	if !at.IsZero() {
		when = at.UTC().Format(time.RFC3339)
	}
	line := fmt.Sprintf("%-40s watermark %-14s last commit %s", name, max(lsn, copyLSN), when)
	switch {
	case !mirror:
	case copied:
		line += "  copied at " + copyLSN.String()
	default:
		line += "  copy not finished (the next run copies the table)"
	}
	if confirmed != 0 { // the slot exists
		line += staleNote(ctx, tbl, confirmed)
	}
	return line + filesNote(tbl) + tierNote(ctx, tbl), nil
}

// tierNote is what status adds for a table with files in a cold location
// (hot/cold tiering): the bytes per tier ("" when none is cold).
func tierNote(ctx context.Context, tbl *table.Table) string {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return ""
	}
	hot, cold, err := iceberg.TierBytes(tbl, fs)
	if err != nil || cold == 0 {
		return ""
	}
	return fmt.Sprintf("\n    tiers: %d bytes hot, %d bytes cold", hot, cold)
}

// filesNote is the second line of a table's status: its current
// snapshot's live files, its last compaction, and the newest outside
// commit the bridge has not reconciled yet (see iceberg.LastOutside).
func filesNote(tbl *table.Table) string {
	live := iceberg.LiveFilesOf(tbl.CurrentSnapshot())
	note := fmt.Sprintf("\n    live files: %d data, %d deletes, %d bytes", live.Data, live.Deletes, live.Bytes)
	if at := iceberg.LastCompaction(tbl); !at.IsZero() {
		note += ", last compaction " + at.UTC().Format(time.RFC3339)
	}
	if s := iceberg.LastOutside(tbl); s != nil {
		op := "?"
		if s.Summary != nil {
			op = string(s.Summary.Operation)
		}
		note += fmt.Sprintf("; outside commit since the bridge's last: snapshot %d (%s), reconciled at its next commit", s.SnapshotID, op)
	}
	return note
}

// staleNote is what status adds to the line of a stale table ("" when it
// is not stale).
func staleNote(ctx context.Context, tbl *table.Table, confirmed decode.LSN) string {
	s, err := iceberg.FindStale(ctx, tbl, "", confirmed)
	if err != nil {
		return "  (not checked against the slot: " + err.Error() + ")"
	}
	if s == nil {
		return ""
	}
	way := "run pg2iceberg repair for it"
	if !s.Repairable {
		way = "its newer metadata's files are missing: copy it again (run --on-stale-table=recopy)"
	}
	return fmt.Sprintf("  STALE, needs a human: the catalog points at %s, but this bridge committed up to %s (confirmed by the slot) in a newer metadata file; %s, or see the error of pg2iceberg run",
		s.Current[strings.LastIndex(s.Current, "/")+1:], s.NewerLSN, way)
}

// unmirroredStatus is the status line of a table that has no Iceberg
// table and cannot be mirrored ("" for any other).
func unmirroredStatus(ctx context.Context, cat catalog.Catalog, rel *decode.Relation, check func(relID uint32) error) (string, error) {
	if has, err := hasIcebergTables(ctx, cat, rel); has || err != nil {
		return "", err
	}
	err := check(rel.ID)
	var u *replication.UnmirrorableError
	if !errors.As(err, &u) {
		return "", err
	}
	return fmt.Sprintf("%-40s NOT MIRRORED, needs a human: a running bridge skips its changes until this is fixed, then copies it:\n    %s",
		rel.QualifiedName(), strings.ReplaceAll(u.Err.Error(), "\n", "\n    ")), nil
}

// statusCheck returns status's check of a table with no Iceberg table
// (see replication.CheckTable), with the rules of --config when given.
func statusCheck(ctx context.Context, conn *pgx.Conn, pub string, overrides *mapping.Overrides) func(relID uint32) error {
	return func(relID uint32) error {
		err := replication.CheckTable(ctx, conn, pub, relID, overrides)
		var u *replication.UnmirrorableError
		var ute *mapping.UnsupportedTypeError
		if overrides == nil && errors.As(err, &u) && errors.As(err, &ute) {
			u.Err = errors.Join(u.Err, errors.New("(status was given no --config: if run's maps this type by a rule, pass that file to status too)"))
		}
		return err
	}
}
