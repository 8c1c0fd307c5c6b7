package bridge

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// staleTables checks every table against the slot's confirmed position
// (see iceberg.StaleTable) before anything is written. A stale table stops
// the start with what to run, or with RecopyStale it is returned to be
// copied again.
func (b *bridge) staleTables(ctx context.Context, rels []*decode.Relation, confirmed decode.LSN) ([]*decode.Relation, error) {
	sink, log := b.sink, b.log
	stale, err := sink.Stale(ctx, confirmed)
	if err != nil || len(stale) == 0 {
		return nil, err
	}
	if !b.cfg.RecopyStale {
		return nil, staleError(b.cfg.Catalog, stale, b.cfg.Slot, confirmed)
	}
	// Every stale source table's mirror is copied again; a stale changelog
	// cannot be, and resumes at the slot's position, with a resync row
	// there marking the gap.
	var out []*decode.Relation
	for _, s := range stale {
		log.Warn("catalog behind commits the slot confirmed: copying the table again (--on-stale-table=recopy)", "table", s.Table,
			"catalog_watermark", s.Watermark, "newer_metadata", s.Newer, "newer_watermark", s.NewerLSN, "confirmed_flush_lsn", confirmed)
		if strings.HasSuffix(s.Table, iceberg.ChangelogSuffix) {
			log.Warn("the changelog lacks the changes in between: a changelog cannot be copied", "table", s.Table, "from", s.Watermark, "to", confirmed)
			if err := sink.ResumeChangelogAt(ctx, s.RelID, confirmed); err != nil {
				return nil, err
			}
		}
		for _, rel := range rels {
			if rel.ID == s.RelID && rel.HasKey() && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out, nil
}

// staleError says what is wrong with each stale table and what to run.
func staleError(cat iceberg.CatalogConfig, stale []iceberg.StaleTable, slot string, confirmed decode.LSN) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the catalog is behind what this bridge committed and the slot confirmed, for %d table(s):\n", len(stale))
	var repairable, broken []string
	rest := strings.HasPrefix(cat.Catalog, "http://") || strings.HasPrefix(cat.Catalog, "https://")
	for _, s := range stale {
		fmt.Fprintf(&b, "  %s\n", s.Describe(slot, confirmed))
		if s.Repairable && !rest {
			repairable = append(repairable, s.Table)
		} else {
			broken = append(broken, s.Table)
		}
	}
	b.WriteString("The catalog was restored from an older copy, or lost its last commits. Streaming on top would fork each table's history and leave out the changes in between, so nothing was written.")
	if len(repairable) > 0 {
		fmt.Fprintf(&b, " With the bridge stopped, run\n  %s\nwhich points the catalog at each table's newest valid metadata file, then start the bridge again.", repairCommandLine(cat, repairable))
	}
	if len(broken) > 0 {
		why := "their newer metadata's files are missing"
		if rest {
			why = "a REST catalog cannot be repaired by pg2iceberg (its register-table API can)"
		}
		fmt.Fprintf(&b, " pg2iceberg repair cannot bring back %s (%s).", strings.Join(broken, ", "), why)
	}
	b.WriteString(" Or start the bridge with --on-stale-table=recopy to copy the tables again instead; their changelogs then lack the changes in between.")
	return fmt.Errorf("%s", b.String())
}

// repairCommandLine is the repair command for tables, with the storage
// settings the bridge was given.
func repairCommandLine(cat iceberg.CatalogConfig, tables []string) string {
	args := []string{"pg2iceberg", "repair", "--warehouse", shellQuote(cat.Warehouse)}
	if v := cat.Catalog; v != "" {
		args = append(args, "--catalog", shellQuote(withoutPassword(v)))
	}
	if v := cat.S3Endpoint; v != "" {
		args = append(args, "--s3-endpoint", shellQuote(v), "--s3-region", shellQuote(cat.S3Region))
	}
	if cat.S3PathStyle {
		args = append(args, "--s3-path-style")
	}
	return strings.Join(append(args, tables...), " ")
}

// withoutPassword drops the password from a catalog URL (kept out of
// messages; the command reads it as run does).
func withoutPassword(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	u.User = url.User(u.User.Username())
	return u.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
