package iceberg

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// TestReadKeysNamesBothRows: rebuilding the key index from a table in
// which a key is live twice (another writer's doing) fails, naming both
// rows, for an integer key (indexed by batches, so the second row may
// meet the first in the same batch or another file's) and a text key.
func TestReadKeysNamesBothRows(t *testing.T) {
	text := mapping.Builtin(mapping.OIDText, -1)
	for _, key := range []*mapping.Type{mapping.Builtin(mapping.OIDInt8, -1), text} {
		rel := &decode.Relation{ID: 1, Schema: "public", Name: "t", ReplicaIdentity: 'd', Columns: []decode.Column{
			{Name: "id", TypeOID: key.OID, TypeMod: -1, TypeName: key.Name, Type: key, Key: true},
			{Name: "v", TypeOID: text.OID, TypeMod: -1, TypeName: "text", Type: text},
		}}
		dir := t.TempDir()
		write := func(name string, keys ...int) icego.DataFile {
			return writeDataFile(t, rel, filepath.Join(dir, name), len(keys), func(r int) []string {
				return []string{strconv.Itoa(keys[r]), "x"}
			})
		}
		serial := make([]int, 200) // a run of keys 1-200
		for i := range serial {
			serial[i] = i + 1
		}
		for _, tc := range []struct {
			name  string
			files [][]int
			want  []string // the two rows, in either order
		}{
			{"across files", [][]int{serial, {500, 150}}, []string{"a.parquet row 149", "b.parquet row 1"}},
			{"in one file", [][]int{{7, 8, 9, 8}}, []string{"a.parquet row 1", "a.parquet row 3"}},
		} {
			m := &mirror{icebergTable: &icebergTable{ident: table.Identifier{"public", "t"}, fs: icebergio.LocalFS{}}, rel: rel, index: keyindex.New()}
			var err error
			for i, keys := range tc.files {
				df := write(string(rune('a'+i))+".parquet", keys...)
				if err = m.readKeys(context.Background(), df, []int{1}, nil); err != nil {
					break
				}
			}
			both := func(a, b string) string { return "live twice (" + dir + "/" + a + " and " + dir + "/" + b + ")" }
			if err == nil || !strings.Contains(err.Error(), both(tc.want[0], tc.want[1])) && !strings.Contains(err.Error(), both(tc.want[1], tc.want[0])) {
				t.Errorf("%s key, %s: %v, want both rows: %s and %s", key.Name, tc.name, err, tc.want[0], tc.want[1])
			}
		}
	}
}
