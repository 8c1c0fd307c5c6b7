package iceberg

import (
	"strings"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// A changelog row's partition comes from the change's own values under
// each transform; a field on a column of before or after is refused with
// the field to drop; dayOnly names the specs a speculation can write.
func TestChangelogPartition(t *testing.T) {
	_, sc := keyValueChangelog(t)
	spec, err := ConfiguredSpec(sc, []string{"hour(commit_ts)", "op", "bucket(4, xid)", "truncate(1000, lsn)", "seq"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newChangelogPart("public.t__changelog", spec, sc)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 7, 13, 45, 0, 0, time.UTC)
	tx := txInfo{xid: 77, commitLSN: 123456, commitTS: at}
	vals, key, err := p.partition(decode.Op('U'), tx, 3)
	if err != nil {
		t.Fatal(err)
	}
	hours := int32(at.Unix() / 3600)
	bucket := icego.BucketTransform{NumBuckets: 4}.Apply(icego.Optional[icego.Literal]{Valid: true, Val: icego.NewLiteral(int64(77))}).Val.Any()
	want := map[string]any{"commit_ts_hour": hours, "op": "U", "xid_bucket_4": bucket, "lsn_trunc_1000": int64(123000), "seq": int64(3)}
	for _, f := range spec.Fields() {
		if vals[f.FieldID] != want[f.Name] {
			t.Errorf("partition field %s = %v (%T), want %v (%T)", f.Name, vals[f.FieldID], vals[f.FieldID], want[f.Name], want[f.Name])
		}
	}
	// Another op or seq of the same transaction is another partition.
	if _, k2, _ := p.partition(decode.Op('D'), tx, 3); k2 == key {
		t.Errorf("op D and op U have one partition key %q", key)
	}
	if _, k3, _ := p.partition(decode.Op('U'), tx, 4); k3 == key {
		t.Errorf("seq 4 and seq 3 have one partition key %q", key)
	}

	// Per-transaction fields only: the partition is the transaction's.
	perTx, _ := ConfiguredSpec(sc, []string{"day(commit_ts)", "bucket(2, lsn)"})
	q, err := newChangelogPart("public.t__changelog", perTx, sc)
	if err != nil || !q.perTx {
		t.Fatalf("a spec of commit_ts and lsn: %v, perTx %v; want perTx", err, q != nil && q.perTx)
	}
	_, k1, _ := q.partition(decode.Op('I'), tx, 1)
	if _, k2, _ := q.partition(decode.Op('D'), tx, 9); k2 != k1 {
		t.Errorf("one transaction has partition keys %q and %q", k1, k2)
	}
	next := tx
	next.commitTS = at.Add(48 * time.Hour)
	if _, k2, _ := q.partition(decode.Op('I'), next, 1); k2 == k1 {
		t.Errorf("two days have one partition key %q", k1)
	}

	// A column of after: refused, naming the field and what to do.
	nested, err := ConfiguredSpec(sc, []string{"after.id"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newChangelogPart("public.t__changelog", nested, sc); err == nil || !strings.Contains(err.Error(), "DROP PARTITION FIELD after.id") || !strings.Contains(err.Error(), "op, lsn, xid, commit_ts, seq") {
		t.Errorf("a changelog partitioned by after.id: %v, want an error naming the field and the columns allowed", err)
	}

	for _, c := range []struct {
		fields []string
		want   bool
	}{{nil, true}, {[]string{"day(commit_ts)"}, true}, {[]string{"hour(commit_ts)"}, false}, {[]string{"day(commit_ts)", "op"}, false}, {[]string{"op"}, false}} {
		s, err := ConfiguredSpec(sc, c.fields)
		if err != nil {
			t.Fatal(err)
		}
		if got := dayOnly(s, sc); got != c.want {
			t.Errorf("dayOnly(%v) = %v, want %v", c.fields, got, c.want)
		}
	}
	if !dayOnly(ChangelogSpec(sc), sc) {
		t.Errorf("dayOnly(ChangelogSpec) = false")
	}
}
