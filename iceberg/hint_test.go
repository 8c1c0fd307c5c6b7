package iceberg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// A flush whose version hint cannot be written after its commits went
// through still succeeds, and the files it committed stay: found by
// TestNetworkFaultsS3, where a lost PUT of the hint failed the flush, the
// bridge discarded the sink as for a lost connection, and the discard
// deleted data files the catalog already referenced (the restart then
// failed for good with "file does not exist").
func TestFlushStandsWithoutVersionHint(t *testing.T) {
	ctx := context.Background()
	cat, s, rel := keyedSink(t)
	insert := inserter(t, s, rel)
	if err := insert(1, 2); err != nil {
		t.Fatal(err)
	}
	// The hints cannot be written any more: a directory stands in their way.
	for _, name := range []string{"t", "t__changelog"} {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"public", name})
		if err != nil {
			t.Fatal(err)
		}
		hint := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "metadata", "version-hint.text")
		if err := os.Remove(hint); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(hint, "blocked"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := insert(3, 4)
	s.Discard() // what the bridge does after a failed flush; harmless after a good one
	if err != nil {
		t.Errorf("flush with the version hints blocked: %v; want the committed flush to stand", err)
	}
	if got := mirrorRows(t, cat, "t"); len(got) != 4 {
		t.Errorf("mirror holds %v, want ids 1-4", got)
	}
	if n := changelogRows(t, cat, "t"); n != 4 {
		t.Errorf("changelog holds %d rows, want 4", n)
	}
}

// lossyCatalog passes everything to its catalog, but once armed, the next
// commit goes through and its answer is lost (an error), and the reloads
// that would tell fail too, until disarmed: a commit of unknown outcome.
// With reloads, only the answer is lost: the reload after it works and
// shows the commit.
type lossyCatalog struct {
	catalog.Catalog
	armed, lost, reloads bool
}

func (c *lossyCatalog) bind(tbl *table.Table, err error) (*table.Table, error) {
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *lossyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	if c.lost {
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return c.bind(c.Catalog.LoadTable(ctx, ident))
}

func (c *lossyCatalog) CreateTable(ctx context.Context, ident table.Identifier, sc *icego.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	return c.bind(c.Catalog.CreateTable(ctx, ident, sc, opts...))
}

func (c *lossyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	md, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, updates)
	if err == nil && c.armed {
		c.armed, c.lost = false, !c.reloads
		return nil, "", errors.New("read tcp: connection reset by peer")
	}
	return md, loc, err
}

// A discarded sink keeps the files of a commit whose outcome it could not
// learn: that commit went through, and its table reads back whole.
func TestDiscardKeepsFilesOfUnknownCommit(t *testing.T) {
	cat := &lossyCatalog{}
	inner, s, rel := keyedSink(t, func(c catalog.Catalog) catalog.Catalog { cat.Catalog = c; return cat })
	insert := inserter(t, s, rel)
	if err := insert(1, 2); err != nil {
		t.Fatal(err)
	}
	cat.armed = true
	err := insert(3, 4) // the changelog's commit goes through unheard; the flush stops there
	if err == nil || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("flush with its commit's answer lost: %v; want an unknown outcome", err)
	}
	s.Discard()
	cat.lost = false
	if n := changelogRows(t, inner, "t"); n != 4 {
		t.Errorf("changelog holds %d rows, want 4: the commit of unknown outcome went through", n)
	}
	if got := mirrorRows(t, inner, "t"); len(got) != 2 {
		t.Errorf("mirror holds %v, want ids 1 and 2 (its commit never went)", got)
	}
}

// A commit whose answer was lost but which the reload shows (found by its
// commit id) is followed by the table's upkeep like any other: before
// a102d99 that path returned without it, so a table whose commits kept
// losing their answers never expired a snapshot.
func TestUpkeepAfterCommitFoundByID(t *testing.T) {
	cat := &lossyCatalog{reloads: true}
	inner, s, rel := keyedSink(t, func(c catalog.Catalog) catalog.Catalog { cat.Catalog = c; return cat })
	insert := inserter(t, s, rel)
	if err := insert(1, 2); err != nil {
		t.Fatal(err)
	}
	// The changelog's expiry is due again (its first commit ran one), and
	// keeps only the newest snapshot.
	cl := s.tables[rel.ID].changelog.icebergTable
	cl.upkeep = tiering.Schedule{Retention: tiering.Retention{MaxSnapshotAge: time.Nanosecond, MinSnapshots: 1}, Keep: cl.upkeep.Keep}
	ident := table.Identifier{"public", "t" + ChangelogSuffix}
	before, err := inner.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(before.Metadata().Snapshots()); n < 1 {
		t.Fatalf("changelog has %d snapshots after the first flush, want 1 or more", n)
	}
	cat.armed = true
	if err := insert(3, 4); err != nil { // the changelog's commit goes through unheard, the reload shows it
		t.Fatalf("flush whose commit answer was lost but the reload shows it: %v; want it to stand", err)
	}
	after, err := inner.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(after.Metadata().Snapshots()); n != 1 {
		t.Errorf("changelog holds %d snapshots after the commit found by its commit id, want 1: its expiry did not run", n)
	}
	if n := changelogRows(t, inner, "t"); n != 4 {
		t.Errorf("changelog holds %d rows, want 4", n)
	}
	if got := mirrorRows(t, inner, "t"); len(got) != 4 {
		t.Errorf("mirror holds %v, want ids 1-4", got)
	}
}

// inserter returns a function that inserts rows (id, "v") into rel in one
// transaction and flushes.
func inserter(t *testing.T, s *Sink, rel *decode.Relation) func(ids ...int) error {
	ctx := context.Background()
	text := func(v string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(v)} }
	var end decode.LSN = 100
	return func(ids ...int) error {
		t.Helper()
		end += 100
		s.Begin(uint32(end), end-10, time.Now())
		for _, id := range ids {
			if err := s.Change(&decode.Change{Op: decode.Insert, Rel: rel, After: decode.Tuple{text(fmt.Sprint(id)), text("v")}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.Commit(ctx, end); err != nil {
			t.Fatal(err)
		}
		return s.Flush(ctx)
	}
}
