package iceberg

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// CheckNames reports source tables whose Iceberg tables would be one and
// the same: a source table named t__changelog has the name of t's
// changelog. rels are checked against each other and against the tables
// the sink has, before any of them is opened (AddTable checks its table).
// A mirror name is taken even for a table without a key, which may gain
// one later.
func (s *Sink) CheckNames(rels []*decode.Relation) error {
	type owner struct {
		rel  *decode.Relation
		what string
	}
	taken := map[string]owner{}
	var errs []error
	add := func(rel *decode.Relation) {
		mid, cid := Identifiers(rel.Schema, rel.Name)
		names := map[string]string{strings.Join(mid, "."): "the mirror"}
		if !s.cfg.NoChangelog {
			names[strings.Join(cid, ".")] = "the changelog"
		}
		for name, what := range names {
			o, ok := taken[name]
			// The same name under another OID is the table dropped and
			// created again: the identity check (see identity.go) moves the
			// old one's Iceberg tables aside.
			if ok && o.rel.ID != rel.ID && o.rel.QualifiedName() != rel.QualifiedName() {
				errs = append(errs, &NameCollisionError{Table: name, First: o.rel.QualifiedName(), FirstAs: o.what, Second: rel.QualifiedName(), SecondAs: what})
				continue
			}
			taken[name] = owner{rel, what}
		}
	}
	for _, st := range s.tables {
		add(st.rel)
	}
	errs = errs[:0] // the tables the sink has were checked when they came
	for _, rel := range rels {
		add(rel)
	}
	return errors.Join(errs...)
}

// NameCollisionError is two source tables whose Iceberg tables would be
// one: Table is First's FirstAs ("the mirror", "the changelog") and
// Second's SecondAs.
type NameCollisionError struct {
	Table, First, FirstAs, Second, SecondAs string
}

func (e *NameCollisionError) Error() string {
	return fmt.Sprintf("source tables %s and %s both map to Iceberg table %s (%s of %s, %s of %s): rename one of them, leave one out of the publication, or run with --no-changelog",
		e.First, e.Second, e.Table, e.FirstAs, e.First, e.SecondAs, e.Second)
}

// Unmirrorable says that the table, not the bridge, has the problem: a
// table that joins the publication while the bridge streams and collides
// is skipped (see replication.UnmirrorableError).
func (e *NameCollisionError) Unmirrorable() bool { return true }
