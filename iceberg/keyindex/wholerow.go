package keyindex

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// A mirror kept by the whole row (decode.Relation.WholeRow: REPLICA
// IDENTITY FULL with no primary key, or a deferrable one, to key it by)
// names a row by all its values, which every change's full old row
// carries. Equal rows are interchangeable, so the key index holds a key
// once per live row (Index.SetRepeats), an insert adds a row and a
// delete removes one. NULL is no value: a column that is NULL adds nothing
// to the key, and every other value is preceded by its field ID, so a NULL
// differs from every value and a column added later (NULL in the rows
// before it) leaves the keys of those rows as they were. A dropped column
// changes every row's key: the table is copied again (see
// decode.NewColumns.Dropped).

// RowKeyLen is the length of a whole-row key: the first 15 bytes of the
// SHA-256 of the row's key parts, so that it is a short key (see Index),
// 16 bytes in memory whatever the row's width. Two rows that differ share
// a key with a probability of 2^-120 per pair: about 10^-16 among 10^10
// rows.
const RowKeyLen = 15

// SealRow replaces the key parts in b[start:] with their digest: the
// whole-row key of a row whose non-NULL values were appended there, each
// after its field ID.
func SealRow(b []byte, start int) []byte {
	sum := sha256.Sum256(b[start:])
	return append(b[:start], sum[:RowKeyLen]...)
}

// appendRecordKey appends the key of row i of rec, whose columns hold the
// key fields ids, in order, in the form the mirror builds it from a change
// (iceberg's mirror.appendKey).
func appendRecordKey(b []byte, rec arrow.RecordBatch, ids []int, wholeRow bool, i int) ([]byte, error) {
	start := len(b)
	for c := 0; c < int(rec.NumCols()); c++ {
		arr := rec.Column(c)
		if wholeRow {
			if arr.IsNull(i) {
				continue
			}
			b = binary.AppendUvarint(b, uint64(ids[c]))
		}
		var err error
		if b, err = AppendArray(b, arr, i); err != nil {
			return nil, fmt.Errorf("field %d: %w", ids[c], err)
		}
	}
	if wholeRow {
		b = SealRow(b, start)
	}
	return b, nil
}
