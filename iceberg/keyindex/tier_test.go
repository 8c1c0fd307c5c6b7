package keyindex

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// tierModel drives an index with a disk tier and a map side by side.
type tierModel struct {
	t      *testing.T
	rng    *rand.Rand
	x      *Index
	dir    string
	budget int64
	want   map[string]Loc
	keys   []string // every key ever made, live or not
	file   int32    // file rows are written to now
	pos    int64

	spills, merges int // of the tiers before the last restart
}

func newTierModel(t *testing.T, seed uint64, budget int64) *tierModel {
	m := &tierModel{t: t, rng: rand.New(rand.NewPCG(seed, seed)), x: New(), dir: t.TempDir(), budget: budget, want: map[string]Loc{}}
	if err := m.x.UseDisk(m.dir, budget); err != nil {
		t.Fatal(err)
	}
	m.file = m.x.AddFile("f0")
	return m
}

// newKey returns a key never used: an integer, a short text or a uuid
// key.
func (m *tierModel) newKey() string {
	var b []byte
	switch m.rng.IntN(3) {
	case 0:
		b = binary.BigEndian.AppendUint64([]byte{8}, m.rng.Uint64()>>m.rng.IntN(64))
	case 1:
		b = appendKeyPart(nil, fmt.Appendf(nil, "k%d", m.rng.IntN(1<<30)))
	default:
		b = appendKeyPart(nil, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, m.rng.Uint64()), m.rng.Uint64()))
	}
	if _, used := m.want[string(b)]; used {
		return m.newKey()
	}
	m.keys = append(m.keys, string(b))
	return string(b)
}

func (m *tierModel) nextLoc() Loc {
	if m.pos >= 50 {
		m.file, m.pos = m.x.AddFile(fmt.Sprintf("f%d", len(m.x.Files()))), 0
	}
	m.pos++
	return Loc{File: m.file, Pos: m.pos - 1}
}

func (m *tierModel) liveKey() (string, bool) {
	for range 20 {
		k := m.keys[m.rng.IntN(len(m.keys))]
		if _, ok := m.want[k]; ok {
			return k, true
		}
	}
	return "", false
}

// check compares a lookup with the map.
func (m *tierModel) check(k string) {
	m.t.Helper()
	got, ok := m.x.Get(k)
	want, wantOK := m.want[k]
	if ok != wantOK || got != want {
		m.t.Fatalf("Get(%x) = %v, %v, want %v, %v (spills %d, merges %d)", k, got, ok, want, wantOK, m.x.disk.spills, m.x.disk.merges)
	}
}

func (m *tierModel) step() {
	switch op := m.rng.IntN(100); {
	case op < 35 || len(m.keys) == 0: // insert
		k := m.newKey()
		m.check(k)
		l := m.nextLoc()
		m.x.Set(k, l)
		m.want[k] = l
	case op < 65: // update: the mirror's lookup, delete, then insert
		if k, ok := m.liveKey(); ok {
			m.check(k)
			m.x.Del(k)
			l := m.nextLoc()
			m.x.Set(k, l)
			m.want[k] = l
		}
	case op < 85: // delete
		if k, ok := m.liveKey(); ok {
			m.check(k)
			m.x.DelBytes([]byte(k))
			delete(m.want, k)
		}
	case op < 93: // key change
		if k, ok := m.liveKey(); ok {
			m.x.Del(k)
			delete(m.want, k)
			k2 := m.newKey()
			l := m.nextLoc()
			m.x.Add([]byte(k2), l)
			m.want[k2] = l
		}
	case op < 97: // a compaction moves the rows of a file
		m.remap()
	case op < 99: // a lookup of a key not there
		m.check(string(binary.BigEndian.AppendUint64([]byte{8}, m.rng.Uint64())))
	default: // a clean restart
		m.restart()
	}
}

