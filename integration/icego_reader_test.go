package integration

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// icegoRows reads a table with iceberg-go's scanner (position deletes
// applied) into canonical text rows, the forms pyiceberg_dump.py prints.
func icegoRows(t *testing.T, tg target, name string) []row {
	t.Helper()
	ctx := context.Background()
	if tg.s3 != nil {
		for _, kv := range tg.s3.Env() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
	}
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{
		Warehouse: tg.warehouse, Catalog: tg.catalog,
		S3Endpoint: endpoint(tg), S3Region: "us-east-1", S3PathStyle: tg.s3 != nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns, tbl, _ := strings.Cut(name, ".")
	tb, err := cat.LoadTable(ctx, table.Identifier{ns, tbl})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	at, err := tb.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan %s with iceberg-go: %v", name, err)
	}
	defer at.Release()
	var rows []row
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			r := row{}
			for c := 0; c < int(rec.NumCols()); c++ {
				r[rec.ColumnName(c)] = canonical(rec.Column(c), i)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func endpoint(tg target) string {
	if tg.s3 == nil {
		return os.Getenv("PG2ICEBERG_S3_ENDPOINT")
	}
	return tg.s3.Endpoint
}

// canonical renders arr[i] like pyiceberg_dump.py.
func canonical(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return "t"
		}
		return "f"
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return `\x` + hex.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return `\x` + hex.EncodeToString(a.Value(i))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		ts := time.UnixMicro(int64(a.Value(i))).UTC()
		if tt.Unit == arrow.Nanosecond {
			ts = time.Unix(0, int64(a.Value(i))).UTC()
		}
		s := ts.Format("2006-01-02 15:04:05.000000")
		if tt.TimeZone != "" {
			s += "+00"
		}
		return s
	case *extensions.UUIDArray:
		return a.Value(i).String()
	case *array.Struct:
		m := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		for f := 0; f < a.NumField(); f++ {
			m[st.Field(f).Name] = canonical(a.Field(f), i)
		}
		return m
	}
	return arr.ValueStr(i)
}
