package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// sortedFilesScript reports, for each Parquet file argv[3:], as pyarrow
// reads it: whether its rows are in (n asc, id desc) order, or, with
// argv[1] "n", in n order; its row groups; and how many of them a reader's
// statistics filter keeps for n BETWEEN argv[2] (lo,hi).
const sortedFilesScript = `import sys, json, pyarrow.parquet as pq
by = sys.argv[1]
lo, hi = json.loads(sys.argv[2])
for f in sys.argv[3:]:
    pf = pq.ParquetFile(f)
    t = pf.read(columns=["n", "id"])
    rows = list(zip(t.column("n").to_pylist(), t.column("id").to_pylist()))
    if by == "n":
        key = lambda r: r[0]
    else:
        key = lambda r: (r[0], -r[1])
    ok = all(key(a) <= key(b) for a, b in zip(rows, rows[1:]))
    col = pf.schema_arrow.get_field_index("n")
    groups = pf.metadata.num_row_groups
    kept = 0
    for g in range(groups):
        st = pf.metadata.row_group(g).column(col).statistics
        if st.min <= hi and st.max >= lo:
            kept += 1
    print(json.dumps({"file": f, "sorted": ok, "groups": groups, "kept": kept, "rows": len(rows)}))`

// sortedFile is what sortedFilesScript reports of one file.
type sortedFile struct {
	File   string `json:"file"`
	Sorted bool   `json:"sorted"`
	Groups int    `json:"groups"`
	Kept   int    `json:"kept"`
	Rows   int    `json:"rows"`
}

// sortedFiles checks the live data files of a table with pyarrow (see
// sortedFilesScript), for the n range [lo, hi].
func sortedFiles(t *testing.T, tg target, name, by string, lo, hi int) []sortedFile {
	t.Helper()
	data, _ := liveFilePaths(t, tg, name)
	out, err := exec.Command("python3", append([]string{"-c", sortedFilesScript, by, fmt.Sprintf("[%d, %d]", lo, hi)}, data...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow %s: %v\n%s", name, err, out)
	}
	var files []sortedFile
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var f sortedFile
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("pyarrow %q: %v", line, err)
		}
		files = append(files, f)
	}
	return files
}

// sortOrderIDs counts the live data files of tbl by the sort order id
// their manifest entries record.
func sortOrderIDs(t *testing.T, tbl *table.Table) map[int]int {
	t.Helper()
	fsys, manifests := currentManifests(t, tbl)
	ids := map[int]int{}
	for _, m := range manifests {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			if df := e.DataFile(); df.ContentType() == icego.EntryContentData {
				id := 0
				if p := df.SortOrderID(); p != nil {
					id = *p
				}
				ids[id]++
			}
		}
	}
	return ids
}

// rowGroupsKept sums the row groups a statistics filter keeps over files,
// and their row groups.
func rowGroupsKept(files []sortedFile) (kept, groups int) {
	for _, f := range files {
		kept += f.Kept
		groups += f.Groups
	}
	return kept, groups
}

