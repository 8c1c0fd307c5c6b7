package replication

import (
	"fmt"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

func TestPlanChunks(t *testing.T) {
	for _, tc := range []struct {
		pages   int64
		workers int
		done    [][2]int64
		want    string
	}{
		{0, 2, nil, "[{0 0}]"},
		{100, 2, nil, "[{0 0}]"},
		{8192, 1, nil, "[{0 2048} {2048 4096} {4096 6144} {6144 0}]"},
		{20617, 2, nil, "[{0 2578} {2578 5156} {5156 7734} {7734 10312} {10312 12890} {12890 15468} {15468 18046} {18046 0}]"},
		{1 << 20, 1, nil, "[{0 65536} {65536 131072} {131072 196608} {196608 262144} {262144 327680} {327680 393216} {393216 458752} {458752 524288} {524288 589824} {589824 655360} {655360 720896} {720896 786432} {786432 851968} {851968 917504} {917504 983040} {983040 0}]"},
		// Resumed: only what the earlier run did not commit.
		{8192, 1, [][2]int64{{0, 2048}, {4096, 6144}}, "[{2048 4096} {6144 0}]"},
		{8192, 1, [][2]int64{{6144, 0}, {0, 2048}}, "[{2048 4096} {4096 6144}]"},
		{8192, 1, [][2]int64{{0, 2048}, {2048, 4096}, {4096, 6144}, {6144, 0}}, "[]"},
		// The table shrank below the committed chunks: the rest is one open chunk.
		{10, 2, [][2]int64{{0, 2048}}, "[{2048 0}]"},
	} {
		if got := fmt.Sprint(planChunks(tc.pages, tc.workers, tc.done)); got != tc.want {
			t.Errorf("planChunks(%d, %d, %v) = %s, want %s", tc.pages, tc.workers, tc.done, got, tc.want)
		}
	}
}

func TestCopyQuery(t *testing.T) {
	rel := &decode.Relation{Schema: "shop", Name: `Or"ders`, Columns: []decode.Column{{Name: "id"}, {Name: "Note"}}}
	base := copyQuery(rel)
	if want := `SELECT "id", "Note" FROM "shop"."Or""ders" WHERE true`; base != want {
		t.Errorf("copyQuery = %s, want %s", base, want)
	}
	rel.RowFilter = "id > 1"
	if got, want := copyQuery(rel), base+" AND (id > 1)"; got != want {
		t.Errorf("copyQuery with a row filter = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		c    chunk
		want string
	}{
		{chunk{0, 0}, base},
		{chunk{2048, 0}, base + " AND ctid >= '(2048,0)'"},
		{chunk{0, 2048}, base + " AND ctid < '(2048,0)'"},
		{chunk{2048, 4096}, base + " AND ctid >= '(2048,0)' AND ctid < '(4096,0)'"},
	} {
		if got := tc.c.query(base); got != tc.want {
			t.Errorf("%v.query = %s, want %s", tc.c, got, tc.want)
		}
	}
}

func TestSizeHint(t *testing.T) {
	for _, tc := range []struct {
		reltuples        float64
		statPages, pages int64
		filtered         bool
		want             int64
	}{
		{1000, 10, 10, false, 1000},
		{1000, 10, 20, false, 1000}, // grown since: never more than the statistics say
		{1000, 10, 5, false, 500},   // shrunk since: scaled down
		{1000, 10, 0, false, 0},
		{1000, 10, 10, true, 0}, // a row filter keeps any share
		{0, 10, 10, false, 0},   // never analysed (reltuples -1, read as 0)
		{1000, 0, 10, false, 0},
	} {
		if got := sizeHint(tc.reltuples, tc.statPages, tc.pages, tc.filtered); got != tc.want {
			t.Errorf("sizeHint(%v, %d, %d, %t) = %d, want %d", tc.reltuples, tc.statPages, tc.pages, tc.filtered, got, tc.want)
		}
	}
}
