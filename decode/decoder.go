package decode

import (
	"bytes"
	"fmt"

	"github.com/jackc/pglogrepl"
)

// Decoder decodes pgoutput messages of one replication session. The zero
// value is ready to use. A Decoder is not safe for concurrent use.
type Decoder struct {
	// Transient makes a *Change that Decode or DecodeStreamed returns valid
	// only until the next call: it is the decoder's own, overwritten by the
	// next change, and its Datums alias the input, which must stay unchanged
	// until then. Decoding a change then allocates nothing. The replication
	// stream sets it: it applies each message before it receives the next.
	// Without it a decoded message shares nothing with the input or with
	// other messages.
	Transient bool

	relations map[uint32]*Relation
	inStream  bool

	change        Change // returned with Transient
	before, after Tuple  // backing arrays of change's tuples
}

// Relation returns the cached relation with the given OID.
func (d *Decoder) Relation(id uint32) (*Relation, bool) {
	r, ok := d.relations[id]
	return r, ok
}

// Decode decodes one XLogData payload.
func (d *Decoder) Decode(data []byte) (Message, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty pgoutput message")
	}
	switch data[0] {
	case 'I', 'U', 'D':
		return d.decodeChange(data)
	}
	return d.decodeV2(data)
}

// decodeV2 decodes a payload with pglogrepl.ParseV2. Decode uses it for
// every message but Insert, Update and Delete (see decodeChange); tests
// hold decodeChange to what it makes of those.
func (d *Decoder) decodeV2(data []byte) (msg Message, err error) {
	defer func() {
		// pglogrepl indexes into the buffer without checking every length;
		// malformed input must become an error, never a crash.
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("malformed pgoutput message (type %q, %d bytes): %v", typeByte(data), len(data), r)
		}
	}()
	if len(data) == 0 {
		return nil, fmt.Errorf("empty pgoutput message")
	}
	if err := checkTuples(data, d.inStream); err != nil {
		return nil, fmt.Errorf("malformed pgoutput message %q: %w", typeByte(data), err)
	}
	raw, err := pglogrepl.ParseV2(data, d.inStream)
	if err != nil {
		return nil, fmt.Errorf("parse pgoutput message %q: %w", typeByte(data), err)
	}
	return d.convert(raw)
}

func typeByte(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	return string(rune(data[0]))
}

func (d *Decoder) convert(raw pglogrepl.Message) (Message, error) {
	switch m := raw.(type) {
	case *pglogrepl.BeginMessage:
		return &Begin{XID: m.Xid, FinalLSN: m.FinalLSN, CommitTime: m.CommitTime}, nil
	case *pglogrepl.CommitMessage:
		return &Commit{CommitLSN: m.CommitLSN, EndLSN: m.TransactionEndLSN, CommitTime: m.CommitTime}, nil
	case *pglogrepl.StreamStartMessageV2:
		d.inStream = true
		return &StreamStart{XID: m.Xid, First: m.FirstSegment == 1}, nil
	case *pglogrepl.StreamStopMessageV2:
		d.inStream = false
		return &StreamStop{}, nil
	case *pglogrepl.StreamCommitMessageV2:
		return &StreamCommit{XID: m.Xid, CommitLSN: m.CommitLSN, EndLSN: m.TransactionEndLSN, CommitTime: m.CommitTime}, nil
	case *pglogrepl.StreamAbortMessageV2:
		return &StreamAbort{XID: m.Xid, SubXID: m.SubXid}, nil
	case *pglogrepl.RelationMessageV2:
		return d.relation(&m.RelationMessage), nil
	case *pglogrepl.RelationMessage:
		return d.relation(m), nil
	case *pglogrepl.InsertMessageV2:
		return d.insert(m.Xid, &m.InsertMessage)
	case *pglogrepl.InsertMessage:
		return d.insert(0, m)
	case *pglogrepl.UpdateMessageV2:
		return d.update(m.Xid, &m.UpdateMessage)
	case *pglogrepl.UpdateMessage:
		return d.update(0, m)
	case *pglogrepl.DeleteMessageV2:
		return d.delete(m.Xid, &m.DeleteMessage)
	case *pglogrepl.DeleteMessage:
		return d.delete(0, m)
	case *pglogrepl.TruncateMessageV2:
		return d.truncate(m.Xid, &m.TruncateMessage)
	case *pglogrepl.TruncateMessage:
		return d.truncate(0, m)
	case *pglogrepl.LogicalDecodingMessageV2:
		return &LogicalMessage{XID: m.Xid, LSN: m.LSN, Transactional: m.Transactional, Prefix: m.Prefix, Content: bytes.Clone(m.Content)}, nil
	case *pglogrepl.LogicalDecodingMessage:
		return &LogicalMessage{LSN: m.LSN, Transactional: m.Transactional, Prefix: m.Prefix, Content: bytes.Clone(m.Content)}, nil
	case *pglogrepl.TypeMessageV2:
		return &TypeMessage{OID: m.DataType, Namespace: m.Namespace, Name: m.Name}, nil
	case *pglogrepl.TypeMessage:
		return &TypeMessage{OID: m.DataType, Namespace: m.Namespace, Name: m.Name}, nil
	case *pglogrepl.OriginMessage:
		return &Origin{Name: m.Name}, nil
	default:
		return nil, fmt.Errorf("unsupported pgoutput message type %q", raw.Type().String())
	}
}

