package decode_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and the FuzzDecode seed corpus from testdata/*.bin")

// scenarios are the captured files (see capture_test.go).
var scenarios = []string{"dml", "full", "truncate", "toast", "message", "origin", "stream", "stream_abort", "stream_ddl"}

// readBin reads a capture file: length-prefixed XLogData payloads.
func readBin(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".bin"))
	if err != nil {
		t.Fatalf("read capture (refresh with -capture): %v", err)
	}
	var msgs [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("%s.bin: truncated length prefix", name)
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(len(b)-4) < uint64(n) {
			t.Fatalf("%s.bin: message %d: length %d beyond end of file", name, len(msgs), n)
		}
		msgs = append(msgs, b[4:4+n:4+n])
		b = b[4+n:]
	}
	return msgs
}

// event is one decoded message in the order the bridge applies it: messages
// spooled inside a stream segment appear at their STREAM COMMIT.
type event struct {
	msg      decode.Message
	replayed bool // decoded with DecodeStreamed at STREAM COMMIT
}

// spoolKinds are the message kinds that belong to a streamed transaction
// when they arrive inside one of its segments: the changes, logical
// messages, and also the relation and type messages, which describe the
// transaction's own view of the table (pgoutput sends them again after an
// abort, and records them as sent only at the commit).
const spoolKinds = "IUDTMRY"

// player feeds payloads to a Decoder the way replication/stream.go does:
// inside a stream segment, messages of the spooled kinds are kept (by
// top-level XID, tagged with their subtransaction XID) and decoded with
// DecodeStreamed when the transaction commits; STREAM ABORT drops them.
type player struct {
	spool  map[uint32][]spooled
	kinds  string // message kinds spooled inside a segment
	dec    decode.Decoder
	cur    uint32
	out    strings.Builder
	events []event
	// atReceive is each spooled message decoded on arrival by shadow, to
	// compare with its replay.
	shadow    decode.Decoder
	atReceive map[*byte]string
	segCounts map[byte]int
}

type spooled struct {
	sub  uint32
	data []byte
}

func newPlayer(kinds string) *player {
	return &player{kinds: kinds, spool: make(map[uint32][]spooled), atReceive: make(map[*byte]string), segCounts: make(map[byte]int)}
}

func (p *player) feed(data []byte) error {
	// The shadow decoder takes every message as it arrives; a spooled
	// message must decode at replay as it did on arrival.
	shadowMsg, err := p.shadow.Decode(data)
	if err != nil {
		return fmt.Errorf("decode on arrival: %w", err)
	}
	if p.dec.InStream() && len(data) >= 5 && strings.IndexByte(p.kinds, data[0]) >= 0 {
		p.atReceive[&data[0]] = render(shadowMsg)
		p.spool[p.cur] = append(p.spool[p.cur], spooled{sub: binary.BigEndian.Uint32(data[1:5]), data: data})
		p.segCounts[data[0]]++
		return nil
	}
	msg, err := p.dec.Decode(data)
	if err != nil {
		return err
	}
	indent := ""
	if p.dec.InStream() {
		if _, ok := msg.(*decode.StreamStart); !ok {
			indent = "  "
		}
	}
	if _, ok := msg.(*decode.StreamStop); ok {
		p.out.WriteString("  spooled" + countsString(p.segCounts) + "\n")
		p.segCounts = make(map[byte]int)
	}
	p.out.WriteString(indent + render(msg) + "\n")
	p.events = append(p.events, event{msg: msg})
	switch m := msg.(type) {
	case *decode.StreamStart:
		p.cur = m.XID
	case *decode.StreamAbort:
		if m.SubXID == m.XID {
			fmt.Fprintf(&p.out, "  discarded %d spooled messages\n", len(p.spool[m.XID]))
			delete(p.spool, m.XID)
			break
		}
		kept := p.spool[m.XID][:0:0]
		n := 0
		for _, s := range p.spool[m.XID] {
			if s.sub == m.SubXID {
				n++
				continue
			}
			kept = append(kept, s)
		}
		fmt.Fprintf(&p.out, "  discarded %d spooled messages of subtransaction %d\n", n, m.SubXID)
		p.spool[m.XID] = kept
	case *decode.StreamCommit:
		for _, s := range p.spool[m.XID] {
			r, err := p.dec.DecodeStreamed(s.data)
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			if p.dec.InStream() {
				return fmt.Errorf("DecodeStreamed left the decoder in a stream segment")
			}
			got := render(r)
			if want := p.atReceive[&s.data[0]]; got != want {
				return fmt.Errorf("replayed message renders as\n%s\nbut decoded in its segment as\n%s", got, want)
			}
			p.out.WriteString("  replay " + got + "\n")
			p.events = append(p.events, event{msg: r, replayed: true})
		}
		delete(p.spool, m.XID)
	}
	return nil
}

func countsString(c map[byte]int) string {
	keys := make([]int, 0, len(c))
	for k := range c {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %c=%d", k, c[byte(k)])
	}
	if b.Len() == 0 {
		return " nothing"
	}
	return b.String()
}

func play(t testing.TB, name string) *player { return playWith(t, name, spoolKinds) }

func playWith(t testing.TB, name, kinds string) *player {
	t.Helper()
	p := newPlayer(kinds)
	for i, m := range readBin(t, name) {
		if err := p.feed(m); err != nil {
			t.Fatalf("%s message %d (%q, %d bytes): %v", name, i, m[0], len(m), err)
		}
	}
	if len(p.spool) != 0 {
		t.Errorf("%s: %d streamed transactions neither committed nor aborted", name, len(p.spool))
	}
	return p
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// render prints a message as one line of text.
func render(m decode.Message) string {
	switch m := m.(type) {
	case *decode.Begin:
		return fmt.Sprintf("Begin xid=%d final_lsn=%s commit_time=%s", m.XID, m.FinalLSN, ts(m.CommitTime))
	case *decode.Commit:
		return fmt.Sprintf("Commit commit_lsn=%s end_lsn=%s commit_time=%s", m.CommitLSN, m.EndLSN, ts(m.CommitTime))
	case *decode.StreamStart:
		return fmt.Sprintf("StreamStart xid=%d first=%t", m.XID, m.First)
	case *decode.StreamStop:
		return "StreamStop"
	case *decode.StreamCommit:
		return fmt.Sprintf("StreamCommit xid=%d commit_lsn=%s end_lsn=%s commit_time=%s", m.XID, m.CommitLSN, m.EndLSN, ts(m.CommitTime))
	case *decode.StreamAbort:
		return fmt.Sprintf("StreamAbort xid=%d subxid=%d", m.XID, m.SubXID)
	case *decode.RelationMessage:
		r := m.Rel
		var cols []string
		for _, c := range r.Columns {
			s := fmt.Sprintf("%s:%d:%d", c.Name, c.TypeOID, c.TypeMod)
			if c.Key {
				s += ":key"
			}
			cols = append(cols, s)
		}
		old := "none"
		if m.Old != nil {
			old = fmt.Sprintf("%d columns", len(m.Old.Columns))
		}
		return fmt.Sprintf("Relation %s id=%d identity=%c columns=[%s] old=%s", r.QualifiedName(), r.ID, r.ReplicaIdentity, strings.Join(cols, " "), old)
	case *decode.Change:
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s xid=%d", opName(m.Op), m.Rel.QualifiedName(), m.XID)
		if m.Before != nil {
			which := "old"
			if m.BeforeIsKey {
				which = "key"
			}
			fmt.Fprintf(&b, " before[%s]=%s", which, renderTuple(m.Rel, m.Before))
		}
		if m.After != nil {
			fmt.Fprintf(&b, " after=%s", renderTuple(m.Rel, m.After))
		}
		return b.String()
	case *decode.TruncateMessage:
		var names []string
		for _, r := range m.Rels {
			names = append(names, r.QualifiedName())
		}
		return fmt.Sprintf("Truncate xid=%d cascade=%t rels=[%s]", m.XID, m.Cascade, strings.Join(names, " "))
	case *decode.LogicalMessage:
		return fmt.Sprintf("LogicalMessage xid=%d lsn=%s transactional=%t prefix=%q content=%s", m.XID, m.LSN, m.Transactional, m.Prefix, renderBytes(m.Content))
	case *decode.TypeMessage:
		return fmt.Sprintf("Type oid=%d %s.%s", m.OID, m.Namespace, m.Name)
	case *decode.Origin:
		return fmt.Sprintf("Origin name=%q", m.Name)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("unknown message %T", m)
}

func opName(o decode.Op) string {
	switch o {
	case decode.Insert:
		return "Insert"
	case decode.Update:
		return "Update"
	case decode.Delete:
		return "Delete"
	}
	return "Op(" + o.String() + ")"
}

func renderTuple(rel *decode.Relation, tup decode.Tuple) string {
	parts := make([]string, len(tup))
	for i, d := range tup {
		name := strconv.Itoa(i)
		if i < len(rel.Columns) {
			name = rel.Columns[i].Name
		}
		parts[i] = name + "=" + renderDatum(d)
	}
	return "(" + strings.Join(parts, " ") + ")"
}

func renderDatum(d decode.Datum) string {
	switch d.Kind {
	case decode.Null:
		return "NULL"
	case decode.Unchanged:
		return "UNCHANGED-TOAST"
	case decode.Text:
		return renderBytes(d.Data)
	case decode.Binary:
		return "binary:" + renderBytes(d.Data)
	}
	return fmt.Sprintf("kind(%d):%s", d.Kind, renderBytes(d.Data))
}

// renderBytes quotes a value, shortening long ones to a prefix, their
// length and a hash so the golden files stay readable.
func renderBytes(b []byte) string {
	const max = 48
	if len(b) <= max {
		return strconv.Quote(string(b))
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s...(%d bytes sha256:%x)", strconv.Quote(string(b[:max])), len(b), sum[:6])
}

func TestGolden(t *testing.T) {
	for _, name := range scenarios {
		t.Run(name, func(t *testing.T) {
			got := play(t, name).out.String()
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (refresh with -update)", err)
			}
			if got != string(want) {
				t.Errorf("decoded %s.bin differs from %s (refresh with -update if intended):\n%s", name, path, lineDiff(got, string(want)))
			}
		})
	}
}

// lineDiff shows the first differing lines.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

// changes returns the changes of the named table, in apply order.
func changes(p *player, table string) []*decode.Change {
	var out []*decode.Change
	for _, e := range p.events {
		if c, ok := e.msg.(*decode.Change); ok && c.Rel.QualifiedName() == table {
			out = append(out, c)
		}
	}
	return out
}

func col(t *testing.T, c *decode.Change, tup decode.Tuple, name string) decode.Datum {
	t.Helper()
	i := c.Rel.ColumnIndex(name)
	if i < 0 {
		t.Fatalf("%s has no column %q", c.Rel.QualifiedName(), name)
	}
	return tup[i]
}

func wantText(t *testing.T, what string, d decode.Datum, want string) {
	t.Helper()
	if d.Kind != decode.Text || string(d.Data) != want {
		t.Errorf("%s = %s, want %q", what, renderDatum(d), want)
	}
}

func wantKind(t *testing.T, what string, d decode.Datum, want decode.Kind) {
	t.Helper()
	if d.Kind != want {
		t.Errorf("%s = %s, want kind %d", what, renderDatum(d), want)
	}
	if want != decode.Text && want != decode.Binary && d.Data != nil {
		t.Errorf("%s carries data %q for a datum without a value", what, d.Data)
	}
}

func TestCapturedDML(t *testing.T) {
	p := play(t, "dml")
	cs := changes(p, "public.basic")
	ops := ""
	for _, c := range cs {
		ops += c.Op.String()
	}
	if want := "IIIUUDIUDI"; ops != want {
		t.Fatalf("ops on public.basic = %s, want %s", ops, want)
	}

	ins := cs[0]
	if ins.Before != nil || ins.XID != 0 {
		t.Errorf("insert: before = %v, xid = %d; want no before image and xid 0 outside a stream", ins.Before, ins.XID)
	}
	for name, want := range map[string]string{
		"id": "1", "small": "-32768", "big": "9223372036854775807", "price": "12345678.90",
		"amount": "NaN", "ratio": "1.5", "score": "0.1", "flag": "t", "name": "häagen", "code": "ab ",
		"note": "tab\there\nnewline \"quoted\" \\ back", "payload": `\x00ff10`, "doc": `{"a": [1, 2.5, null]}`,
		"uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "day": "0001-12-31 BC", "at": "24:00:00",
		"ts": "2000-02-29 12:34:56.789", "tstz": "1999-12-31 18:29:59.999999+00", "m": "happy",
	} {
		wantText(t, "insert 1 "+name, col(t, ins, ins.After, name), want)
	}
	for _, c := range ins.Rel.Columns {
		if i := ins.Rel.ColumnIndex(c.Name); (c.Name == "id") != c.Key || i < 0 {
			t.Errorf("column %s: key = %t", c.Name, c.Key)
		}
	}
	nulls := cs[1]
	for i, d := range nulls.After {
		if i == 0 {
			wantText(t, "insert 2 id", d, "2")
			continue
		}
		wantKind(t, "insert 2 "+nulls.Rel.Columns[i].Name, d, decode.Null)
	}
	edge := cs[2]
	for name, want := range map[string]string{
		"amount": "-0.000000000000000000000000000000000000000012345", "ratio": "Infinity", "score": "-Infinity",
		"day": "infinity", "ts": "-infinity", "tstz": "10000-01-01 00:00:00+00",
	} {
		wantText(t, "insert 3 "+name, col(t, edge, edge.After, name), want)
	}

	// UPDATE not touching the key: no before image.
	if u := cs[3]; u.Before != nil || u.BeforeIsKey {
		t.Errorf("update without key change: before = %s (key %t), want none", renderTuple(u.Rel, u.Before), u.BeforeIsKey)
	}
	// UPDATE changing the key: key-only before image.
	u := cs[4]
	if !u.BeforeIsKey || u.Before == nil {
		t.Fatalf("update of the key: BeforeIsKey = %t, before = %v; want a key image", u.BeforeIsKey, u.Before)
	}
	wantText(t, "key update before id", col(t, u, u.Before, "id"), "2")
	wantText(t, "key update after id", col(t, u, u.After, "id"), "20")
	for i, d := range u.Before {
		if !u.Rel.Columns[i].Key {
			wantKind(t, "key update before "+u.Rel.Columns[i].Name, d, decode.Null)
		}
	}
	d := cs[5]
	if !d.BeforeIsKey || d.After != nil {
		t.Errorf("delete: BeforeIsKey = %t, after = %v; want key image and no after", d.BeforeIsKey, d.After)
	}
	wantText(t, "delete before id", col(t, d, d.Before, "id"), "20")

	// Replica identity using an index: the key is (a, b).
	bi := changes(p, "public.by_index")
	if len(bi) != 4 {
		t.Fatalf("%d changes on by_index, want 4", len(bi))
	}
	if got := bi[0].Rel.KeyColumns(); fmt.Sprint(got) != "[0 1]" || bi[0].Rel.ReplicaIdentity != 'i' {
		t.Errorf("by_index key columns %v identity %c, want [0 1] i", got, bi[0].Rel.ReplicaIdentity)
	}
	if bi[1].Before != nil {
		t.Errorf("by_index update of c only has a before image %s", renderTuple(bi[1].Rel, bi[1].Before))
	}
	if k := bi[2]; !k.BeforeIsKey || k.Before == nil {
		t.Errorf("by_index update of a: want key image, got %v", k.Before)
	} else {
		wantText(t, "by_index before a", k.Before[0], "1")
		wantText(t, "by_index before b", k.Before[1], "2")
		wantKind(t, "by_index before c", k.Before[2], decode.Null)
	}

	// ALTER TABLE ADD COLUMN: a new relation message carrying the old shape.
	var rels []*decode.RelationMessage
	for _, e := range p.events {
		if r, ok := e.msg.(*decode.RelationMessage); ok && r.Rel.Name == "basic" {
			rels = append(rels, r)
		}
	}
	if len(rels) != 2 {
		t.Fatalf("%d relation messages for basic, want 2", len(rels))
	}
	if rels[0].Old != nil || rels[1].Old != rels[0].Rel {
		t.Errorf("relation Old: first %v, second %p; want nil and the first relation %p", rels[0].Old, rels[1].Old, rels[0].Rel)
	}
	if n0, n1 := len(rels[0].Rel.Columns), len(rels[1].Rel.Columns); n1 != n0+1 || rels[1].Rel.Columns[n1-1].Name != "extra" {
		t.Errorf("columns before/after ADD COLUMN: %d, %d", n0, n1)
	}
	if last := cs[len(cs)-1]; last.Rel != rels[1].Rel || len(last.After) != len(rels[1].Rel.Columns) {
		t.Errorf("insert after ADD COLUMN uses relation %p with %d values, want %p", last.Rel, len(last.After), rels[1].Rel)
	}
	if r, ok := p.dec.Relation(rels[1].Rel.ID); !ok || r != rels[1].Rel {
		t.Errorf("Relation(%d) = %p, %t; want the newest shape", rels[1].Rel.ID, r, ok)
	}

	// The enum column is announced by a Type message before its relation.
	var typ *decode.TypeMessage
	for _, e := range p.events {
		if m, ok := e.msg.(*decode.TypeMessage); ok {
			typ = m
		}
	}
	if typ == nil || typ.Name != "mood" || typ.Namespace != "public" {
		t.Fatalf("type message = %+v, want public.mood", typ)
	}
	if got := ins.Rel.Columns[ins.Rel.ColumnIndex("m")].TypeOID; got != typ.OID {
		t.Errorf("column m has type oid %d, type message says %d", got, typ.OID)
	}
}

func TestCapturedReplicaIdentityFull(t *testing.T) {
	p := play(t, "full")
	cs := changes(p, "public.full_ident")
	if len(cs) != 5 {
		t.Fatalf("%d changes, want 5", len(cs))
	}
	u := cs[2]
	if u.Op != decode.Update || u.BeforeIsKey || len(u.Before) != 3 {
		t.Fatalf("update with REPLICA IDENTITY FULL: op %s, BeforeIsKey %t, before %v", u.Op, u.BeforeIsKey, u.Before)
	}
	wantText(t, "before v", u.Before[1], "one")
	wantText(t, "before n", u.Before[2], "1")
	wantText(t, "after v", u.After[1], "uno")
	u2 := cs[3]
	wantKind(t, "full before v of a NULL value", u2.Before[1], decode.Null)
	wantText(t, "full before id", u2.Before[0], "2")
	wantText(t, "full after id", u2.After[0], "3")
	del := cs[4]
	if del.Op != decode.Delete || del.BeforeIsKey || del.After != nil {
		t.Errorf("delete with REPLICA IDENTITY FULL: op %s BeforeIsKey %t after %v", del.Op, del.BeforeIsKey, del.After)
	}
	wantText(t, "delete before v", del.Before[1], "uno")
}

func TestCapturedTruncate(t *testing.T) {
	p := play(t, "truncate")
	var got []string
	for _, e := range p.events {
		if m, ok := e.msg.(*decode.TruncateMessage); ok {
			got = append(got, render(m))
		}
	}
	want := []string{
		"Truncate xid=0 cascade=false rels=[public.full_ident]",
		"Truncate xid=0 cascade=true rels=[public.parent public.child]",
		"Truncate xid=0 cascade=false rels=[public.seq_t public.basic]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("truncates:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCapturedUnchangedToast(t *testing.T) {
	p := play(t, "toast")
	cs := changes(p, "public.toasty")
	if len(cs) != 5 {
		t.Fatalf("%d changes on toasty, want 5", len(cs))
	}
	big := cs[0].Rel.ColumnIndex("big")
	first := cs[0].After[big]
	if first.Kind != decode.Text || len(first.Data) != 8192 {
		t.Fatalf("inserted TOAST value = %s, want 8192 bytes of text", renderDatum(first))
	}
	for i, c := range cs[1:3] {
		d := c.After[big]
		if d.Kind == decode.Null {
			t.Errorf("update %d: unchanged TOAST value decoded as NULL", i+1)
		}
		wantKind(t, fmt.Sprintf("update %d big", i+1), d, decode.Unchanged)
		wantText(t, fmt.Sprintf("update %d id", i+1), c.After[0], strconv.Itoa(1+i))
	}
	wantText(t, "note after update", cs[1].After[1], "second")
	if !cs[2].BeforeIsKey {
		t.Errorf("key change of a row with a TOAST value: BeforeIsKey false")
	}
	wantText(t, "big after it changed", cs[3].After[big], "small now")

	// REPLICA IDENTITY FULL: the old image is whole; the new one still
	// leaves the unchanged TOAST value out.
	fs := changes(p, "public.toasty_full")
	if len(fs) != 3 {
		t.Fatalf("%d changes on toasty_full, want 3", len(fs))
	}
	u := fs[1]
	if u.BeforeIsKey || u.Before == nil {
		t.Fatalf("toasty_full update: BeforeIsKey %t before %v", u.BeforeIsKey, u.Before)
	}
	if !bytes.Equal(u.Before[2].Data, fs[0].After[2].Data) || u.Before[2].Kind != decode.Text {
		t.Errorf("toasty_full old image big = %s, want the inserted value", renderDatum(u.Before[2]))
	}
	wantKind(t, "toasty_full new big", u.After[2], decode.Unchanged)
}

func TestCapturedMessages(t *testing.T) {
	p := play(t, "message")
	var got []*decode.LogicalMessage
	for _, e := range p.events {
		if m, ok := e.msg.(*decode.LogicalMessage); ok {
			got = append(got, m)
		}
	}
	want := []decode.LogicalMessage{
		{Transactional: false, Prefix: "pg2iceberg-ddl", Content: []byte(`{"event": "non-transactional"}`)},
		{Transactional: true, Prefix: "pg2iceberg", Content: []byte("transactional")},
		{Transactional: true, Prefix: "pg2iceberg-bin", Content: []byte{0, 0xff, 0}},
		{Transactional: true, Prefix: "", Content: []byte{}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d logical messages, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Transactional != w.Transactional || g.Prefix != w.Prefix || !bytes.Equal(g.Content, w.Content) || g.XID != 0 || g.LSN == 0 {
			t.Errorf("message %d = %s, want transactional=%t prefix=%q content=%q xid=0 and an LSN", i, render(g), w.Transactional, w.Prefix, w.Content)
		}
	}
}

func TestCapturedOrigin(t *testing.T) {
	p := play(t, "origin")
	var kinds []string
	for _, e := range p.events {
		kinds = append(kinds, strings.Fields(render(e.msg))[0])
		if o, ok := e.msg.(*decode.Origin); ok && o.Name != "upstream" {
			t.Errorf("origin name %q, want upstream", o.Name)
		}
	}
	if got, want := strings.Join(kinds, " "), "Begin Origin Relation Insert Commit"; got != want {
		t.Errorf("messages %s, want %s", got, want)
	}
}

func TestCapturedStream(t *testing.T) {
	p := play(t, "stream")
	var starts, stops, commits, firsts int
	var xid uint32
	commitAt := -1
	for i, e := range p.events {
		switch m := e.msg.(type) {
		case *decode.StreamStart:
			starts++
			if m.First {
				firsts++
				xid = m.XID
			} else if m.XID != xid {
				t.Errorf("segment of xid %d inside transaction %d", m.XID, xid)
			}
		case *decode.StreamStop:
			stops++
		case *decode.StreamCommit:
			commits++
			commitAt = i
			if m.XID != xid || m.CommitLSN == 0 || m.EndLSN < m.CommitLSN {
				t.Errorf("stream commit %s for transaction %d", render(m), xid)
			}
		case *decode.Begin, *decode.Commit:
			t.Errorf("streamed transaction sent as a whole: %s", render(m))
		}
	}
	if starts < 2 || firsts != 1 || stops != starts || commits != 1 {
		t.Fatalf("stream starts %d (first %d), stops %d, commits %d; want >= 2 segments, one first, one commit", starts, firsts, stops, commits)
	}
	// Every change is applied at the commit, with the streamed XID.
	inserted := map[string]bool{}
	var ops string
	var msg *decode.LogicalMessage
	var trunc *decode.TruncateMessage
	for i, e := range p.events {
		switch m := e.msg.(type) {
		case *decode.Change:
			if !e.replayed || i < commitAt {
				t.Fatalf("change %s applied before the stream commit", render(m))
			}
			if m.XID != xid {
				t.Errorf("streamed change xid %d, want %d", m.XID, xid)
			}
			ops += m.Op.String()
			if m.Op == decode.Insert {
				inserted[string(m.After[0].Data)] = true
			}
		case *decode.LogicalMessage:
			msg = m
		case *decode.TruncateMessage:
			trunc = m
		}
	}
	if len(inserted) != 150 || strings.Count(ops, "U") != 4 || strings.Count(ops, "D") != 1 {
		t.Errorf("replayed %d distinct inserts, ops %q; want 150 inserts, 4 updates, 1 delete", len(inserted), ops)
	}
	if msg == nil || !msg.Transactional || msg.XID != xid || string(msg.Content) != "inside a streamed transaction" {
		t.Errorf("streamed logical message = %v, want transactional with xid %d", msg, xid)
	}
	if trunc == nil || trunc.XID != xid || len(trunc.Rels) != 1 {
		t.Errorf("streamed truncate = %v, want one relation with xid %d", trunc, xid)
	}
	if p.dec.InStream() {
		t.Error("decoder still in a stream segment at the end")
	}
}

func TestCapturedStreamDDL(t *testing.T) {
	p := play(t, "stream_ddl")
	widths := map[int]int{}
	for _, c := range changes(p, "public.stream_ddl") {
		widths[len(c.After)]++
		if c.Rel == nil || len(c.Rel.Columns) != len(c.After) {
			t.Fatalf("change %s decoded with a relation of %d columns", render(c), len(c.Rel.Columns))
		}
	}
	// 110 rows before ADD COLUMN, 10 after it in the same streamed
	// transaction, 1 in a later transaction.
	if want := map[int]int{2: 110, 3: 11}; fmt.Sprint(widths) != fmt.Sprint(want) {
		t.Errorf("rows by column count %v, want %v", widths, want)
	}
}

// streamGoSpoolKinds reads, from replication/stream.go, the message kinds
// that stream.message keeps for STREAM COMMIT (its switch on data[0]).
func streamGoSpoolKinds(t *testing.T) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "replication", "stream.go"), nil, 0)
	if err != nil {
		t.Fatalf("read replication/stream.go: %v", err)
	}
	var kinds []byte
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "message" || fn.Recv == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			if ix, ok := sw.Tag.(*ast.IndexExpr); !ok || types.ExprString(ix) != "data[0]" {
				return true
			}
			for _, st := range sw.Body.List {
				for _, e := range st.(*ast.CaseClause).List {
					if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.CHAR {
						c, err := strconv.Unquote(lit.Value)
						if err == nil && len(c) == 1 {
							kinds = append(kinds, c[0])
						}
					}
				}
			}
			return false
		})
	}
	if len(kinds) == 0 {
		t.Fatalf("found no switch on data[0] in func (*stream).message of replication/stream.go; update streamGoSpoolKinds")
	}
	return string(kinds)
}

// TestStreamGoSpoolsRelationMessages plays the captured streams with the
// rule replication/stream.go uses. A relation message inside a segment
// belongs to the streamed transaction: applied on arrival, it changes the
// decoder's relation before the earlier spooled changes are replayed, and
// the replay of a transaction that altered a table fails (every restart
// fails the same way).
func TestStreamGoSpoolsRelationMessages(t *testing.T) {
	kinds := streamGoSpoolKinds(t)
	for _, name := range []string{"stream", "stream_abort", "stream_ddl"} {
		t.Run(name, func(t *testing.T) {
			p := newPlayer(kinds)
			for i, m := range readBin(t, name) {
				if err := p.feed(m); err != nil {
					t.Fatalf("with stream.go's spooled kinds %q, message %d (%q): %v", kinds, i, m[0], err)
				}
			}
			if got, want := applied(p), applied(play(t, name)); got != want {
				t.Errorf("with stream.go's spooled kinds %q the applied changes differ:\n%s", kinds, lineDiff(got, want))
			}
		})
	}
}

// applied renders the changes and truncates a player applied, in order.
func applied(p *player) string {
	var b strings.Builder
	for _, e := range p.events {
		switch e.msg.(type) {
		case *decode.Change, *decode.TruncateMessage:
			b.WriteString(render(e.msg) + "\n")
		}
	}
	return b.String()
}

func TestCapturedStreamAbort(t *testing.T) {
	p := play(t, "stream_abort")
	var aborts []*decode.StreamAbort
	var committed uint32
	for _, e := range p.events {
		switch m := e.msg.(type) {
		case *decode.StreamAbort:
			aborts = append(aborts, m)
		case *decode.StreamCommit:
			committed = m.XID
		}
	}
	if len(aborts) != 2 {
		t.Fatalf("%d stream aborts, want 2 (a subtransaction and a whole transaction)", len(aborts))
	}
	if sub := aborts[0]; sub.XID != committed || sub.SubXID == sub.XID {
		t.Errorf("first abort %s, want a subtransaction of %d", render(sub), committed)
	}
	if top := aborts[1]; top.SubXID != top.XID || top.XID == committed {
		t.Errorf("second abort %s, want a whole other transaction", render(top))
	}
	pads := map[string]int{}
	for _, c := range changes(p, "public.streamed") {
		pads[string(c.After[1].Data[:1])]++
	}
	// 40 rows of 'a', 20 of 'c', and the row inserted after the abort.
	if want := map[string]int{"a": 41, "c": 20}; fmt.Sprint(pads) != fmt.Sprint(want) {
		t.Errorf("applied rows by pad %v, want %v (no rows of the aborted subtransaction or transaction)", pads, want)
	}
}

// TestDecodeTruncatedMessages cuts every captured message short: each
// strict prefix must be an error (never a panic, never a message).
func TestDecodeTruncatedMessages(t *testing.T) {
	for _, name := range scenarios {
		t.Run(name, func(t *testing.T) {
			var d decode.Decoder
			seen := map[string]bool{}
			for i, m := range readBin(t, name) {
				key := fmt.Sprintf("%c%t%d", m[0], d.InStream(), len(m))
				if !seen[key] && len(m) < 4096 {
					seen[key] = true
					for n := 0; n < len(m); n++ {
						msg, err := d.Decode(m[:n])
						if err == nil {
							// m[:n] keeps the capacity of the whole message, as
							// a receive buffer would hold the following bytes.
							t.Errorf("message %d (%q) cut to %d of %d bytes decoded as %s, want an error", i, m[0], n, len(m), render(msg))
							break
						}
					}
				}
				if _, err := d.Decode(m); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
		})
	}
}

// TestDecodeDoesNotRetainInput: the replication connection reuses its
// receive buffer, so a decoded message must not alias the payload.
func TestDecodeDoesNotRetainInput(t *testing.T) {
	for _, name := range scenarios {
		t.Run(name, func(t *testing.T) {
			var d decode.Decoder
			for i, m := range readBin(t, name) {
				buf := bytes.Clone(m)
				msg, err := d.Decode(buf)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				before := render(msg)
				for j := range buf {
					buf[j] = 0xAA
				}
				if after := render(msg); after != before {
					t.Errorf("message %d (%q) changed when its input buffer was overwritten:\n%s\nwas\n%s", i, m[0], after, before)
				}
			}
		})
	}
}

// msgBuilder writes pgoutput messages by hand.
type msgBuilder struct{ b []byte }

func (w *msgBuilder) byte1(c byte) *msgBuilder { w.b = append(w.b, c); return w }
func (w *msgBuilder) u16(v uint16) *msgBuilder { w.b = binary.BigEndian.AppendUint16(w.b, v); return w }
func (w *msgBuilder) u32(v uint32) *msgBuilder { w.b = binary.BigEndian.AppendUint32(w.b, v); return w }
func (w *msgBuilder) u64(v uint64) *msgBuilder { w.b = binary.BigEndian.AppendUint64(w.b, v); return w }
func (w *msgBuilder) str(s string) *msgBuilder { w.b = append(append(w.b, s...), 0); return w }
func (w *msgBuilder) text(s string) *msgBuilder {
	w.byte1('t').u32(uint32(len(s)))
	w.b = append(w.b, s...)
	return w
}

// relationMsg is relation 42 public.t (id int4 key, v text).
func relationMsg() []byte {
	w := &msgBuilder{}
	w.byte1('R').u32(42).str("public").str("t").byte1('d').u16(2)
	w.byte1(1).str("id").u32(23).u32(0xffffffff)
	w.byte1(0).str("v").u32(25).u32(0xffffffff)
	return w.b
}

func TestDecodeSynthetic(t *testing.T) {
	insert := func(rel uint32, cols func(*msgBuilder)) []byte {
		w := &msgBuilder{}
		w.byte1('I').u32(rel).byte1('N')
		cols(w)
		return w.b
	}
	tests := []struct {
		name    string
		msg     []byte
		want    string // rendered message, or "error: <substring>"
		relFree bool   // decode without the relation cached
	}{
		{name: "empty", msg: []byte{}, want: "error: empty"},
		{name: "unknown type", msg: []byte("Zxxxxxxxxxxxxxxxxxxxxxxxx"), want: "error: "},
		{name: "insert", msg: insert(42, func(w *msgBuilder) { w.u16(2).text("7").byte1('n') }),
			want: `Insert public.t xid=0 after=(id="7" v=NULL)`},
		{name: "binary and unchanged", msg: insert(42, func(w *msgBuilder) {
			w.u16(2).byte1('b').u32(2).byte1(0).byte1(7).byte1('u')
		}), want: `Insert public.t xid=0 after=(id=binary:"\x00\a" v=UNCHANGED-TOAST)`},
		{name: "unknown tuple kind", msg: insert(42, func(w *msgBuilder) { w.u16(2).text("7").byte1('x') }),
			want: "error: unknown tuple data kind"},
		{name: "too few columns", msg: insert(42, func(w *msgBuilder) { w.u16(1).text("7") }),
			want: "error: new tuple has 1 columns, relation has 2"},
		{name: "too many columns", msg: insert(42, func(w *msgBuilder) { w.u16(3).text("7").text("a").text("b") }),
			want: "error: new tuple has 3 columns"},
		{name: "insert unknown relation", msg: insert(43, func(w *msgBuilder) { w.u16(2).text("7").byte1('n') }),
			want: "error: relation 43"},
		{name: "insert before any relation", relFree: true, msg: insert(42, func(w *msgBuilder) { w.u16(2).text("7").byte1('n') }),
			want: "error: relation 42"},
		{name: "update unknown relation", msg: (&msgBuilder{}).byte1('U').u32(9).byte1('N').u16(0).b, want: "error: relation 9"},
		{name: "delete unknown relation", msg: (&msgBuilder{}).byte1('D').u32(9).byte1('K').u16(0).b, want: "error: relation 9"},
		{name: "truncate unknown relation", msg: (&msgBuilder{}).byte1('T').u32(2).byte1(0).u32(42).u32(9).b, want: "error: relation 9"},
		{name: "update with key", msg: (&msgBuilder{}).byte1('U').u32(42).byte1('K').u16(2).text("1").byte1('n').byte1('N').u16(2).text("2").text("x").b,
			want: `Update public.t xid=0 before[key]=(id="1" v=NULL) after=(id="2" v="x")`},
		{name: "update with old", msg: (&msgBuilder{}).byte1('U').u32(42).byte1('O').u16(2).text("1").text("w").byte1('N').u16(2).text("1").byte1('u').b,
			want: `Update public.t xid=0 before[old]=(id="1" v="w") after=(id="1" v=UNCHANGED-TOAST)`},
		{name: "update bad tuple type", msg: (&msgBuilder{}).byte1('U').u32(42).byte1('X').u16(0).b, want: "error: "},
		{name: "delete old", msg: (&msgBuilder{}).byte1('D').u32(42).byte1('O').u16(2).text("1").text("w").b,
			want: `Delete public.t xid=0 before[old]=(id="1" v="w")`},
		{name: "delete missing old tuple", msg: (&msgBuilder{}).byte1('D').u32(42).byte1('N').u16(2).text("1").text("w").b, want: "error: "},
		{name: "truncate restart identity only", msg: (&msgBuilder{}).byte1('T').u32(1).byte1(2).u32(42).b,
			want: "Truncate xid=0 cascade=false rels=[public.t]"},
		{name: "origin", msg: (&msgBuilder{}).byte1('O').u64(5).str("up").b, want: `Origin name="up"`},
		{name: "stream abort", msg: (&msgBuilder{}).byte1('A').u32(7).u32(8).b, want: "StreamAbort xid=7 subxid=8"},
		{name: "begin", msg: (&msgBuilder{}).byte1('B').u64(0x10).u64(0).u32(99).b,
			want: "Begin xid=99 final_lsn=0/10 commit_time=2000-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d decode.Decoder
			if !tt.relFree {
				if _, err := d.Decode(relationMsg()); err != nil {
					t.Fatal(err)
				}
			}
			msg, err := d.Decode(tt.msg)
			var got string
			if err != nil {
				got = "error: " + err.Error()
			} else {
				got = render(msg)
			}
			if want, ok := strings.CutPrefix(tt.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Decode(%q) = %s, want an error containing %q", tt.msg, got, want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("Decode(%q) = %s, want %s", tt.msg, got, tt.want)
			}
		})
	}
}

func TestUnknownRelationError(t *testing.T) {
	var d decode.Decoder
	_, err := d.Decode((&msgBuilder{}).byte1('I').u32(77).byte1('N').u16(1).byte1('n').b)
	var ure *decode.UnknownRelationError
	if !errors.As(err, &ure) || ure.ID != 77 {
		t.Fatalf("Decode(insert into unknown relation) error = %v, want *UnknownRelationError{77}", err)
	}
}

func TestStreamState(t *testing.T) {
	var d decode.Decoder
	start := (&msgBuilder{}).byte1('S').u32(5).byte1(1).b
	stop := []byte{'E'}
	if _, err := d.Decode(relationMsg()); err != nil {
		t.Fatal(err)
	}
	// An insert inside a segment carries the XID before the relation ID.
	streamedInsert := (&msgBuilder{}).byte1('I').u32(6).u32(42).byte1('N').u16(2).text("1").byte1('n').b
	plainInsert := (&msgBuilder{}).byte1('I').u32(42).byte1('N').u16(2).text("1").byte1('n').b

	steps := []struct {
		name     string
		msg      []byte
		streamed bool
		want     string
		inStream bool
	}{
		{"plain insert", plainInsert, false, `Insert public.t xid=0 after=(id="1" v=NULL)`, false},
		{"streamed insert outside a segment", streamedInsert, true, `Insert public.t xid=6 after=(id="1" v=NULL)`, false},
		{"start", start, false, "StreamStart xid=5 first=true", true},
		{"insert in segment", streamedInsert, false, `Insert public.t xid=6 after=(id="1" v=NULL)`, true},
		{"replayed insert in segment", streamedInsert, true, `Insert public.t xid=6 after=(id="1" v=NULL)`, true},
		{"stop", stop, false, "StreamStop", false},
		{"commit", (&msgBuilder{}).byte1('c').u32(5).byte1(0).u64(1).u64(2).u64(0).b, false,
			"StreamCommit xid=5 commit_lsn=0/1 end_lsn=0/2 commit_time=2000-01-01T00:00:00Z", false},
	}
	for _, s := range steps {
		var msg decode.Message
		var err error
		if s.streamed {
			msg, err = d.DecodeStreamed(s.msg)
		} else {
			msg, err = d.Decode(s.msg)
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := render(msg); got != s.want {
			t.Errorf("%s: decoded %s, want %s", s.name, got, s.want)
		}
		if d.InStream() != s.inStream {
			t.Errorf("%s: InStream() = %t, want %t", s.name, d.InStream(), s.inStream)
		}
	}
}

// TestDecodeMalformedLengthsAllocateLittle: a length field in a malformed
// message must not make the decoder allocate memory in proportion to it. A
// Truncate claiming 0xffffffff relations makes pglogrepl allocate 16 GiB,
// which kills the process ("fatal error: out of memory", not a recoverable
// panic) where address space is limited. The values here are small enough
// to be safe but show the proportional allocation.
func TestDecodeMalformedLengthsAllocateLittle(t *testing.T) {
	tests := []struct {
		name string
		msg  []byte
	}{
		{"truncate with 16M relations", (&msgBuilder{}).byte1('T').u32(1 << 24).byte1(0).u32(42).b},
		{"insert with a 64MiB value", (&msgBuilder{}).byte1('I').u32(42).byte1('N').u16(2).byte1('t').u32(64 << 20).u32(0).b},
		{"update with a 64MiB old value", (&msgBuilder{}).byte1('U').u32(42).byte1('O').u16(2).byte1('t').u32(64 << 20).u32(0).b},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d decode.Decoder
			if _, err := d.Decode(relationMsg()); err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			msg, err := d.Decode(tt.msg)
			runtime.ReadMemStats(&m1)
			if err == nil {
				t.Errorf("Decode(%q) = %s, want an error", tt.msg, render(msg))
			}
			if n := m1.TotalAlloc - m0.TotalAlloc; n > 1<<20 {
				t.Errorf("Decode of a %d-byte malformed message allocated %d bytes, want < 1MiB", len(tt.msg), n)
			}
		})
	}
}

// checkMessage checks the invariants of a decoded message.
func checkMessage(t *testing.T, msg decode.Message) {
	t.Helper()
	c, ok := msg.(*decode.Change)
	if !ok {
		return
	}
	if c.Rel == nil {
		t.Fatalf("change without a relation")
	}
	for _, tup := range []decode.Tuple{c.Before, c.After} {
		if tup != nil && len(tup) != len(c.Rel.Columns) {
			t.Fatalf("tuple of %d values for %d columns", len(tup), len(c.Rel.Columns))
		}
		for _, d := range tup {
			switch d.Kind {
			case decode.Null, decode.Unchanged:
				if d.Data != nil {
					t.Fatalf("kind %d datum with data", d.Kind)
				}
			case decode.Text, decode.Binary:
			default:
				t.Fatalf("datum of kind %d", d.Kind)
			}
		}
	}
	switch c.Op {
	case decode.Insert:
		if c.After == nil || c.Before != nil {
			t.Fatalf("insert images: before %v after %v", c.Before, c.After)
		}
	case decode.Update:
		if c.After == nil {
			t.Fatalf("update without a new image")
		}
	case decode.Delete:
		if c.Before == nil || c.After != nil {
			t.Fatalf("delete images: before %v after %v", c.Before, c.After)
		}
	default:
		t.Fatalf("change op %q", c.Op)
	}
}

// primed is a decoder that knows the relations of every capture, so fuzzed
// changes reach tuple decoding instead of stopping at an unknown relation.
func primed(t testing.TB) *decode.Decoder {
	d := &decode.Decoder{}
	for _, name := range scenarios {
		for _, m := range readBin(t, name) {
			if m[0] == 'R' {
				if _, err := d.DecodeStreamed(m); err != nil {
					_, _ = d.Decode(m)
				}
			}
		}
	}
	return d
}

func FuzzDecode(f *testing.F) {
	relations := primed(f)
	f.Fuzz(func(t *testing.T, data []byte, streamed bool) {
		d := *relations // shares the relation cache; relation messages may update it
		var msg decode.Message
		var err error
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		defer func() {
			// Allocation must follow the input's size, not the lengths it
			// claims (see TestDecodeMalformedLengthsAllocateLittle).
			runtime.ReadMemStats(&m1)
			if n := m1.TotalAlloc - m0.TotalAlloc; n > 1<<20+256*uint64(len(data)) {
				t.Fatalf("decoding %d bytes (%q...) allocated %d bytes", len(data), data[:min(len(data), 16)], n)
			}
		}()
		if streamed {
			msg, err = d.DecodeStreamed(data)
			if d.InStream() {
				t.Fatalf("DecodeStreamed left the decoder in a stream segment")
			}
		} else {
			msg, err = d.Decode(data)
		}
		if (msg == nil) == (err == nil) {
			t.Fatalf("Decode returned message %v and error %v", msg, err)
		}
		if err == nil {
			checkMessage(t, msg)
			got := render(msg)
			// A change the fast path accepts, ParseV2 reads the same way.
			if _, ok := msg.(*decode.Change); ok {
				ref := *relations
				if streamed {
					_, _ = ref.Decode([]byte{'S', 0, 0, 0, 1, 1}) // enter a segment
				}
				want, err := ref.DecodeWithParseV2(data)
				if err != nil {
					t.Fatalf("change %s: ParseV2 fails: %v", got, err)
				}
				if w := render(want); w != got {
					t.Fatalf("change decodes as %s, ParseV2 as %s", got, w)
				}
			}
		}
	})
}

// TestWriteDecodeSeeds rewrites the FuzzDecode seed corpus from the captures
// with -update: one seed per message kind and stream state.
func TestWriteDecodeSeeds(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/fuzz/FuzzDecode/seed-*")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
	for _, f := range old {
		_ = os.Remove(f)
	}
	seen := map[string]bool{}
	for _, name := range scenarios {
		var d decode.Decoder
		for _, m := range readBin(t, name) {
			inStream := d.InStream()
			kind := fmt.Sprintf("%c", m[0])
			if m[0] >= 'a' && m[0] <= 'z' {
				kind = "lower-" + kind
			}
			key := fmt.Sprintf("seed-%s-%s-stream%t", name, kind, inStream)
			if _, err := d.Decode(m); err != nil {
				t.Fatal(err)
			}
			if seen[key] || len(m) > 2048 {
				continue
			}
			seen[key] = true
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbool(%t)\n", m, inStream)
			if err := os.WriteFile(filepath.Join(dir, key), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