func (m *tierModel) remap() {
	from := int32(m.rng.IntN(len(m.x.Files())))
	to := m.x.AddFile(fmt.Sprintf("f%d", len(m.x.Files())))
	moved := map[int32][]Loc{from: make([]Loc, 600)}
	for i := range moved[from] {
		moved[from][i] = Loc{File: to, Pos: int64(599 - i)}
	}
	n, ok := m.x.Remap(moved)
	if !ok {
		m.t.Fatal("Remap failed")
	}
	got := 0
	for k, l := range m.want {
		if l.File == from {
			m.want[k] = moved[from][l.Pos]
			got++
		}
	}
	if n != got {
		m.t.Fatalf("Remap moved %d rows, want %d", n, got)
	}
}

func (m *tierModel) restart() {
	stamp := []byte(fmt.Sprintf("stamp %d", len(m.keys)))
	if err := m.x.SaveDisk(stamp); err != nil {
		m.t.Fatal(err)
	}
	files := len(m.x.Files())
	x, err := LoadDisk(m.dir, m.budget, stamp)
	if err != nil {
		m.t.Fatalf("LoadDisk: %v", err)
	}
	if len(x.Files()) != files {
		m.t.Fatalf("LoadDisk: %d files, want %d", len(x.Files()), files)
	}
	m.spills, m.merges = m.spills+m.x.disk.spills, m.merges+m.x.disk.merges
	m.x = x
	m.file, m.pos = m.x.AddFile(fmt.Sprintf("f%d", files)), 0
}

// verify compares every key and the count with the map.
func (m *tierModel) verify() {
	m.t.Helper()
	if err := m.x.Err(); err != nil {
		m.t.Fatal(err)
	}
	for _, k := range m.keys {
		m.check(k)
	}
	if m.x.Len() != len(m.want) {
		m.t.Fatalf("Len() = %d, want %d", m.x.Len(), len(m.want))
	}
}

// TestTierMatchesMap runs random inserts, updates, deletes, key changes,
// compaction moves and clean restarts against an index whose memory
// budget makes it spill every few dozen changes, and a map.
func TestTierMatchesMap(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := newTierModel(t, seed, 2048)
			// A copy first: serial keys, which the integer table keeps as
			// runs below the disk tier.
			var keys Keys
			for v := range 500 {
				k := binary.BigEndian.AppendUint64([]byte{8}, uint64(1000+v))
				keys.Push(append(keys.Tail(), k...))
				m.keys = append(m.keys, string(k))
				m.want[string(k)] = Loc{File: 0, Pos: int64(v)}
			}
			m.file, m.pos = m.x.AddFile("copy"), 50
			m.want = shiftFile(m.want, 0, m.file)
			if _, ok := m.x.AddAll(&keys, m.file); !ok {
				t.Fatal("AddAll reported a duplicate")
			}
			for i := range 10000 {
				m.step()
				if i%2000 == 0 {
					m.verify()
				}
			}
			m.verify()
			if spills, merges := m.spills+m.x.disk.spills, m.merges+m.x.disk.merges; spills < 300 || merges < 100 {
				t.Fatalf("%d spills and %d merges: the budget does not make it spill", spills, merges)
			}
		})
	}
}

func shiftFile(w map[string]Loc, from, to int32) map[string]Loc {
	for k, l := range w {
		if l.File == from {
			w[k] = Loc{File: to, Pos: l.Pos}
		}
	}
	return w
}

// TestLoadDiskStale: a manifest of another stamp, a damaged one or a run
// gone is not used, and the directory is emptied.
func TestLoadDiskStale(t *testing.T) {
	m := newTierModel(t, 9, 1024)
	for range 2000 {
		m.step()
	}
	if err := m.x.SaveDisk([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDisk(m.dir, m.budget, []byte("b")); err != ErrStale {
		t.Fatalf("LoadDisk of another stamp: %v, want ErrStale", err)
	}
	ents, _ := os.ReadDir(m.dir)
	if len(ents) != 0 {
		t.Fatalf("LoadDisk left %d files", len(ents))
	}
	if _, err := LoadDisk(filepath.Join(m.dir, "none"), m.budget, []byte("a")); err == nil {
		t.Fatal("LoadDisk without a manifest: no error")
	}
}
