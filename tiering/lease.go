package tiering

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// A writer lease tells maintenance that a bridge is writing the
// warehouse's tables, so that orphan cleanup spares the files of commits in
// flight: a small JSON file per slot, <warehouse>/.pg2iceberg/writers/<slot>.json,
// that a running bridge rewrites every LeaseRefresh and removes when it
// stops. It lives in the warehouse (not in the source database, which
// maintain does not connect to, nor in a table property, which would cost
// a commit per refresh), beside no table's files. A lease older than
// LeaseTTL is a bridge that was killed (or cannot write any more).

// Lease timing.
const (
	LeaseRefresh = 30 * time.Second
	LeaseTTL     = 3 * LeaseRefresh
)

// LeaseDir is where the leases are, under the warehouse.
const LeaseDir = "/.pg2iceberg/writers"

// Lease is one bridge's lease.
type Lease struct {
	Slot      string    `json:"slot"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Refreshed time.Time `json:"refreshed"`
}

// Fresh reports whether the lease was refreshed within LeaseTTL of now.
func (l Lease) Fresh(now time.Time) bool { return now.Sub(l.Refreshed) < LeaseTTL }

func leasePath(warehouse, slot string) string {
	return strings.TrimSuffix(warehouse, "/") + LeaseDir + "/" + slot + ".json"
}

// WriteLease writes (or refreshes) slot's lease in the warehouse.
func WriteLease(fsys icebergio.WriteFileIO, warehouse, slot string) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(Lease{Slot: slot, Host: host, PID: os.Getpid(), Refreshed: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("encode the writer lease of slot %s: %w", slot, err)
	}
	p := leasePath(warehouse, slot)
	if local, ok := strings.CutPrefix(p, "file://"); ok {
		// The local file IO does not create directories.
		if err := os.MkdirAll(path.Dir(local), 0o755); err != nil {
			return fmt.Errorf("write the writer lease %s: %w", p, err)
		}
	}
	if err := fsys.WriteFile(p, b); err != nil {
		return fmt.Errorf("write the writer lease %s: %w", p, err)
	}
	return nil
}

// RemoveLease removes slot's lease (gone already is no error).
func RemoveLease(fsys icebergio.IO, warehouse, slot string) error {
	p := leasePath(warehouse, slot)
	if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the writer lease %s: %w", p, err)
	}
	return nil
}

// ReadLeases reads every lease in the warehouse (none: an empty list). A
// lease file that cannot be read or parsed is an error: maintenance must
// not take an unreadable lease for none.
func ReadLeases(ctx context.Context, fsys icebergio.IO, warehouse string) ([]Lease, error) {
	lfs, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("read writer leases: the warehouse's file IO %T cannot list files", fsys)
	}
	dir := strings.TrimSuffix(warehouse, "/") + LeaseDir
	var out []Lease
	err := lfs.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		var l Lease
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("writer lease %s: %w", p, err)
		}
		out = append(out, l)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read writer leases under %s: %w", dir, err)
	}
	return out, nil
}
