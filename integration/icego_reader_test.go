package integration

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go/table"
)

// icegoRows reads a table with iceberg-go's scanner (position deletes
// applied) into canonical text rows, the forms pyiceberg_dump.py prints.
func icegoRows(t *testing.T, tg target, name string) []row {
	t.Helper()
	return icegoScan(t, icegoTable(t, tg, name))
}

// icegoScan scans a loaded table with iceberg-go into canonical text rows.
func icegoScan(t *testing.T, tb *table.Table, opts ...table.ScanOption) []row {
	t.Helper()
	ctx := context.Background()
	at, err := tb.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan %s with iceberg-go: %v", strings.Join(tb.Identifier(), "."), err)
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
	case *array.Float32:
		return pgFloat(float64(a.Value(i)), 32)
	case *array.Float64:
		return pgFloat(a.Value(i), 64)
	case *array.Date32:
		return canonicalDate(int64(a.Value(i)))
	case *array.Time64:
		us := int64(a.Value(i))
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			return fmt.Sprintf("%02d:%02d:%02d.%09d", us/3_600_000_000_000, us/60_000_000_000%60, us/1_000_000_000%60, us%1_000_000_000)
		}
		return fmt.Sprintf("%02d:%02d:%02d.%06d", us/3_600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000)
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		v, perSec, frac := int64(a.Value(i)), int64(1_000_000), "%06d"
		if tt.Unit == arrow.Nanosecond {
			perSec, frac = 1_000_000_000, "%09d"
		}
		secs, sub := floorDivMod(v, perSec)
		days, sod := floorDivMod(secs, 86400)
		ymd, bc := canonicalYMD(days)
		s := fmt.Sprintf("%s %02d:%02d:%02d."+frac, ymd, sod/3600, sod/60%60, sod%60, sub)
		if tt.TimeZone != "" {
			s += "+00"
		}
		if bc {
			s += " BC"
		}
		return s
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, canonical(a.ListValues(), int(j)))
		}
		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, map[string]any{"key": canonical(a.Keys(), int(j)), "value": canonical(a.Items(), int(j))})
		}
		sort.SliceStable(out, func(x, y int) bool {
			kx, _ := out[x].(map[string]any)["key"].(string)
			ky, _ := out[y].(map[string]any)["key"].(string)
			return kx < ky
		})
		return out
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

// pgFloat prints a float as PostgreSQL does (extra_float_digits > 0): the
// shortest digits that read back, positional for decimal exponents -4 to
// 14 (float4: 5), else in 1.5e+20 style.
func pgFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0 && math.Signbit(v):
		return "-0"
	case v == 0:
		return "0"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	mant, expText, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, bits), "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		digits = "0"
	}
	maxExp := 15
	if bits == 32 {
		maxExp = 6
	}
	switch {
	case exp < -4 || exp >= maxExp:
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
	case exp < 0:
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits) <= exp+1:
		return sign + digits + strings.Repeat("0", exp+1-len(digits))
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

func floorDivMod(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// canonicalYMD formats days since 1970-01-01 as YYYY-MM-DD in the
// proleptic Gregorian calendar, and whether the date is BC (PostgreSQL
// prints year 0 as 1 BC).
func canonicalYMD(days int64) (string, bool) {
	z := days + 719468
	era, doe := floorDivMod(z, 146097)
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d), bc
}

func canonicalDate(days int64) string {
	s, bc := canonicalYMD(days)
	if bc {
		s += " BC"
	}
	return s
}
