package iceberg

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// changelog appends one row per change to a changelog table, partitioned
// by its spec (day of commit_ts by default, see changelog_part.go): one
// open file per partition touched in a flush.
type changelog struct {
	*icebergTable
	rel     *decode.Relation
	idx     [8]int // op, lsn, xid, commit_ts, seq, before, after, unavailable → top-level field
	childOf []int  // relation column → child index in before/after
	unbound []int  // children no relation column fills: written as NULL
	part    *changelogPart
	partOf  int                    // the spec ID part is bound to (-1: none yet)
	files   map[string]*fileWriter // open files by partition (see changelogPart.partition)
	closed  []icego.DataFile       // this flush's files closed early (schema change)
	changes int
	lastEnd decode.LSN
}

func newChangelog(t *icebergTable, rel *decode.Relation) (*changelog, error) {
	c := &changelog{icebergTable: t, rel: rel, partOf: -1, files: make(map[string]*fileWriter)}
	if err := c.bind(); err != nil {
		return nil, err
	}
	return c, nil
}

// bind maps the relation's columns onto the before/after structs by name.
func (c *changelog) bind() error { return c.bindTo(c.tbl.Schema()) }

// rebind binds the changelog to rel, the table's new shape (see
// Sink.Relation): an error, or a column its schema cannot hold yet.
func (c *changelog) rebind(rel *decode.Relation) error {
	c.rel = rel
	if err := c.bind(); err != nil {
		return err
	}
	return c.bindErr
}

// bindTo binds to schema sc.
func (c *changelog) bindTo(sc *icego.Schema) error {
	asc, err := tableArrowSchema(sc)
	if err != nil {
		return err
	}
	for i, name := range []string{colOp, colLSN, colXID, colCommitTS, colSeq, colBefore, colAfter, colUnavailable} {
		f := asc.FieldIndices(name)
		if len(f) != 1 {
			return fmt.Errorf("%s: changelog column %q missing", c.name(), name)
		}
		c.idx[i] = f[0]
	}
	st := asc.Field(c.idx[6]).Type.(*arrow.StructType)
	ice, _ := sc.FindFieldByName(colAfter)
	// The changelog is not kept by the key: a key column it lacks (renamed
	// since, see MissingKeyError) is unbound like any other column until
	// its schema follows the source.
	unkeyed := *c.rel
	unkeyed.Columns = slices.Clone(c.rel.Columns)
	for i := range unkeyed.Columns {
		unkeyed.Columns[i].Key = false
	}
	c.childOf, c.unbound, err = bindFields(c.name(), &unkeyed, st.Fields(), ice.Type.(*icego.StructType).FieldList)
	return c.lenientBind(err)
}

// txInfo is what the changelog records of the source transaction.
type txInfo struct {
	xid       uint32
	commitLSN decode.LSN
	endLSN    decode.LSN
	commitTS  time.Time
}

// file is the open file of a row's partition (opened when there is none)
// and the partition's key. A spec another writer set since the last row
// (Spark's ADD PARTITION FIELD) is bound first.
func (c *changelog) file(op decode.Op, tx txInfo, seq int64) (*fileWriter, string, error) {
	spec := c.tbl.Spec()
	if c.partOf != spec.ID() {
		p, err := newChangelogPart(c.name(), spec, c.tbl.Schema())
		if err != nil {
			return nil, "", err
		}
		c.part, c.partOf = p, spec.ID()
	}
	var vals map[int]any
	key := ""
	if c.part != nil {
		var err error
		if vals, key, err = c.part.partition(op, tx, seq); err != nil {
			return nil, "", fmt.Errorf("%s: %w", c.name(), err)
		}
	}
	if fw, ok := c.files[key]; ok {
		return fw, key, nil
	}
	opts, target := c.fileLayout()
	fw, err := newFileWriterWith(c.fs, dataPath(c.tbl, partitionPath(spec, c.tbl.Schema(), vals)), c.tbl.Schema(), spec, vals, icego.EntryContentData, c.tbl.Properties(), opts, target)
	if err != nil {
		return nil, "", err
	}
	c.files[key] = fw
	return fw, key, nil
}

