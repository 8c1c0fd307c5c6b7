package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// sourceForms writes a connection to pg as user with password in every
// form pgx accepts, each with a second secret where the form has one
// (sslpassword is only read with an encrypted sslkey, but it is a secret
// all the same).
func sourceForms(pg *harness.Postgres, user, password string) map[string]string {
	hp := fmt.Sprintf("%s:%d", pg.Host, pg.Port)
	return map[string]string{
		"URL userinfo":            fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable&sslpassword=%s-ssl", user, password, hp, password),
		"URL query":               fmt.Sprintf("postgresql://%s@%s/postgres?sslmode=disable&password=%s", user, hp, password),
		"keyword/value":           fmt.Sprintf("host=%s port=%d user=%s password=%s sslpassword=%s-ssl dbname=postgres sslmode=disable", pg.Host, pg.Port, user, password, password),
		"keyword/value spaced":    fmt.Sprintf("host=%s port=%d user=%s password = %s dbname=postgres sslmode=disable", pg.Host, pg.Port, user, password),
		"keyword/value quoted":    fmt.Sprintf(`host=%s port=%d user=%s password='%s' dbname=postgres sslmode=disable`, pg.Host, pg.Port, user, password),
		"keyword/value backslash": fmt.Sprintf(`host=%s port=%d user=%s password=%s dbname=postgres sslmode=disable`, pg.Host, pg.Port, user, strings.ReplaceAll(password, "-", `\-`)),
	}
}

// leaks reports which parts of a password text shows.
func leaks(text, password string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(password, func(r rune) bool { return r == '-' || r == ' ' || r == '\'' || r == '\\' }) {
		if len(part) >= 4 && strings.Contains(text, part) {
			out = append(out, part)
		}
	}
	return out
}

// A password in any form of the source or catalog connection string never
// shows in the bridge's stderr, its exit error, status output, /metrics or
// /status: not when it is wrong, not when it works.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE PUBLICATION sec_pub FOR TABLE t;
		CREATE ROLE app LOGIN REPLICATION PASSWORD 'Right-Passw0rd-kq';
		GRANT SELECT ON t TO app;`)
	exec1(t, conn, `INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 10) g`)
	tg := localTarget(t)
	const wrong = "Wr0ng-Secr3t-zx"
	check := func(t *testing.T, what, out, password string) {
		t.Helper()
		if l := leaks(out, password); len(l) > 0 {
			t.Errorf("%s shows %q of the password:\n%s", what, l, tail(out, 15))
		}
	}
	for name, source := range sourceForms(pg, "app", wrong) {
		t.Run("wrong password, "+name, func(t *testing.T) {
			for _, cmd := range []string{"run", "status"} {
				out, err := runOnce(t, append([]string{cmd, "--source", source, "--publication", "sec_pub"}, tg.args()...)...)
				if err == nil || !strings.Contains(out, "authentication failed") {
					t.Errorf("%s with a wrong password: err %v, want an authentication error; output:\n%s", cmd, err, out)
				}
				check(t, cmd, out, wrong)
			}
		})
	}
	catalogs := map[string]string{
		"SQL catalog URL userinfo": fmt.Sprintf("postgres://app:%s@%s:%d/postgres?sslmode=disable", wrong, pg.Host, pg.Port),
		"SQL catalog URL query":    fmt.Sprintf("postgres://app@%s:%d/postgres?sslmode=disable&password=%s", pg.Host, pg.Port, wrong),
		"REST catalog":             fmt.Sprintf("http://cat:%s@127.0.0.1:1/api?token=%s-tok&credential=id:%s-cred", wrong, wrong, wrong),
	}
	for name, cat := range catalogs {
		t.Run(name, func(t *testing.T) {
			for _, cmd := range []string{"run", "status"} {
				out, err := runOnce(t, cmd, "--source", pg.SuperURL("postgres"), "--publication", "sec_pub", "--warehouse", tg.warehouse, "--catalog", cat)
				if err == nil {
					t.Errorf("%s with catalog %s succeeded; output:\n%s", cmd, name, out)
				}
				check(t, cmd, out, wrong)
			}
		})
	}

	// Strings pgx would misread (part of the password taken for the host)
	// and a keyword/value catalog (taken for a SQLite file name) are refused.
	for what, a := range map[string][]string{
		"an unencoded @ in the password": {"--source", fmt.Sprintf("postgres://app:%s@x@%s:%d/postgres", wrong, pg.Host, pg.Port), "--warehouse", tg.warehouse},
		"a keyword/value catalog":        {"--source", pg.SuperURL("postgres"), "--warehouse", tg.warehouse, "--catalog", fmt.Sprintf("host=%s password=%s", pg.Host, wrong)},
	} {
		out, err := runOnce(t, append([]string{"run", "--publication", "sec_pub"}, a...)...)
		if err == nil || !strings.Contains(out, "pg2iceberg: ") {
			t.Errorf("%s: err %v, output:\n%s", what, err, out)
		}
		check(t, what, out, wrong)
	}
	if m, _ := filepath.Glob("*" + wrong + "*"); len(m) > 0 {
		t.Errorf("files named with the password: %v", m)
	}

	const right = "Right-Passw0rd-kq"
	for name, source := range sourceForms(pg, "app", right) {
		t.Run("working password, "+name, func(t *testing.T) {
			addr := freeAddr(t)
			slot := "sec_" + strings.NewReplacer(" ", "_", "/", "_").Replace(strings.ToLower(name))
			tg := localTarget(t)
			b := startBridge(t, nil, append([]string{"run", "--source", source, "--publication", "sec_pub", "--slot", slot, "--flush-interval", "1s", "--metrics-addr", addr}, tg.args()...)...)
			waitSlot(t, conn, slot, b)
			exec1(t, conn, `UPDATE t SET v = v || 'x'`)
			waitCaughtUp(t, conn, slot, b)
			for _, path := range []string{"/metrics", "/status"} {
				code, body := httpGet(t, "http://"+addr+path, "")
				if code != 200 {
					t.Errorf("%s: HTTP %d", path, code)
				}
				check(t, path, body, right)
			}
			b.stop(t)
			check(t, "the bridge's log", b.log(), right)
			out, err := runOnce(t, append([]string{"status", "--source", source, "--publication", "sec_pub", "--slot", slot}, tg.args()...)...)
			if err != nil {
				t.Errorf("status: %v\n%s", err, out)
			}
			check(t, "status", out, right)
			exec1(t, conn, `SELECT pg_drop_replication_slot($1)`, slot)
		})
	}
}
