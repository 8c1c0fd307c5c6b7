package rest_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// A client naming warehouse "consistent" gets a cut-<lsn> prefix for the
// newest recorded cut, and every table loaded under it is served at that
// LSN: its current snapshot and main are the snapshot of the cut, while
// the plain prefix still serves the newest.
func TestConsistentPrefix(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	ts := f.server(t, "")
	if status, _, body := do(t, "GET", ts.URL+"/v1/config?warehouse=consistent", ""); status != 503 || !strings.Contains(body, "no consistent cut recorded yet") {
		t.Errorf("config before any cut = %d %s, want 503 saying no cut is recorded yet", status, body)
	}
	tbl := appendRowWith(t, f.table, 10, icego.Properties{iceberg.PropLSN: "100"})
	atCut := tbl.CurrentSnapshot().SnapshotID
	tbl = appendRowWith(t, tbl, 11, icego.Properties{iceberg.PropLSN: "200"})
	newest := tbl.CurrentSnapshot().SnapshotID
	if _, _, err := f.cat.CommitTable(ctx, tbl.Identifier(), nil, []table.Update{table.NewSetPropertiesUpdate(icego.Properties{
		iceberg.PropSource: "1/db/slot", iceberg.PropCut: "150"})}); err != nil {
		t.Fatal(err)
	}
	status, _, body := do(t, "GET", ts.URL+"/v1/config?warehouse=consistent", "")
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &cfg) != nil || cfg.Overrides["prefix"] != "cut-96" {
		t.Fatalf("config?warehouse=consistent = %d %s, want prefix cut-96 (LSN 150)", status, body)
	}
	for prefix, want := range map[string]int64{"cut-96": atCut, "pg2iceberg": newest, "cut-c8": newest, "cut-64": atCut} {
		status, _, body := do(t, "GET", ts.URL+"/v1/"+prefix+"/namespaces/shop/tables/orders", "")
		var resp struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &resp) != nil {
			t.Fatalf("load under %s = %d %.300s", prefix, status, body)
		}
		meta, err := table.ParseMetadataBytes(resp.Metadata)
		if err != nil {
			t.Fatalf("load under %s: %v", prefix, err)
		}
		main := maps.Collect(meta.Refs())["main"]
		if cur := meta.CurrentSnapshot(); cur == nil || cur.SnapshotID != want || main.SnapshotID != want {
			t.Errorf("load under %s: current %v, main %d; want both at snapshot %d", prefix, cur, main.SnapshotID, want)
		}
		if len(meta.Snapshots()) != 3 {
			t.Errorf("load under %s: %d snapshots, want all 3 (time travel still works)", prefix, len(meta.Snapshots()))
		}
	}
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/v1/cut-zz/namespaces/shop/tables/orders", "cut-<LSN in hex>"},
		{"GET", "/v1/cut-1/namespaces/shop/tables/orders", "cannot be read at the session's cut"},
		{"POST", "/v1/cut-96/namespaces/shop/tables/orders", "is a consistent cut, read-only"},
		{"GET", "/v1/other/namespaces", "consistent"},
	} {
		if status, _, body := do(t, tc.method, ts.URL+tc.path, ""); status < 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s = %d %s, want an error saying %q", tc.method, tc.path, status, body, tc.want)
		}
	}
}
