package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// applyDropPolicy applies a dropped source table's drop_table policy to
// one of its Iceberg tables: dropped, or kept and marked with PropDropped
// (mark). A table whose last schema change is after the drop (a replay)
// is left as it is.
func (s *Sink) applyDropPolicy(ctx context.Context, t *icebergTable, policy string, mark []byte) error {
	if s.tx.commitLSN < schemaLSN(t.tbl) {
		return nil
	}
	if policy == "drop" {
		if err := s.cat.DropTable(ctx, t.ident); err != nil && !errors.Is(err, catalog.ErrNoSuchTable) {
			return fmt.Errorf("drop %s (its source table was dropped; drop_table: drop): %w", t.name(), err)
		}
		s.log.Info("table dropped", "table", t.name(), "policy", policy)
		return nil
	}
	if err := t.setProperties(ctx, "mark dropped:", icego.Properties{PropDropped: string(mark), PropSchemaLSN: strconv.FormatUint(uint64(s.tx.commitLSN), 10)}); err != nil {
		return err
	}
	s.log.Info("source table dropped: Iceberg table kept", "table", t.name(), "property", PropDropped)
	return nil
}

// dropMark is PropDropped's value for a drop committed in the open
// transaction.
func (s *Sink) dropMark() []byte {
	mark, _ := json.Marshal(map[string]any{"lsn": s.tx.commitLSN.String(), "at": s.tx.commitTS.UTC().Format(time.RFC3339Nano)})
	return mark
}

// applyGoneDrops follows the DROP TABLE events of the transaction just
// committed for tables the bridge has no relation for: mirrored tables
// dropped while the bridge was stopped (the start does not find them in
// the publication, so it does not open them). Their Iceberg tables are
// found by PropSourceOID (and this source's identity), wherever they are
// now, and get the table's drop_table policy; one marked dropped already
// (set aside when a table took its name) is left as it is.
func (s *Sink) applyGoneDrops(ctx context.Context, events []decode.DDLEvent) error {
	for _, ev := range events {
		name := ev.Schema + "." + ev.Table
		found, err := s.tablesOfOID(ctx, ev.RelID)
		if err != nil {
			return fmt.Errorf("find the Iceberg tables of dropped table %s: %w", name, err)
		}
		policy := s.cfg.Rules.Policies(name).DropTable
		for _, t := range found {
			if _, marked := t.tbl.Properties()[PropDropped]; marked {
				continue
			}
			if err := s.applyDropPolicy(ctx, t, policy, s.dropMark()); err != nil {
				return err
			}
		}
		if len(found) == 0 {
			s.log.Info("table dropped: no Iceberg table of it found", "table", name, "relid", ev.RelID)
		}
	}
	return nil
}

// tablesOfOID returns the Iceberg tables of the catalog that record source
// table oid (PropSourceOID) of this source (the current snapshot's
// PropSource, when it has one).
func (s *Sink) tablesOfOID(ctx context.Context, oid uint32) ([]*icebergTable, error) {
	want := strconv.FormatUint(uint64(oid), 10)
	namespaces, err := s.cat.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var out []*icebergTable
	for _, ns := range namespaces {
		var idents []table.Identifier
		for ident, err := range s.cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			idents = append(idents, ident)
		}
		for _, ident := range idents {
			tbl, err := s.cat.LoadTable(ctx, ident)
			if errors.Is(err, catalog.ErrNoSuchTable) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err)
			}
			if tbl.Properties()[PropSourceOID] != want {
				continue
			}
			if snap := tbl.CurrentSnapshot(); snap != nil && snap.Summary != nil {
				if src, ok := snap.Summary.Properties[PropSource]; ok && src != s.cfg.Source.String() {
					continue
				}
			}
			t, err := openTable(ctx, s.cat, ident, nil, nil, "", nil)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}
