package history

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// RefInfo is one tag or branch.
type RefInfo struct {
	Name       string `json:"name"`
	Type       string `json:"type"` // "tag" or "branch"
	SnapshotID int64  `json:"snapshot_id"`
	LSN        string `json:"lsn,omitempty"`
}

// Refs lists tbl's refs of type kind (table.TagRef or table.BranchRef;
// "" for both), by name.
func Refs(tbl *table.Table, kind table.RefType) ([]RefInfo, error) {
	var out []RefInfo
	for name, ref := range tbl.Metadata().Refs() {
		if kind != "" && ref.SnapshotRefType != kind {
			continue
		}
		info := RefInfo{Name: name, Type: string(ref.SnapshotRefType), SnapshotID: ref.SnapshotID}
		if s := tbl.Metadata().SnapshotByID(ref.SnapshotID); s != nil {
			wm, ok, err := Watermark(tbl, s)
			if err != nil {
				return nil, err
			}
			if ok {
				info.LSN = wm.String()
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b RefInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// CreateRef points a new tag or branch called name at snapshot id. It
// fails if the name is taken (checked again by the catalog at commit).
func CreateRef(ctx context.Context, cat catalog.Catalog, tbl *table.Table, name string, kind table.RefType, id int64) (*table.Table, error) {
	if err := checkRefName(name); err != nil {
		return nil, err
	}
	tname := strings.Join(tbl.Identifier(), ".")
	if ref, ok := findRef(tbl, name); ok {
		return nil, fmt.Errorf("table %s already has a %s %q (at snapshot %d): drop it first, or pick another name", tname, ref.SnapshotRefType, name, ref.SnapshotID)
	}
	if tbl.Metadata().SnapshotByID(id) == nil {
		return nil, fmt.Errorf("table %s has no snapshot %d: %w", tname, id, ErrNoSnapshot)
	}
	return commit(ctx, cat, tbl, fmt.Sprintf("create %s %q on", kind, name),
		[]table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(name, nil)},
		[]table.Update{table.NewSetSnapshotRefUpdate(name, id, kind, 0, 0, 0)})
}

// DropRef removes the tag or branch called name; kind says which the
// caller means, so that dropping a branch as a tag (or main) is refused.
func DropRef(ctx context.Context, cat catalog.Catalog, tbl *table.Table, name string, kind table.RefType) (*table.Table, error) {
	tname := strings.Join(tbl.Identifier(), ".")
	if name == table.MainBranch {
		return nil, fmt.Errorf("branch main of %s is the table itself and cannot be dropped", tname)
	}
	ref, ok := findRef(tbl, name)
	switch {
	case !ok:
		return nil, fmt.Errorf("table %s has no %s %q (its refs: %s): %w", tname, kind, name, strings.Join(refNames(tbl.Metadata()), ", "), ErrNoSnapshot)
	case ref.SnapshotRefType != kind:
		return nil, fmt.Errorf("%q of table %s is a %s, not a %s: use pg2iceberg %s drop", name, tname, ref.SnapshotRefType, kind, ref.SnapshotRefType)
	}
	id := ref.SnapshotID
	return commit(ctx, cat, tbl, fmt.Sprintf("drop %s %q of", kind, name),
		[]table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(name, &id)},
		[]table.Update{table.NewRemoveSnapshotRefUpdate(name)})
}

// Rollback points tbl's main branch back at snapshot id, an ancestor of
// its current snapshot, and sets props in the same commit (a mirror is
// marked to be copied again, see cmd_refs.go).
func Rollback(ctx context.Context, tbl *table.Table, id int64, props map[string]string) (*table.Table, error) {
	tname := strings.Join(tbl.Identifier(), ".")
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return nil, fmt.Errorf("table %s has no snapshot to roll back", tname)
	}
	if cur.SnapshotID == id && len(props) == 0 {
		return tbl, nil
	}
	onMain := false
	for _, s := range Ancestry(tbl) {
		onMain = onMain || s.SnapshotID == id
	}
	if !onMain {
		return nil, fmt.Errorf("snapshot %d is not an ancestor of %s's current snapshot %d: a rollback goes back along main's history (see pg2iceberg snapshots --table %s)", id, tname, cur.SnapshotID, tname)
	}
	txn := tbl.NewTransaction()
	if cur.SnapshotID != id {
		if err := txn.RollbackToSnapshot(id); err != nil {
			return nil, fmt.Errorf("roll back %s to snapshot %d: %w", tname, id, err)
		}
	}
	if len(props) > 0 {
		if err := txn.SetProperties(props); err != nil {
			return nil, fmt.Errorf("roll back %s: %w", tname, err)
		}
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("roll back %s to snapshot %d: %w", tname, id, err)
	}
	return out, writeVersionHint(ctx, out)
}

func findRef(tbl *table.Table, name string) (table.SnapshotRef, bool) {
	for n, ref := range tbl.Metadata().Refs() {
		if n == name {
			return ref, true
		}
	}
	return table.SnapshotRef{}, false
}

// checkRefName refuses names engines cannot address plainly.
func checkRefName(name string) error {
	switch {
	case name == "":
		return errors.New("give the ref a name (--name)")
	case name == table.MainBranch:
		return errors.New("main is the table's own branch: pick another name")
	case name == iceberg.TagConsistent:
		return fmt.Errorf("%s is the tag the bridge moves with run --consistent-tag: pick another name (tag create --all makes one that never moves)", name)
	case strings.ContainsAny(name, " \t\n/`'\"."):
		return fmt.Errorf("ref name %q: use letters, digits, - and _ (engines quote other names differently)", name)
	}
	return nil
}

// commit commits updates to tbl's catalog entry, then reloads the table
// and points its version hint at the new metadata.
func commit(ctx context.Context, cat catalog.Catalog, tbl *table.Table, what string, reqs []table.Requirement, updates []table.Update) (*table.Table, error) {
	tname := strings.Join(tbl.Identifier(), ".")
	if _, _, err := cat.CommitTable(ctx, tbl.Identifier(), reqs, updates); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, tname, err)
	}
	out, err := cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		return nil, fmt.Errorf("reload %s: %w", tname, err)
	}
	return out, writeVersionHint(ctx, out)
}

// writeVersionHint points metadata/version-hint.text at tbl's metadata
// file, as the bridge does after its commits (catalog-less readers).
func writeVersionHint(ctx context.Context, tbl *table.Table) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	w, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil
	}
	hint := strings.TrimSuffix(path.Base(tbl.MetadataLocation()), ".metadata.json")
	if err := w.WriteFile(tbl.Location()+"/metadata/version-hint.text", []byte(hint)); err != nil {
		return fmt.Errorf("write version hint of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	return nil
}

// IsChangelog reports whether tbl is a bridge's changelog table.
func IsChangelog(tbl *table.Table) bool {
	return strings.HasSuffix(tbl.Identifier()[len(tbl.Identifier())-1], iceberg.ChangelogSuffix) && Source(tbl) != ""
}

// Source is the source identity (system id/database/slot) the bridge
// recorded in tbl's newest snapshot that has one, "" for a table the
// bridge never wrote.
func Source(tbl *table.Table) string {
	for _, s := range Ancestry(tbl) {
		if s.Summary != nil && s.Summary.Properties[iceberg.PropSource] != "" {
			return s.Summary.Properties[iceberg.PropSource]
		}
	}
	return ""
}
