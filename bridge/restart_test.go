package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestDiskFull(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"spool write", fmt.Errorf("spool: %w", &fs.PathError{Op: "write", Path: "/spool/x", Err: syscall.ENOSPC}), true},
		{"quota", &fs.PathError{Op: "write", Path: "/wh/x", Err: syscall.EDQUOT}, true},
		{"blob store text", errors.New(`blob (key "data/x.parquet") (code=Unknown): write /wh/data/x.parquet: no space left on device`), true},
		{"sqlite", errors.New("commit: database or disk is full (13)"), true},
		{"missing file", &fs.PathError{Op: "open", Path: "/wh/x", Err: syscall.ENOENT}, false},
		{"permission", &fs.PathError{Op: "write", Path: "/wh/x", Err: syscall.EACCES}, false},
	} {
		if got := diskFull(c.err); got != c.want {
			t.Errorf("%s: diskFull(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
