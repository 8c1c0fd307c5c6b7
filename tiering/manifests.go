package tiering

import (
	"context"
	"fmt"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Manifest rewrite: every commit adds a manifest (or two) to the table's
// current snapshot, and a reader plans a scan by reading every one. Past
// MaxManifests data manifests they are merged into few, target-sized ones
// (iceberg-go's Transaction.RewriteManifests, a metadata-only replace
// snapshot: no data file is read or moved, so the key index stays valid).
// The library leaves delete manifests as they are: MergeDeleteManifests
// (deletemanifests.go) merges those.

// MaxManifests is how many data manifests a table's current snapshot may
// have before they are rewritten: planning reads at most this many plus
// the few commits since the last check (rewriteCheckEvery), not one per
// flush.
const MaxManifests = 16

// ManifestRewrite is what RewriteManifests found and did.
type ManifestRewrite struct {
	// Before and After are the current snapshot's data manifests before and
	// after the rewrite (equal when nothing was due).
	Before, After int
	// Deletes and DeletesAfter are the current snapshot's delete
	// manifests before and after (see MergeDeleteManifests).
	Deletes, DeletesAfter int
	// Rewritten says a rewrite of either was committed (or, dry, would be).
	Rewritten bool
}

// TidyManifests rewrites tbl's data manifests (RewriteManifests) and merges
// its delete manifests (MergeDeleteManifests), each when it has more than
// limit (0: MaxManifests). It returns the table after them.
func TidyManifests(ctx context.Context, cat catalog.Catalog, tbl *table.Table, limit int, dry bool) (*table.Table, ManifestRewrite, error) {
	if limit <= 0 {
		limit = MaxManifests
	}
	out, r, err := RewriteManifests(ctx, tbl, limit, dry)
	r.DeletesAfter = r.Deletes
	if err != nil || r.Deletes <= limit {
		return out, r, err
	}
	out, _, after, err := MergeDeleteManifests(ctx, cat, out, limit, dry)
	if err != nil {
		return out, r, err
	}
	r.DeletesAfter, r.Rewritten = after, r.Rewritten || after < r.Deletes
	return out, r, nil
}

// CountManifests counts the data and delete manifests of tbl's current
// snapshot.
func CountManifests(ctx context.Context, tbl *table.Table) (data, deletes int, err error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return 0, 0, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("file IO of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	mans, err := snap.Manifests(fsys)
	if err != nil {
		return 0, 0, fmt.Errorf("manifests of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	for _, m := range mans {
		if m.ManifestContent() == icego.ManifestContentData {
			data++
		} else {
			deletes++
		}
	}
	return data, deletes, nil
}

// RewriteManifests merges the data manifests of tbl's current snapshot when
// it has more than limit (0: MaxManifests); dry only says whether it would.
// It returns the table after the rewrite (tbl when none was committed). An
// error means nothing was committed.
func RewriteManifests(ctx context.Context, tbl *table.Table, limit int, dry bool) (*table.Table, ManifestRewrite, error) {
	if limit <= 0 {
		limit = MaxManifests
	}
	var r ManifestRewrite
	var err error
	if r.Before, r.Deletes, err = CountManifests(ctx, tbl); err != nil {
		return tbl, r, err
	}
	r.After = r.Before
	if r.Before <= limit {
		return tbl, r, nil
	}
	if dry {
		r.Rewritten = true
		return tbl, r, nil
	}
	name := strings.Join(tbl.Identifier(), ".")
	txn := tbl.NewTransaction()
	res, err := txn.RewriteManifests(ctx)
	if err != nil {
		return tbl, r, fmt.Errorf("rewrite manifests of %s: %w", name, err)
	}
	if res.IsNoOp() {
		return tbl, r, nil
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return tbl, r, fmt.Errorf("rewrite manifests of %s: %w", name, err)
	}
	r.Rewritten = true
	r.After = r.Before - len(res.RewrittenManifests) + len(res.AddedManifests)
	return out, r, nil
}