func (d *Decoder) relation(m *pglogrepl.RelationMessage) Message {
	rel := &Relation{
		ID:              m.RelationID,
		Schema:          m.Namespace,
		Name:            m.RelationName,
		ReplicaIdentity: m.ReplicaIdentity,
		Columns:         make([]Column, len(m.Columns)),
	}
	for i, c := range m.Columns {
		rel.Columns[i] = Column{Name: c.Name, TypeOID: c.DataType, TypeMod: c.TypeModifier, Key: c.Flags&1 == 1}
	}
	if d.relations == nil {
		d.relations = make(map[uint32]*Relation)
	}
	old := d.relations[rel.ID]
	d.relations[rel.ID] = rel
	return &RelationMessage{Rel: rel, Old: old}
}

func (d *Decoder) rel(id uint32) (*Relation, error) {
	r, ok := d.relations[id]
	if !ok {
		return nil, &UnknownRelationError{ID: id}
	}
	return r, nil
}

func (d *Decoder) insert(xid uint32, m *pglogrepl.InsertMessage) (Message, error) {
	rel, err := d.rel(m.RelationID)
	if err != nil {
		return nil, err
	}
	after, err := tuple(rel, m.Tuple, "new")
	if err != nil {
		return nil, err
	}
	return &Change{Op: Insert, Rel: rel, XID: xid, After: after}, nil
}

func (d *Decoder) update(xid uint32, m *pglogrepl.UpdateMessage) (Message, error) {
	rel, err := d.rel(m.RelationID)
	if err != nil {
		return nil, err
	}
	c := &Change{Op: Update, Rel: rel, XID: xid}
	if m.OldTuple != nil {
		if c.Before, err = tuple(rel, m.OldTuple, "old"); err != nil {
			return nil, err
		}
		c.BeforeIsKey = m.OldTupleType == pglogrepl.UpdateMessageTupleTypeKey
	}
	if c.After, err = tuple(rel, m.NewTuple, "new"); err != nil {
		return nil, err
	}
	return c, nil
}

func (d *Decoder) delete(xid uint32, m *pglogrepl.DeleteMessage) (Message, error) {
	rel, err := d.rel(m.RelationID)
	if err != nil {
		return nil, err
	}
	c := &Change{Op: Delete, Rel: rel, XID: xid}
	if c.Before, err = tuple(rel, m.OldTuple, "old"); err != nil {
		return nil, err
	}
	c.BeforeIsKey = m.OldTupleType == pglogrepl.DeleteMessageTupleTypeKey
	return c, nil
}

func (d *Decoder) truncate(xid uint32, m *pglogrepl.TruncateMessage) (Message, error) {
	t := &TruncateMessage{XID: xid, Cascade: m.Option&pglogrepl.TruncateOptionCascade != 0}
	for _, id := range m.RelationIDs {
		rel, err := d.rel(id)
		if err != nil {
			return nil, err
		}
		t.Rels = append(t.Rels, rel)
	}
	return t, nil
}

func tuple(rel *Relation, td *pglogrepl.TupleData, which string) (Tuple, error) {
	if td == nil {
		return nil, fmt.Errorf("%s: %s tuple missing", rel.QualifiedName(), which)
	}
	if len(td.Columns) != len(rel.Columns) {
		return nil, fmt.Errorf("%s: %s tuple has %d columns, relation has %d", rel.QualifiedName(), which, len(td.Columns), len(rel.Columns))
	}
	out := make(Tuple, len(td.Columns))
	for i, c := range td.Columns {
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			out[i] = Datum{Kind: Null}
		case pglogrepl.TupleDataTypeToast:
			out[i] = Datum{Kind: Unchanged}
		case pglogrepl.TupleDataTypeText:
			out[i] = Datum{Kind: Text, Data: c.Data}
		case pglogrepl.TupleDataTypeBinary:
			out[i] = Datum{Kind: Binary, Data: c.Data}
		default:
			return nil, fmt.Errorf("%s: column %s: unknown tuple data kind %q", rel.QualifiedName(), rel.Columns[i].Name, c.DataType)
		}
	}
	return out, nil
}

// DecodeStreamed decodes a message that was received inside a streamed
// transaction segment and kept for later (replayed at STREAM COMMIT),
// without touching the decoder's stream state.
func (d *Decoder) DecodeStreamed(data []byte) (Message, error) {
	saved := d.inStream
	d.inStream = true
	defer func() { d.inStream = saved }()
	return d.Decode(data)
}

// InStream reports whether the decoder is inside a streamed segment.
func (d *Decoder) InStream() bool { return d.inStream }
