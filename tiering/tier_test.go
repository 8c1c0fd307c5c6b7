package tiering

import (
	"slices"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
)

func TestTierConfigOf(t *testing.T) {
	c, err := TierConfigOf(icego.Properties{PropTierColumn: "at", PropTierColdAfter: "720h", PropTierColdLocation: "s3://cold/tier/"})
	if err != nil || !c.Enabled() || c.ColdAfter != 720*time.Hour || c.ColdLocation != "s3://cold/tier" {
		t.Errorf("TierConfigOf = %+v, %v; want on, 720h, s3://cold/tier", c, err)
	}
	if c, err := TierConfigOf(icego.Properties{}); err != nil || c.Enabled() {
		t.Errorf("TierConfigOf(no properties) = %+v, %v; want off", c, err)
	}
	if _, err := TierConfigOf(icego.Properties{PropTierColdAfter: "a month"}); err == nil {
		t.Error("TierConfigOf(cold-after a month) gave no error")
	}
	if _, err := TierConfigOf(icego.Properties{PropTierColdAfter: "-1h"}); err == nil {
		t.Error("TierConfigOf(cold-after -1h) gave no error")
	}
	if c := c.With("", time.Hour, "/cold/", "GLACIER_IR"); c.ColdAfter != time.Hour || c.ColdLocation != "/cold" || c.Column != "at" || c.StorageClass != "GLACIER_IR" {
		t.Errorf("With = %+v", c)
	}
}

func TestPlanTiering(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c := TierConfig{Column: "at", ColdAfter: 24 * time.Hour, ColdLocation: "s3://cold/tier"}
	root := c.ColdRoot([]string{"public", "items"}, "s3://lake/wh/public.db/items")
	if root != "s3://cold/tier/public/items" {
		t.Fatalf("ColdRoot = %s", root)
	}
	files := []TierFile{
		{Path: "s3://lake/wh/public.db/items/data/old.parquet", Upper: now.Add(-48 * time.Hour), Bound: true},
		{Path: "s3://lake/wh/public.db/items/data/new.parquet", Upper: now.Add(-time.Hour), Bound: true},
		{Path: "s3://lake/wh/public.db/items/data/nobound.parquet"},
		{Path: root + "/data/cold.parquet", Upper: now.Add(-72 * time.Hour), Bound: true},
	}
	if got := PlanTiering(c, root, files, now); !slices.Equal(got, []string{files[0].Path}) {
		t.Errorf("PlanTiering = %v, want only the old hot file", got)
	}
	if got := PlanTiering(TierConfig{}, root, files, now); got != nil {
		t.Errorf("PlanTiering(off) = %v", got)
	}
}
