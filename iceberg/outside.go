package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Outside writers: another engine (Spark's rewrite_data_files,
// rewrite_position_delete_files, rewrite_manifests, expire_snapshots, a
// `pg2iceberg maintain` run) commits to a table the bridge writes. A
// commit of the bridge's that finds such a snapshot between its base and
// the catalog's head reconciles (see icebergTable.commitFiles): a
// changelog, or a mirror whose rows did not move, commits on top; a mirror
// whose rows moved drops its batch, rebuilds its key index from the new
// snapshot and has the stream replay the batch (ReplayError).

// ReplayError is a flush that dropped the batches of mirrors an outside
// commit moved the rows of (see Sink.Flush): their key indexes are rebuilt
// from the new snapshots, and the stream must resume from From, the LSN
// up to which everything is committed (Sink.Durable); the watermarks skip
// what the other tables committed since.
type ReplayError struct {
	From   decode.LSN
	Tables []string
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("outside commits moved rows of %s: the batch is replayed from %s", strings.Join(e.Tables, ", "), e.From)
}

// Retryable: the stream resumes in process.
func (e *ReplayError) Retryable() bool { return true }

// errRowsMoved is a mirror commit that found an outside snapshot moving
// rows its position deletes or key index point at.
var errRowsMoved = errors.New("an outside commit moved rows of the table")

// outsideSnapshots returns the snapshots of now's main branch newer than
// base's current one that the bridge did not write from source, newest
// first. connected is false when base's snapshot is not an ancestor of
// now's (expired, or the branch was reset): what happened between is
// unknown.
func outsideSnapshots(now, base *table.Table, source string) (outside []*table.Snapshot, connected bool) {
	var baseID int64 = -1
	if s := base.CurrentSnapshot(); s != nil {
		baseID = s.SnapshotID
	}
	meta := now.Metadata()
	for s := now.CurrentSnapshot(); s != nil; {
		if s.SnapshotID == baseID {
			return outside, true
		}
		if s.Summary == nil || s.Summary.Properties[PropSource] != source {
			outside = append(outside, s)
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return outside, baseID == -1
}

// movesRows reports whether an outside snapshot may have moved or deleted
// rows the key index points at: anything but a "replace" that leaves the
// data files as they were (rewrite_manifests, rewrite_position_delete_files;
// an expiry adds no snapshot). A replace keeps every row's content by
// definition, so position deletes it rewrites still delete the same rows.
func movesRows(s *table.Snapshot) bool {
	if s.Summary == nil || s.Summary.Operation != table.OpReplace {
		return true
	}
	for _, k := range []string{"added-data-files", "deleted-data-files", "added-records", "deleted-records"} {
		if n, err := strconv.ParseInt(s.Summary.Properties[k], 10, 64); err == nil && n != 0 {
			return true
		} else if err != nil && s.Summary.Properties[k] != "" {
			return true
		}
	}
	return false
}

// needsRebuild is the reconcile decision for a mirror: whether the outside
// snapshots (see outsideSnapshots) invalidate its key index and the
// position deletes of its batch.
func needsRebuild(outside []*table.Snapshot, connected bool) bool {
	if !connected {
		return true
	}
	for _, s := range outside {
		if movesRows(s) {
			return true
		}
	}
	return false
}

// snapshotIDs renders snapshots for a log line: "id (operation)".
func snapshotIDs(snaps []*table.Snapshot) []string {
	out := make([]string, 0, len(snaps))
	for _, s := range snaps {
		op := "?"
		if s.Summary != nil {
			op = string(s.Summary.Operation)
		}
		out = append(out, fmt.Sprintf("%d (%s)", s.SnapshotID, op))
	}
	return out
}

// withoutReplay returns tbl as a base for a commit that iceberg-go does not
// retry on a conflict (commit.retry.num-retries 0, in memory only; the
// table's property is not changed). iceberg-go's retry replays a row delta
// on the new head and checks only position deletes that name their one data
// file: one of the bridge's, naming many, would be committed against files
// an outside rewrite removed, deleting nothing. commitFiles retries itself,
// after looking at what was committed.
func withoutReplay(tbl *table.Table, cat catalog.Catalog) (*table.Table, error) {
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetProperties(icego.Properties{table.CommitNumRetriesKey: "0"}); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, cat), nil
}

// LastOutside returns the newest snapshot another writer committed on top
// of the bridge's last one (nil when the bridge's is current): what the
// bridge's next commit to the table reconciles.
func LastOutside(tbl *table.Table) *table.Snapshot {
	meta := tbl.Metadata()
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary == nil {
			return s
		}
		if _, ours := s.Summary.Properties[PropLSN]; ours {
			return nil
		}
		if _, ours := s.Summary.Properties[PropSource]; !ours {
			return s
		}
		if s.ParentSnapshotID == nil {
			return nil
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

// StaleIndexError is a read of the mirror's rows (an unchanged TOAST
// value's read-back) that found a data file gone because an outside
// commit moved the rows and an expiry deleted the file, before the
// bridge's next commit would have noticed: the key index points at rows
// that are elsewhere now. Retryable: the stream resumes in process from
// what is durable with a new sink, whose key index is rebuilt from the
// table as it is.
type StaleIndexError struct {
	Table string
	Err   error
}

func (e *StaleIndexError) Error() string {
	return fmt.Sprintf("an outside commit moved the rows the key index of %s points at (%v): the key index is rebuilt and the stream resumes", e.Table, e.Err)
}

func (e *StaleIndexError) Unwrap() error { return e.Err }

// Retryable: the stream resumes in process.
func (e *StaleIndexError) Retryable() bool { return true }

// readFailed explains a failed read of m's data file: a StaleIndexError
// when the catalog's head has outside commits since m's snapshot that may
// have moved rows (see needsRebuild); otherwise err says the file is
// missing from a table that still refers to it, and how to repair it.
func (s *Sink) readFailed(ctx context.Context, m *mirror, err error) error {
	now, lerr := s.cat.LoadTable(ctx, m.ident)
	if lerr != nil {
		return fmt.Errorf("%w (and loading %s again to check for outside commits: %v)", err, m.name(), lerr)
	}
	outside, connected := outsideSnapshots(now, m.tbl, s.cfg.Source.String())
	if needsRebuild(outside, connected) {
		return &StaleIndexError{Table: m.name(), Err: err}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: the table's current snapshot refers to a file that is gone from the warehouse; restore it, or copy the table again (pg2iceberg backfill --table %s)", err, m.name())
	}
	return err
}
