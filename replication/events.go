package replication

import "github.com/pg2iceberg/pg2iceberg/decode"

// Event is something the stream met that it does not handle itself: Next
// returns it, and the caller handles it (copies a table, makes a mirror)
// before it calls Next again, calling Stream.Keepalive every few seconds
// meanwhile so the server does not time the connection out. Nothing is
// received in between, so an event is handled at its place in the WAL:
// a NewTable or ColumnsAdded inside its transaction, before the next
// change; a KeyGained or Recopy right after the commit that caused it.
// The caller passes what handling it returned to Handled. Each event
// carries the top-level XID of the transaction that raised it: the
// catalog may not show that transaction's changes yet (see WaitVisible).
type Event interface{ event() }

// NewTable is a relation message for a table the sink does not know: one
// added to the publication while streaming. The caller adds it to the sink
// and copies it (see SyncTable), or passes Handled why it cannot:
// LookupTable's ErrNotPublished (gone or no longer published) or
// *UnmirrorableError (needs a human). Either way the table is skipped, its
// changes dropped with a warning (the changes alone would make a mirror
// without the rows that came before them); so is a table the sink still
// does not have when Next is called again.
type NewTable struct {
	// Rel is the relation message's table, valid until Next is called
	// again.
	Rel *decode.Relation
	XID uint32
}

// ColumnsAdded says that schema evolution changed a table's mirror, from a
// relation message or a DDL event: existing rows may hold values no change
// event carries (ADD COLUMN ... DEFAULT, a type change's converted values,
// every row's key after a column dropped from a mirror kept by the whole
// row). The caller copies the table again, or clears the re-copy mark the
// schema commit set.
type ColumnsAdded struct {
	RelID   uint32
	Columns decode.NewColumns
	XID     uint32
}

// KeyGained follows the commit of a transaction that gave a table without
// a key one (DDL capture): the caller makes its mirror and copies the
// table.
type KeyGained struct {
	RelID uint32
	XID   uint32
}

// Recopy follows the commit of a transaction after which a table's mirror
// cannot be made exact from the stream (rows with values nobody has, see
// iceberg's closeCopyWindows): the caller copies the table again.
type Recopy struct {
	RelID uint32
	XID   uint32
}

func (NewTable) event()     {}
func (ColumnsAdded) event() {}
func (KeyGained) event()    {}
func (Recopy) event()       {}

// emit queues an event for Next to return.
func (s *Stream) emit(ev Event) { s.events = append(s.events, ev) }

// columnsAdded emits what the sink reported of a relation message or DDL
// event of table relID.
func (s *Stream) columnsAdded(relID uint32, cols *decode.NewColumns) {
	if cols != nil {
		s.emit(ColumnsAdded{RelID: relID, Columns: *cols, XID: s.txXID})
	}
}

// committed emits what the sink reported of the commit of transaction
// xid: first the tables given a key, then those to copy again.
func (s *Stream) committed(xid uint32, keyGained, recopy []uint32) {
	for _, id := range keyGained {
		s.emit(KeyGained{RelID: id, XID: xid})
	}
	for _, id := range recopy {
		s.emit(Recopy{RelID: id, XID: xid})
	}
}

// Handled takes what handling the event Next returned last gave, and
// returns the error that ends the stream: nil when the stream answers it
// itself (a NewTable for a table gone, no longer published or that cannot
// be mirrored as it is, see newTableFailed; a KeyGained for a table that
// cannot be mirrored, see keyGainedFailed).
func (s *Stream) Handled(err error) error {
	ev := s.last
	s.last = nil
	if err == nil {
		return nil
	}
	switch ev := ev.(type) {
	case NewTable:
		return s.newTableFailed(ev.Rel, err)
	case KeyGained:
		return s.keyGainedFailed(ev.RelID, err)
	}
	return err
}
