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

// Output writes rows in one of Formats: table (aligned columns), csv (a
// header, then a line per row, NULL as empty) or json (one object per
// line).
type Output struct {
	w      io.Writer
	format string
	cols   []string
	csv    *csv.Writer
	rows   [][]string // table: the first rows, held to size the columns
	width  []int      // table: the columns' widths, once sized
	n      int
}

// tableSample is how many rows a table's column widths are sized by: the
// rows after them are written as they come, in those widths (a longer
// value shifts the rest of its line), so a large read holds no more.
const tableSample = 1000

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
		if o.width != nil {
			return writeLine(o.w, rec, o.width)
		}
		if o.rows = append(o.rows, rec); len(o.rows) == tableSample {
			return o.startTable()
		}
		return nil
	}
}

// startTable sizes the table's columns by the rows held and writes the
// header and those rows.
func (o *Output) startTable() error {
	o.width = widths(o.cols, o.rows)
	err := writeHeader(o.w, o.cols, o.width)
	for _, r := range o.rows {
		if err == nil {
			err = writeLine(o.w, r, o.width)
		}
	}
	o.rows = nil
	return err
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
	if o.width == nil {
		if err := o.startTable(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(o.w, "(%d rows)\n", o.n)
	return err
}

// widths are the widths of the columns that fit cols and rows.
func widths(cols []string, rows [][]string) []int {
	width := make([]int, len(cols))
	for i, c := range cols {
		width[i] = utf8.RuneCountInString(c)
	}
	for _, r := range rows {
		for i, v := range r {
			width[i] = max(width[i], utf8.RuneCountInString(v))
		}
	}
	return width
}

// writeHeader writes the column names and a line of dashes under them.
func writeHeader(w io.Writer, cols []string, width []int) error {
	dashes := make([]string, len(cols))
	for i := range cols {
		dashes[i] = strings.Repeat("-", width[i])
	}
	if err := writeLine(w, cols, width); err != nil {
		return err
	}
	return writeLine(w, dashes, width)
}

// writeLine writes one line of values padded to width (the last one not).
func writeLine(w io.Writer, vals []string, width []int) error {
	var b strings.Builder
	for i, v := range vals {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(v)
		if i < len(vals)-1 {
			b.WriteString(strings.Repeat(" ", max(0, width[i]-utf8.RuneCountInString(v))))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTable writes rows of text as an aligned table (for the listings):
// columns padded to their widest value.
func WriteTable(w io.Writer, cols []string, rows [][]string) error {
	width := widths(cols, rows)
	err := writeHeader(w, cols, width)
	for _, r := range rows {
		if err == nil {
			err = writeLine(w, r, width)
		}
	}
	return err
}
