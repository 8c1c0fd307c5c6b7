package replication

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// START_REPLICATION on an invalidated slot is a SlotLostError, in the
// words of PostgreSQL 13 to 15 and of 16 and later; another 55000 is not.
func TestStartErrorSlotLost(t *testing.T) {
	for _, msg := range []string{
		`cannot read from logical replication slot "s"`,
		`can no longer get changes from replication slot "s"`,
	} {
		err := startError("s", &pgconn.PgError{Code: "55000", Message: msg})
		var lost *SlotLostError
		if !errors.As(err, &lost) {
			t.Fatalf("%q: %v, want a SlotLostError", msg, err)
		}
		for _, w := range []string{`slot "s" was invalidated`, msg, "--on-slot-lost=recopy", "max_slot_wal_keep_size"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error lacks %q: %v", msg, w, err)
			}
		}
	}
	var lost *SlotLostError
	if err := startError("s", &pgconn.PgError{Code: "55000", Message: "something else"}); errors.As(err, &lost) {
		t.Errorf("another 55000 is a SlotLostError: %v", err)
	}
	if info := (SlotInfo{WALStatus: "lost"}); !info.Lost() || !strings.Contains(info.LostReason(), "max_slot_wal_keep_size") {
		t.Errorf("wal_status lost: Lost %v, reason %q", info.Lost(), info.LostReason())
	}
	if info := (SlotInfo{WALStatus: "reserved", Invalidation: "wal_removed"}); !info.Lost() || info.LostReason() != "invalidation_reason wal_removed" {
		t.Errorf("invalidation_reason: Lost %v, reason %q", info.Lost(), info.LostReason())
	}
	if (SlotInfo{WALStatus: "extended"}).Lost() {
		t.Error("wal_status extended is Lost")
	}
}
