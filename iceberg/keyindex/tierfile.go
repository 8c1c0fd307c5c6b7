package keyindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// A disk tier is saved by its runs and a manifest in its directory
// (SaveDisk), stamped like the index file (see Stamp): the index's files,
// its runs' names, its integer runs and its count of live rows. The
// manifest is removed once the tier is opened again (LoadDisk), since the
// runs change from then on; after a crash there is none and the index is
// rebuilt from the table, as for a stale index file.
var manifestMagic = []byte("PG2IMAN1")

// SaveDisk spills the maps and writes the manifest of an index with a
// disk tier for stamp: written to a temporary file, synced, then renamed,
// so a crash leaves the whole manifest or none.
func (x *Index) SaveDisk(stamp []byte) error {
	t := x.disk
	if t == nil {
		return errors.New("save key index: no disk tier")
	}
	if t.err != nil {
		return fmt.Errorf("save key index: %w", t.err)
	}
	if !x.Spilled() {
		t.live = x.Len()
	}
	if err := x.spill(); err != nil {
		return fmt.Errorf("save key index: %w", err)
	}
	b := append([]byte(nil), manifestMagic...)
	b = appendBytes(b, stamp)
	b = binary.AppendUvarint(b, uint64(len(x.files)))
	for _, f := range x.files {
		b = appendBytes(b, []byte(f))
	}
	b = binary.AppendUvarint(b, uint64(len(t.runs)))
	for _, r := range t.runs {
		if err := r.f.Sync(); err != nil {
			return fmt.Errorf("save key index: sync %s: %w", r.name, err)
		}
		b = appendBytes(b, []byte(r.name))
	}
	b = binary.AppendUvarint(b, uint64(t.live))
	b = binary.AppendUvarint(b, uint64(len(x.ints.runs)))
	for _, r := range x.ints.runs {
		b = binary.AppendUvarint(b, r.key)
		b = binary.AppendUvarint(b, r.n)
		b = binary.AppendUvarint(b, r.val)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	if err := writeSynced(filepath.Join(t.dir, manifestName), b); err != nil {
		return fmt.Errorf("save key index: %w", err)
	}
	return nil
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// writeSynced writes path's contents through a synced temporary file and
// a rename, then syncs the directory.
func writeSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LoadDisk opens the disk tier saved in dir for stamp, keeping about
// budget bytes in memory, and removes its manifest. Without a manifest for
// stamp (none, another stamp, damaged, a run missing) it returns an
// error, ErrStale for another stamp, having emptied dir: the caller
// rebuilds the index into a new tier there.
func LoadDisk(dir string, budget int64, stamp []byte) (*Index, error) {
	x := New()
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err == nil {
		err = x.parseManifest(dir, budget, data, stamp)
	}
	if err != nil {
		if x.disk != nil {
			x.disk.clear()
		}
		if err2 := x.UseDisk(dir, budget); err2 != nil {
			return nil, err2
		}
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, manifestName)); err != nil {
		return nil, fmt.Errorf("key index directory: %w", err)
	}
	keep := make(map[string]bool)
	for _, r := range x.disk.runs {
		keep[r.name] = true
	}
	if err := x.disk.removeExcept(keep); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("key index directory: %w", err)
	}
	return x, nil
}

var errManifestDamaged = errors.New("key index manifest is damaged")

func (x *Index) parseManifest(dir string, budget int64, data, stamp []byte) error {
	if len(data) < len(manifestMagic)+4 || !bytes.HasPrefix(data, manifestMagic) {
		return ErrStale
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(data[len(body):]) {
		return errManifestDamaged
	}
	d := decoder{b: body[len(manifestMagic):]}
	if !bytes.Equal(d.bytes(), stamp) {
		return ErrStale
	}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		x.files = append(x.files, string(d.bytes()))
	}
	x.disk = &tier{dir: dir, budget: budget}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		name := string(d.bytes())
		r, err := openRun(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		x.disk.runs = append(x.disk.runs, r)
	}
	x.disk.live = int(d.uvarint())
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		r := intRun{key: d.uvarint(), n: d.uvarint(), val: d.uvarint()}
		x.ints.runs = append(x.ints.runs, r)
		x.ints.runKeys += int(r.n)
	}
	if d.err != nil || len(d.b) > 0 {
		return errManifestDamaged
	}
	return nil
}
