// Package evolution turns a change of a source table's shape into ordered
// Iceberg schema updates, or a typed error for a change that cannot be
// applied safely.
//
// Role in the flow: when pgoutput announces a relation whose columns differ
// from the Iceberg table's, the iceberg package asks Diff for the updates
// (add, drop, promote) and applies them to the mirror and to the
// changelog's before/after structs. The diff is taken against the Iceberg
// schema, not the previously seen relation, so a restart that replays older
// transactions never undoes a schema change. Reconcile is Diff told how to
// read what names leave open (a rename proven by its attnum, columns a copy
// drops and adds for good).
//
// Goroutines: none; its functions are called from whichever goroutine
// handles the relation (the sink's caller).
//
// Invariants:
//   - evolution is pure: no I/O, no goroutines, no logging.
//   - Of the bridge's packages it imports mapping only, never iceberg: the
//     flow's edges point one way.
//   - Field IDs are never reused: a dropped column's ID stays retired and a
//     re-added column gets a new one (iceberg-go assigns them).
//   - A change that would lose or misplace data fails with a typed error
//     before anything is written: an incompatible type change, a dropped
//     key column, or a drop and an add in one step (a rename cannot be told
//     from drop + add by relation messages alone).
package evolution