// A mirror sorted by the configuration (sort: n, id desc) writes the
// order to its metadata and every data file sorted by it, the copy's, the
// stream's (several batches of one file sorted together) and the
// compaction's, with the order's id in the manifests. Updates and deletes
// of rows in a flush's own files before they close, of rows in the sorted
// files of earlier flushes and in compacted files delete exactly the rows
// meant: the key index and the position deletes hold the sorted
// positions. A range predicate keeps fewer row groups (pyarrow's
// statistics) than on the same rows unsorted. A sort order another writer
// sets (as Spark's ALTER TABLE ... WRITE ORDERED BY does) is followed by
// the files written after it.
func TestSortOrder(t *testing.T) {
	t.Parallel()
	const rows = `SELECT g, (g * 7919) %% 10000, 'v' || g FROM generate_series(%d, %d) g`
	pg, conn := startSource(t, `CREATE TABLE s (id int PRIMARY KEY, n bigint NOT NULL, v text);
		CREATE TABLE u (id int PRIMARY KEY, n bigint NOT NULL, v text);
		INSERT INTO s `+fmt.Sprintf(rows, 1, 30000)+`;
		INSERT INTO u `+fmt.Sprintf(rows, 1, 30000)+`;
		CREATE PUBLICATION sort_pub FOR TABLE s, u;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	writeCfg := func(compact string) {
		if err := os.WriteFile(cfg, []byte(`tables:
  - table: public.s
    sort: ["n", "id desc"]
    properties: {write.parquet.row-group-size-bytes: 1, write.parquet.page-size-bytes: 4096}  # a row group per batch of 8192 rows
    compaction: `+compact+`
  - table: public.u
    properties: {write.parquet.row-group-size-bytes: 1, write.parquet.page-size-bytes: 4096}
    compaction: {enabled: false}
`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("{enabled: false}")
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "sort_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_sort_pub", b)
	check := func(when string) {
		t.Helper()
		for _, name := range []string{"s", "u"} {
			compareRows(t, "pyiceberg", name+" "+when, "id", pyicebergRows(t, tg, "public."+name), pgRows(t, conn, "id, n, v", name))
		}
	}
	// One transaction: 15000 rows into one file of the flush (two batches
	// sorted together), rows of it updated and deleted before it closes,
	// copied rows updated and deleted.
	for _, name := range []string{"s", "u"} {
		exec1(t, conn, `BEGIN; INSERT INTO `+name+` `+fmt.Sprintf(rows, 30001, 45000)+`;
			UPDATE `+name+` SET v = 'same flush', n = n + 5 WHERE id > 30000 AND id % 10 = 0;
			DELETE FROM `+name+` WHERE id > 30000 AND id % 17 = 0;
			UPDATE `+name+` SET v = 'copied' WHERE id <= 30000 AND id % 97 = 0;
			DELETE FROM `+name+` WHERE id <= 30000 AND id % 89 = 0; COMMIT`)
	}
	waitCaughtUp(t, conn, "pg2iceberg_sort_pub", b)
	check("after the first flush")
	// Rows of the flush's sorted file and of the copy's, by the positions
	// the key index holds.
	exec1(t, conn, `UPDATE s SET v = 'later', n = 10000 - n WHERE id % 7 = 0`)
	exec1(t, conn, `DELETE FROM s WHERE id % 13 = 0`)
	exec1(t, conn, `UPDATE u SET v = 'later', n = 10000 - n WHERE id % 7 = 0`)
	exec1(t, conn, `DELETE FROM u WHERE id % 13 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_sort_pub", b)
	b.stop(t)
	check("after the second flush")

	s := loadTable(t, tg, "public.s")
	if got := s.SortOrder().String(); !strings.Contains(got, "asc nulls-first") || !strings.Contains(got, "desc nulls-last") || s.SortOrder().Len() != 2 {
		t.Errorf("public.s sort order %s, want n asc nulls-first, id desc nulls-last", got)
	}
	if ids := sortOrderIDs(t, s); ids[s.SortOrder().OrderID()] == 0 || len(ids) != 1 {
		t.Errorf("public.s data files by sort order id: %v, want all %d", ids, s.SortOrder().OrderID())
	}
	sFiles, uFiles := sortedFiles(t, tg, "public.s", "n,id", 1000, 1100), sortedFiles(t, tg, "public.u", "n,id", 1000, 1100)
	for _, f := range sFiles {
		if !f.Sorted {
			t.Errorf("public.s file %s (%d rows) is not sorted by n, id desc", filepath.Base(f.File), f.Rows)
		}
	}
	sKept, sGroups := rowGroupsKept(sFiles)
	uKept, uGroups := rowGroupsKept(uFiles)
	t.Logf("n BETWEEN 1000 AND 1100: sorted keeps %d of %d row groups in %d files, unsorted %d of %d in %d files", sKept, sGroups, len(sFiles), uKept, uGroups, len(uFiles))
	if sKept > 2*len(sFiles) || sKept >= uKept {
		t.Errorf("a range predicate keeps %d row groups of the sorted mirror (%d files), %d of the unsorted: want at most two a file, and fewer", sKept, len(sFiles), uKept)
	}

	// Another writer sorts u by n (Spark's ALTER TABLE u WRITE ORDERED BY
	// n): the files written after it are sorted, under its id.
	u := loadTable(t, tg, "public.u")
	order, err := table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{fieldID(t, tg, "public.u", "n")}, Transform: icego.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
	if err != nil {
		t.Fatal(err)
	}
	txn := u.NewTransaction()
	if err := txn.ReplaceSortOrder(order); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}

	// With compaction on, the bridge's own compaction rewrites s's files
	// into sorted ones while the stream goes on into them.
	writeCfg("{min_input_files: 2}")
	b = startBridge(t, nil, runArgs(pg, "sort_pub", tg, "--flush-interval", "1s", "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_sort_pub", b)
	exec1(t, conn, `INSERT INTO u `+fmt.Sprintf(rows, 50001, 60000))
	for i := 0; !strings.Contains(b.log(), `msg="compaction installed" table=public.s `); i++ {
		exec1(t, conn, fmt.Sprintf(`UPDATE s SET v = 'tick %d' WHERE id %% 50 = %d`, i, i%50))
		waitCaughtUp(t, conn, "pg2iceberg_sort_pub", b)
		if i > 60 {
			t.Fatalf("no compaction of public.s installed; log:\n%s", tail(b.log(), 30))
		}
	}
	exec1(t, conn, `UPDATE s SET v = 'after compaction', n = n + 1 WHERE id % 3 = 0`)
	exec1(t, conn, `DELETE FROM s WHERE id % 11 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_sort_pub", b)
	b.stop(t)
	check("after compaction")
	compareRows(t, "iceberg-go", "s after compaction", "id", icegoRows(t, tg, "public.s"), pgRows(t, conn, "id, n, v", "s"))
	for _, f := range sortedFiles(t, tg, "public.s", "n,id", 0, 0) {
		if !f.Sorted {
			t.Errorf("public.s file %s (%d rows) after compaction is not sorted by n, id desc", filepath.Base(f.File), f.Rows)
		}
	}
	if ids := sortOrderIDs(t, loadTable(t, tg, "public.s")); ids[0] != 0 {
		t.Errorf("public.s data files by sort order id after compaction: %v, want none unsorted", ids)
	}
	u = loadTable(t, tg, "public.u")
	ids := sortOrderIDs(t, u)
	if ids[u.SortOrder().OrderID()] == 0 || u.SortOrder().OrderID() == 0 {
		t.Errorf("public.u data files by sort order id: %v, want the new files under %d", ids, u.SortOrder().OrderID())
	}
	// u's new files are sorted by n; its old ones (sort order id 0) need not.
	sorted := 0
	for _, f := range sortedFiles(t, tg, "public.u", "n", 0, 0) {
		if f.Sorted && f.Rows == 10000 {
			sorted++
		}
	}
	if sorted != 1 {
		t.Errorf("public.u: %d sorted files of the 10000 rows inserted after its sort order was set, want 1", sorted)
	}
}
