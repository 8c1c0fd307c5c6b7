package iceberg

import (
	"fmt"
	"strconv"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// A changelog's partition spec: day(commit_ts) unless the configuration
// (changelog_partition) or another writer says otherwise. Its fields may
// transform the columns every change has before its images: op, lsn,
// xid, commit_ts and seq. The partition of each row is computed from
// them and recorded in the manifest, never inferred from the file's
// column bounds (which holds only while a file has one value of each).

// changelogSources are the changelog columns a partition field may take
// as its source, in changelogPart's order.
var changelogSources = []string{colOp, colLSN, colXID, colCommitTS, colSeq}

// changelogPart computes the partition of changelog rows under one spec.
type changelogPart struct {
	spec   icego.PartitionSpec
	fields []clField
	perTx  bool // every field's source is the transaction's (lsn, xid, commit_ts)
	// last is the partition of the last row, reused while perTx and the
	// transaction is the same.
	lastTx   txInfo
	lastVals map[int]any
	lastKey  string
}

// clField is one field of the spec and its source (an index into
// changelogSources).
type clField struct {
	pf  icego.PartitionField
	src int
}

// newChangelogPart binds spec over the changelog schema sc; nil for an
// unpartitioned spec. A field whose source is another column (a column of
// before or after) is refused, naming it.
func newChangelogPart(table string, spec icego.PartitionSpec, sc *icego.Schema) (*changelogPart, error) {
	if spec.IsUnpartitioned() {
		return nil, nil
	}
	p := &changelogPart{spec: spec, perTx: true}
	for _, pf := range spec.Fields() {
		name, _ := sc.FindColumnName(pf.SourceID())
		src := -1
		for i, s := range changelogSources {
			if f, ok := sc.FindFieldByName(s); ok && f.ID == pf.SourceID() {
				src = i
			}
		}
		if src < 0 {
			return nil, fmt.Errorf("%s: partition field %s (of %s): a changelog is partitioned by its columns %s only; drop the field (ALTER TABLE ... DROP PARTITION FIELD %s) or set changelog_partition in the configuration file",
				table, pf.Name, name, strings.Join(changelogSources, ", "), pf.Name)
		}
		if src == 0 || src == 4 {
			p.perTx = false
		}
		p.fields = append(p.fields, clField{pf: pf, src: src})
	}
	return p, nil
}

// partition returns the partition values of a changelog row (by
// partition field ID) and a key naming the partition within the spec.
func (p *changelogPart) partition(op decode.Op, tx txInfo, seq int64) (map[int]any, string, error) {
	if p.perTx && p.lastVals != nil && tx == p.lastTx {
		return p.lastVals, p.lastKey, nil
	}
	vals := make(map[int]any, len(p.fields))
	var key strings.Builder
	key.WriteString(strconv.Itoa(p.spec.ID()))
	for _, f := range p.fields {
		var src any
		switch f.src {
		case 0:
			src = string(op)
		case 1:
			src = int64(tx.commitLSN)
		case 2:
			src = int64(tx.xid)
		case 3:
			src = icego.Timestamp(tx.commitTS.UnixMicro())
		default:
			src = seq
		}
		v, err := transformValue(f.pf.Transform, src)
		if err != nil {
			return nil, "", fmt.Errorf("partition field %s: %w", f.pf.Name, err)
		}
		vals[f.pf.FieldID] = v
		fmt.Fprintf(&key, "/%v", v)
	}
	if p.perTx {
		p.lastTx, p.lastVals, p.lastKey = tx, vals, key.String()
	}
	return vals, key.String(), nil
}

// dayOnly reports whether spec partitions by day(commit_ts) alone (or not
// at all): the specs a speculation's changelog files can be written
// under, since their commit LSN and time are known only at the commit.
func dayOnly(spec icego.PartitionSpec, sc *icego.Schema) bool {
	if spec.IsUnpartitioned() {
		return true
	}
	f, ok := sc.FindFieldByName(colCommitTS)
	if !ok || spec.NumFields() != 1 {
		return false
	}
	pf := spec.Field(0)
	_, isDay := pf.Transform.(icego.DayTransform)
	return isDay && pf.SourceID() == f.ID
}
