package replication

import (
	"fmt"
	"testing"
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
