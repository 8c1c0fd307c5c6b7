package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// handledStream is a Stream with what Handled uses, and a NewTable event
// for table 7 just returned by Next.
func handledStream() (*Stream, *decode.Relation) {
	rel := &decode.Relation{ID: 7, Schema: "public", Name: "t"}
	s := &Stream{log: slog.New(slog.NewTextHandler(io.Discard, nil)), progress: &Progress{}, skipped: map[uint32]string{}}
	s.last = NewTable{Rel: rel, XID: 42}
	s.after = func(context.Context) error { return errors.New("the relation message was applied") }
	return s, rel
}

func TestHandledNewTable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		skipped    bool
		needsHuman int
	}{
		{"copied", nil, false, 0},
		{"gone", fmt.Errorf("relation 7: %w", ErrNotPublished), true, 0},
		{"unmirrorable", &UnmirrorableError{Table: "public.t", Err: errors.New("no SELECT")}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rel := handledStream()
			if err := s.Handled(tc.err); err != nil {
				t.Fatalf("Handled = %v, want nil", err)
			}
			if _, ok := s.skipped[rel.ID]; ok != tc.skipped {
				t.Errorf("skipped = %v, want %v", ok, tc.skipped)
			}
			if (s.after == nil) != tc.skipped {
				t.Errorf("relation message still to apply = %v, want %v", s.after != nil, !tc.skipped)
			}
			if n := len(s.progress.Attention()); n != tc.needsHuman {
				t.Errorf("tables needing a human = %d, want %d", n, tc.needsHuman)
			}
		})
	}
}

func TestHandledOtherErrorsEndTheStream(t *testing.T) {
	boom := errors.New("catalog unreachable")
	s, rel := handledStream()
	if err := s.Handled(boom); !errors.Is(err, boom) {
		t.Fatalf("NewTable: Handled = %v, want %v", err, boom)
	}
	if _, ok := s.skipped[rel.ID]; ok {
		t.Error("table skipped after an error that ends the stream")
	}
	s.last = Recopy{RelID: 7, XID: 42}
	unm := &UnmirrorableError{Table: "public.t", Err: errors.New("no SELECT")}
	if err := s.Handled(unm); !errors.Is(err, unm) {
		t.Fatalf("Recopy: Handled = %v, want %v", err, unm)
	}
}

func TestHandledKeyGainedUnmirrorable(t *testing.T) {
	s, _ := handledStream()
	s.last = KeyGained{RelID: 7, XID: 42}
	if err := s.Handled(&UnmirrorableError{Table: "public.t", Err: errors.New("no SELECT")}); err != nil {
		t.Fatalf("Handled = %v, want nil", err)
	}
	a := s.progress.Attention()
	if len(a) != 1 || a[0].Table != "public.t" {
		t.Fatalf("tables needing a human = %+v, want public.t", a)
	}
}
