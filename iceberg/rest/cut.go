package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/history"
)

// ConsistentWarehouse is the warehouse a client names (the warehouse
// catalog option) to read every table at one consistent cut: /v1/config
// then answers with a prefix naming the newest complete cut, and every
// table loaded under it is served as it was at that LSN. The client's
// session stays pinned to that cut; a new session gets a newer one.
const ConsistentWarehouse = "consistent"

// cutPrefix starts the prefix of a pinned cut: cut-<LSN in hex>.
const cutPrefix = "cut-"

// cutPrefixFor is the prefix that pins a session to the cut at l.
func cutPrefixFor(l decode.LSN) string { return cutPrefix + strconv.FormatUint(uint64(l), 16) }

// parseCutPrefix reads a cut-<hex> prefix; ok is false for any other.
func parseCutPrefix(p string) (decode.LSN, bool, error) {
	hex, ok := strings.CutPrefix(p, cutPrefix)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || hex == "" {
		return 0, true, fmt.Errorf("prefix %q: a pinned cut is cut-<LSN in hex> as /v1/config?warehouse=%s hands it out", p, ConsistentWarehouse)
	}
	return decode.LSN(n), true, nil
}

// currentCut is the newest complete cut of the served warehouse's tables.
func (s *Server) currentCut(ctx context.Context) (decode.LSN, error) {
	tables, err := history.SourceTables(ctx, s.cat)
	if err != nil {
		return 0, err
	}
	return history.Cut(tables)
}

// pinMetadata is the metadata JSON raw of tbl served at snapshot snap: its
// current snapshot and main branch are snap, so that an engine reading
// the table reads it as it was at the cut. Every snapshot is kept, so time
// travel still works.
func pinMetadata(raw []byte, snap *table.Snapshot) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	refs := map[string]json.RawMessage{}
	if r, ok := doc["refs"]; ok {
		if err := json.Unmarshal(r, &refs); err != nil {
			return nil, err
		}
	}
	main, err := json.Marshal(map[string]any{"snapshot-id": snap.SnapshotID, "type": "branch"})
	if err != nil {
		return nil, err
	}
	refs[table.MainBranch] = main
	if doc["refs"], err = json.Marshal(refs); err != nil {
		return nil, err
	}
	if doc["current-snapshot-id"], err = json.Marshal(snap.SnapshotID); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
