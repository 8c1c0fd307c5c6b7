package history

import (
	"fmt"
	"strings"
	"testing"
)

// A small table is aligned to its widest values, NULL spelt out.
func TestOutputTableSmall(t *testing.T) {
	var b strings.Builder
	o, err := NewOutput(&b, "table", []string{"id", "name"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][]Cell{{{Text: "1"}, {Text: "alice"}}, {{Text: "1000"}, {Null: true}}} {
		if err := o.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	want := "id    name\n----  -----\n1     alice\n1000  NULL\n(2 rows)\n"
	if b.String() != want {
		t.Errorf("table output:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A large table is written as it comes once its first rows sized the
// columns: the output holds at most tableSample rows.
func TestOutputTableStreams(t *testing.T) {
	var b strings.Builder
	o, err := NewOutput(&b, "table", []string{"id", "v"})
	if err != nil {
		t.Fatal(err)
	}
	n := 3*tableSample + 7
	for i := range n {
		v := "x"
		if i == n-1 {
			v = "a much wider value than any before"
		}
		if err := o.Row([]Cell{{Text: fmt.Sprint(i)}, {Text: v}}); err != nil {
			t.Fatal(err)
		}
		if len(o.rows) > tableSample {
			t.Fatalf("%d rows held after row %d, want at most %d", len(o.rows), i, tableSample)
		}
	}
	if b.Len() == 0 {
		t.Fatal("nothing written before Close")
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != n+3 {
		t.Fatalf("%d lines, want %d (header, dashes, rows, count)", len(lines), n+3)
	}
	if lines[0] != "id   v" || lines[2] != "0    x" || lines[len(lines)-1] != fmt.Sprintf("(%d rows)", n) {
		t.Errorf("unexpected lines: %q %q ... %q", lines[0], lines[2], lines[len(lines)-1])
	}
	if got := lines[len(lines)-2]; got != fmt.Sprintf("%d  a much wider value than any before", n-1) {
		t.Errorf("last row %q", got)
	}
}
