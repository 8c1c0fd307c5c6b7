package iceberg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
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
	text := func(v string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(v)} }
	var end decode.LSN = 100
	insert := func(ids ...int) error {
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
