package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

var flagOnStaleTable = &cli.StringFlag{Name: "on-stale-table", EnvVars: env("on-stale-table"), Value: "fail",
	Usage: "a table whose catalog entry is behind commits the slot confirmed (a catalog restored from an older copy): fail (say what to run), or recopy (copy the table again; its changelog then lacks the changes in between)"}

// staleTables checks every table against the slot's confirmed position
// (see iceberg.StaleTable) before anything is written. With
// --on-stale-table=fail (the default) a stale table stops the start with
// what to run; with recopy it returns the tables to copy again.
func staleTables(ctx context.Context, c *cli.Context, sink *iceberg.Sink, rels []*decode.Relation, slot string, confirmed decode.LSN, log *slog.Logger) ([]*decode.Relation, error) {
	policy := c.String(flagOnStaleTable.Name) // "" for backfill, which has no such flag: fail
	if policy != "" && policy != "fail" && policy != "recopy" {
		return nil, fmt.Errorf("--on-stale-table %q: use fail or recopy", policy)
	}
	stale, err := sink.Stale(ctx, confirmed)
	if err != nil || len(stale) == 0 {
		return nil, err
	}
	if policy != "recopy" {
		return nil, staleError(c, stale, slot, confirmed)
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
func staleError(c *cli.Context, stale []iceberg.StaleTable, slot string, confirmed decode.LSN) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the catalog is behind what this bridge committed and the slot confirmed, for %d table(s):\n", len(stale))
	var repairable, broken []string
	rest := restCatalog(c)
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
		fmt.Fprintf(&b, " With the bridge stopped, run\n  %s\nwhich points the catalog at each table's newest valid metadata file, then start the bridge again.", repairCommandLine(c, repairable))
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

// staleNote is what status adds to the line of a stale table ("" when it
// is not stale).
func staleNote(ctx context.Context, tbl *table.Table, confirmed decode.LSN) string {
	s, err := iceberg.FindStale(ctx, tbl, "", confirmed)
	if err != nil {
		return "  (not checked against the slot: " + err.Error() + ")"
	}
	if s == nil {
		return ""
	}
	way := "run pg2iceberg repair for it"
	if !s.Repairable {
		way = "its newer metadata's files are missing: copy it again (run --on-stale-table=recopy)"
	}
	return fmt.Sprintf("  STALE, needs a human: the catalog points at %s, but this bridge committed up to %s (confirmed by the slot) in a newer metadata file; %s, or see the error of pg2iceberg run",
		s.Current[strings.LastIndex(s.Current, "/")+1:], s.NewerLSN, way)
}

func restCatalog(c *cli.Context) bool {
	cat := c.String(flagCatalog.Name)
	return strings.HasPrefix(cat, "http://") || strings.HasPrefix(cat, "https://")
}

// repairCommandLine is the repair command for tables, with the storage
// flags this command was given.
func repairCommandLine(c *cli.Context, tables []string) string {
	args := []string{"pg2iceberg", "repair", "--warehouse", shellQuote(c.String(flagWarehouse.Name))}
	if v := c.String(flagCatalog.Name); v != "" {
		args = append(args, "--catalog", shellQuote(withoutPassword(v)))
	}
	if v := c.String(flagS3Endpoint.Name); v != "" {
		args = append(args, "--s3-endpoint", shellQuote(v), "--s3-region", shellQuote(c.String(flagS3Region.Name)))
	}
	if c.Bool(flagS3PathStye.Name) {
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
