package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// sparkRules make the type matrix readable by Spark SQL, and hold only
// what Spark cannot read: Iceberg's Spark integration has no Spark type
// for Iceberg's time, and refuses to load any table with a time column
// ("Spark does not support time fields"), so time becomes its text. The
// same rule is in docs/type-mapping.md ("Reading with Spark").
const sparkRules = `rules:
  - type: time without time zone
    to: string
`

// TestTypeMatrixSpark runs the type matrix again, with sparkRules, and
// requires Spark SQL (through the REST catalog pg2iceberg serves) to read
// every value as PostgreSQL has it: after the initial copy, by time travel
// to its snapshot, and after the stream. pyiceberg and iceberg-go read
// the same mirror as a check on the rule. The stream's transactions arrive
// streamed (logical_decoding_work_mem 64kB) and some are applied ahead of
// their commit: Spark reads the changelog, files written ahead (commit
// columns last) included, and its last after image of each row equals
// PostgreSQL's row.
func TestTypeMatrixSpark(t *testing.T) {
	t.Parallel()
	began := time.Now()
	jar := sparkJar(t)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(sparkRules), 0o644); err != nil {
		t.Fatal(err)
	}
	m := startTypeMatrixOf(t, nil, map[string]string{"logical_decoding_work_mem": "64kB"}, "--config", cfg)
	// Spark starts while the copy and the stream run.
	uri, token := serveCatalog(t, m.tg)
	spark := startSpark(t, uri, token, jar)
	cols := timeAsText(m.cols)

	waitCaughtUp(t, m.conn, typesSlot, m.b)
	copied := compareTypeMatrix(t, m.tg, m.conn, cols, "after the initial copy")
	snap := loadTable(t, m.tg, "types.matrix").CurrentSnapshot().SnapshotID
	m.stream(t)
	streamed := compareTypeMatrix(t, m.tg, m.conn, cols, "after the stream")

	read := func(sql string) []row {
		var rows []row
		spark.do(t, map[string]string{"op": "dump", "sql": sql}, &rows)
		return digestRows(rows)
	}
	compareRows(t, "Spark SQL", fmt.Sprintf("types.matrix after the initial copy (VERSION AS OF %d)", snap), "id",
		read(fmt.Sprintf("SELECT * FROM pg.types.matrix VERSION AS OF %d", snap)), copied)
	compareRows(t, "Spark SQL", "types.matrix after the stream", "id", read("SELECT * FROM pg.types.matrix"), streamed)
	if !strings.Contains(m.b.log(), "streamed transaction applied ahead") {
		t.Errorf("no transaction of the matrix was applied ahead; log:\n%s", tail(m.b.log(), 30))
	}
	if changes, ok := spark.dump(t, "SELECT * FROM pg.types.matrix__changelog"); ok {
		checkTypeChangelogRows(t, "Spark SQL", changes, m.conn, cols)
	}
	sparkRefusesTime(t, spark, m.tg)
	t.Logf("Spark session up in %.0fs; total %.0fs", spark.upAfter.Seconds(), time.Since(began).Seconds())
}

// timeAsText gives time columns the canonical form of sparkRules' string:
// PostgreSQL's text.
func timeAsText(cols []typeCol) []typeCol {
	out := make([]typeCol, len(cols))
	for i, c := range cols {
		if c.decl == "time" {
			c.canon = "canon.out(%s)"
		}
		out[i] = c
	}
	return out
}

// sparkRefusesTime keeps sparkRules honest: Spark still cannot load a
// table with a time column. When this fails, Spark reads time: drop the
// rule here and in docs/type-mapping.md.
func sparkRefusesTime(t *testing.T, spark *sparkSession, tg target) {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	schema := icego.NewSchema(0,
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int32, Required: true},
		icego.NestedField{ID: 2, Name: "t", Type: icego.PrimitiveTypes.Time})
	if _, err := cat.CreateTable(ctx, table.Identifier{"types", "clock"}, schema); err != nil {
		t.Fatal(err)
	}
	var msg *string
	if !spark.do(t, map[string]string{"op": "error", "sql": "SELECT id FROM pg.types.clock"}, &msg) {
		return
	}
	if msg == nil || !strings.Contains(*msg, "Spark does not support time fields") {
		t.Errorf("Spark reading a table with a time column: error %v, want \"Spark does not support time fields\"; if Spark reads time now, drop sparkRules' time rule (and the paragraph in docs/type-mapping.md)", msg)
		return
	}
	t.Logf("Spark refuses a table with a time column, as sparkRules assume: %s", *msg)
}

// serveCatalog serves tg's catalog with pg2iceberg serve and a fresh
// token; it returns the catalog's URI and the token.
func serveCatalog(t *testing.T, tg target) (string, string) {
	t.Helper()
	uri, token, _ := serveCatalogWith(t, tg)
	return uri, token
}

// serveCatalogWith is serveCatalog with more serve flags, and the serve
// process (for its log).
func serveCatalogWith(t *testing.T, tg target, flags ...string) (uri, token string, serve *bridge) {
	t.Helper()
	token = "types-" + fmt.Sprint(time.Now().UnixNano())
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--warehouse", tg.warehouse, "--catalog", tg.catalog, "--listen", "127.0.0.1:0", "--catalog-token-file", tokenFile}, flags...)
	serve = startBridge(t, nil, args...)
	return "http://" + listening(t, serve), token, serve
}
