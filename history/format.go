package history

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// Cell is one value as the outputs print it: JSON for --format json, text
// for table and csv.
type Cell struct {
	JSON any // nil for NULL
	Text string
	Null bool
}

// cellOf is arr[i] as a Cell.
func cellOf(arr arrow.Array, i int) Cell {
	if arr.IsNull(i) {
		return Cell{Null: true}
	}
	return Cell{JSON: arr.GetOneForMarshal(i), Text: arr.ValueStr(i)}
}

// Formats are the --format values.
var Formats = []string{"table", "csv", "json"}

// Output writes rows in one of Formats: table (aligned columns, written
// at Close), csv (a header, then a line per row, NULL as empty) or json
// (one object per line).
type Output struct {
	w      io.Writer
	format string
	cols   []string
	csv    *csv.Writer
	rows   [][]string // table: held until Close to size the columns
	n      int
}

// CheckFormat says whether format is one of Formats.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("--format %q: use %s", format, strings.Join(Formats, ", "))
	}
	return nil
}

// NewOutput starts an output of cols in format.
func NewOutput(w io.Writer, format string, cols []string) (*Output, error) {
	if err := CheckFormat(format); err != nil {
		return nil, err
	}
	o := &Output{w: w, format: format, cols: cols}
	if format == "csv" {
		o.csv = csv.NewWriter(w)
		if err := o.csv.Write(cols); err != nil {
			return nil, fmt.Errorf("write csv: %w", err)
		}
	}
	return o, nil
}

// Row writes one row of cells, one per column.
func (o *Output) Row(cells []Cell) error {
	o.n++
	switch o.format {
	case "csv":
		rec := make([]string, len(cells))
		for i, c := range cells {
			rec[i] = c.Text
		}
		return o.csv.Write(rec)
	case "json":
		var b strings.Builder
		b.WriteByte('{')
		for i, c := range cells {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(o.cols[i])
			v, err := json.Marshal(c.JSON)
			if err != nil {
				return fmt.Errorf("column %s: %w", o.cols[i], err)
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteString("}\n")
		_, err := io.WriteString(o.w, b.String())
		return err
	default:
		rec := make([]string, len(cells))
		for i, c := range cells {
			rec[i] = c.Text
			if c.Null {
				rec[i] = "NULL"
			}
		}
		o.rows = append(o.rows, rec)
		return nil
	}
}

// Close writes what is held and flushes.
func (o *Output) Close() error {
	switch o.format {
	case "csv":
		o.csv.Flush()
		return o.csv.Error()
	case "json":
		return nil
	}
	return writeTable(o.w, o.cols, o.rows, fmt.Sprintf("(%d rows)", o.n))
}

// writeTable writes rows under a header, columns padded to their widest
// value, and a last line (may be "").
func writeTable(w io.Writer, cols []string, rows [][]string, last string) error {
	width := make([]int, len(cols))
	for i, c := range cols {
		width[i] = utf8.RuneCountInString(c)
	}
	for _, r := range rows {
		for i, v := range r {
			width[i] = max(width[i], utf8.RuneCountInString(v))
		}
	}
	var b strings.Builder
	line := func(vals []string) {
		for i, v := range vals {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(v)
			if i < len(vals)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(v)))
			}
		}
		b.WriteByte('\n')
	}
	line(cols)
	dashes := make([]string, len(cols))
	for i := range cols {
		dashes[i] = strings.Repeat("-", width[i])
	}
	line(dashes)
	for _, r := range rows {
		line(r)
	}
	if last != "" {
		b.WriteString(last + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTable writes rows of text as an aligned table (for the listings).
func WriteTable(w io.Writer, cols []string, rows [][]string) error {
	return writeTable(w, cols, rows, "")
}