// addUnavailable adds the colUnavailable column to a changelog created
// before it existed (schema evolution: rows written before read NULL).
func addUnavailable(ctx context.Context, t *icebergTable) error {
	if _, ok := t.tbl.Schema().FindFieldByName(colUnavailable); ok {
		return nil
	}
	txn := t.tbl.NewTransaction()
	f := unavailableField()
	if err := txn.UpdateSchema(true, false).AddColumn([]string{f.Name}, f.Type, f.Doc, false, nil).Commit(); err != nil {
		return fmt.Errorf("add column %s to %s: %w", colUnavailable, t.name(), err)
	}
	return t.commitTxn(ctx, txn, "add column "+colUnavailable+" to", nil)
}

// append writes one changelog row; unavailable names the columns of after
// whose values are not known (NULL in after), nil when all are.
func (c *changelog) append(op decode.Op, tx txInfo, seq int64, before, after decode.Tuple, unavailable []string) error {
	c.changes++
	fw, key, err := c.file(op, tx, seq)
	if err != nil {
		return err
	}
	if err := c.appendTo(fw.builder, &c.idx, op, tx, seq, before, after, unavailable); err != nil {
		return err
	}
	if err := fw.pw.RowDone(); err != nil {
		return err
	}
	if full(fw, fw.target) {
		df, err := fw.close()
		if err != nil {
			return err
		}
		c.closed = append(c.closed, df)
		delete(c.files, key)
	}
	return nil
}

// utcDay is the day of t, in days since 1970-01-01 UTC.
func utcDay(t time.Time) int32 {
	us := t.UnixMicro()
	day := int32(us / (86400 * 1_000_000))
	if us < 0 && us%(86400*1_000_000) != 0 {
		day--
	}
	return day
}

// appendTo appends one changelog row's values to the builders of the
// fields idx names (op, lsn, xid, commit_ts, seq, before, after,
// unavailable); a field at -1 is left out (see specLog: the commit's own
// fields come at commit).
func (c *changelog) appendTo(builder func(int) array.Builder, idx *[8]int, op decode.Op, tx txInfo, seq int64, before, after decode.Tuple, unavailable []string) error {
	builder(idx[0]).(*array.StringBuilder).Append(string(op))
	if idx[1] >= 0 {
		builder(idx[1]).(*array.Int64Builder).Append(int64(tx.commitLSN))
	}
	builder(idx[2]).(*array.Int64Builder).Append(int64(tx.xid))
	if idx[3] >= 0 {
		builder(idx[3]).(*array.TimestampBuilder).Append(arrow.Timestamp(tx.commitTS.UnixMicro()))
	}
	builder(idx[4]).(*array.Int64Builder).Append(seq)
	if err := c.appendImage(builder(idx[5]).(*array.StructBuilder), before); err != nil {
		return err
	}
	if err := c.appendImage(builder(idx[6]).(*array.StructBuilder), after); err != nil {
		return err
	}
	lb := builder(idx[7]).(*array.ListBuilder)
	if len(unavailable) == 0 {
		lb.AppendNull()
		return nil
	}
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for _, name := range unavailable {
		vb.Append(name)
	}
	return nil
}

func (c *changelog) appendImage(sb *array.StructBuilder, t decode.Tuple) error {
	// A missing image binds no column: a resync row can be written while
	// the schema waits for the stream's relation message (see lenientBind).
	if t == nil {
		sb.AppendNull()
		return nil
	}
	if c.bindErr != nil {
		return c.bindErr
	}
	sb.Append(true)
	if i, err := appendTuple(sb.FieldBuilder, c.childOf, c.unbound, c.rel, t); err != nil {
		return fmt.Errorf("%s: column %s: %w", c.name(), c.rel.Columns[i].Name, err)
	}
	return nil
}

// closeFiles closes the open files (before a schema change).
func (c *changelog) closeFiles() error {
	for key, fw := range c.files {
		df, err := fw.close()
		if err != nil {
			return err
		}
		c.closed = append(c.closed, df)
		delete(c.files, key)
	}
	return nil
}

func (c *changelog) flush(ctx context.Context, s *Sink) error {
	if c.changes == 0 {
		return nil
	}
	// Closed files go to c.closed first: a failed commit leaves them
	// where Discard finds them (and keeps them if the outcome is unknown).
	if err := c.closeFiles(); err != nil {
		return err
	}
	if err := c.commit(ctx, s.cat, c.closed, nil, c.lastEnd, s.cfg.Source.String(), nil); err != nil {
		return err
	}
	c.closed, c.changes = nil, 0
	return nil
}

func tableArrowSchema(sc *icego.Schema) (*arrow.Schema, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	return asc, nil
}
