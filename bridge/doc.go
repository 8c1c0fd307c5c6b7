// Package bridge owns the lifecycle of the commands that do the work: Run
// (pg2iceberg run), Backfill (pg2iceberg backfill --table), Status
// (pg2iceberg status), ServeCatalog (pg2iceberg serve) and Maintain
// (pg2iceberg maintain). main turns flags,
// environment and the configuration file into a Config and calls one of
// them; bridge never sees the command line.
//
// Run, in order: check the warehouse, open the SQL session
// (replication.Source) and take the lease, run the preflight, open the
// replication connection, the catalog (and the REST catalog server), the
// sink and every published table, serve metrics, bring the tables in line
// with the slot (create it and copy every table, or check them against it
// and finish interrupted copies), then stream: replication.Stream's Next
// returns an event (a new table, a key gained, columns added, a re-copy)
// and the bridge handles it once the event's transaction is visible to its
// SQL session (replication.WaitVisible), calling Keepalive while it copies. A
// connection lost between transactions is survived: what arrived is
// committed and the stream resumes from what is durable. At the end it
// commits what is pending, acknowledges it and saves the key indexes.
//
// Goroutines: Run starts every goroutine of the run in one errgroup and
// joins them before it returns: the run's own (everything above, including
// every call to the sink), the metrics server's and the REST catalog
// server's. A server that fails is logged and the run goes on without it;
// stopping the run stops them. The servers read only what is safe to read
// concurrently: replication.Progress and iceberg.Stats (atomics) and the
// copies' progress (a mutex-guarded map, a field of the run, not global).
// The copy's workers are replication's (an errgroup inside each copy).
// Run and Backfill also refresh the warehouse's writer lease on a
// goroutine of its own (writerlease.go), stopped and joined before they
// return. Backfill, Status and Maintain start no other; ServeCatalog
// starts its server's.
//
// Invariants: the slot is acknowledged only up to what the sink committed
// (the stream sends sink.Durable()); the lease is held for the whole run; a
// stop (ctx done) during a copy is a clean exit, and the next start copies
// what is missing; an event is handled to its end with a context that is
// never cancelled, since it belongs to the open transaction or follows its
// commit.
package bridge
