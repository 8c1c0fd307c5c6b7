package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// status reports state without --config, even when a rule is what makes a
// column mappable (it runs no type check), and shows positions as they
// are: right after the copy the mirror's watermark is the copy's LSN, not
// 0/0, and a keyless table is listed as having no mirror. The log says
// where the stream starts after a restart (the slot's confirmed
// position) and where the bridge stopped, never 0/0.
func TestStatusAfterCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE shapes (id int PRIMARY KEY, p point);
		INSERT INTO shapes VALUES (1, '(1,2)'), (2, '(3,4)');
		CREATE TABLE notes (body text);
		INSERT INTO notes VALUES ('a');
		CREATE PUBLICATION st_pub FOR TABLE shapes, notes;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("rules:\n  - column: public.shapes.p\n    to: string\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	addr := freeAddr(t)
	run := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "st_pub", "--config", cfg, "--metrics-addr", addr}, tg.args()...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_st_pub", b)
	// /status too shows the copy's LSN as the mirror's watermark.
	_, point, _ := strings.Cut(lastLine(b.log(), `msg="slot created"`), "consistent_point=")
	var st struct {
		Tables []struct {
			Table     string `json:"table"`
			Watermark string `json:"watermark_lsn"`
		} `json:"tables"`
	}
	if code, body := httpGet(t, "http://"+addr+"/status", ""); code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("/status = %d %s", code, body)
	}
	for _, tb := range st.Tables {
		if want := strings.TrimSpace(point); tb.Table == "public.shapes" && tb.Watermark != want {
			t.Errorf("/status: public.shapes watermark %s right after the copy, want the copy's %s", tb.Watermark, want)
		}
	}
	b.stop(t)
	copied := lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_st_pub'")
	if s := lastLine(b.log(), `msg=stopped`); !strings.Contains(s, "lsn="+copied.String()) {
		t.Errorf("stop logged %q, want lsn=%s (the slot's confirmed position)", s, copied)
	}

	out, err := runOnce(t, append([]string{"status", "--source", pg.SuperURL("postgres"), "--publication", "st_pub"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("status without --config: %v\n%s", err, out)
	}
	t.Logf("status:\n%s", out)
	for _, re := range []string{
		`(?m)^slot pg2iceberg_st_pub: confirmed_flush_lsn ` + copied.String() + `, `,
		`(?m)^public\.shapes +watermark ` + copied.String() + ` +last commit \S+ +copied at ` + copied.String() + `  live files 1 data \+ 0 delete$`,
		`(?m)^public\.shapes__changelog +no change recorded yet$`,
		`(?m)^public\.notes +no mirror: the table has no primary key or replica identity$`,
		`(?m)^public\.notes__changelog +no change recorded yet$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status output does not match %s", re)
		}
	}
	if strings.Contains(out, "0/0") {
		t.Errorf("status shows 0/0 after the copy")
	}

	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_st_pub", b)
	if s := lastLine(b.log(), "msg=streaming"); !strings.Contains(s, "from="+copied.String()) {
		t.Errorf("restart logged %q, want from=%s (the slot's confirmed position)", s, copied)
	}
	exec1(t, conn, `UPDATE shapes SET p = '(5,6)' WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_st_pub", b)
	b.stop(t)
	after := lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_st_pub'")
	out, err = runOnce(t, append([]string{"status", "--source", pg.SuperURL("postgres"), "--publication", "st_pub"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	t.Logf("status after a change:\n%s", out)
	if !regexp.MustCompile(`(?m)^public\.shapes__changelog +watermark 0/[0-9A-F]+ +last commit \S+  live files 1 data \+ 0 delete$`).MatchString(out) {
		t.Errorf("status after a change does not show the changelog's watermark")
	}
	if after <= copied {
		t.Errorf("slot at %s after a change, want past %s", after, copied)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots").Scan(&n); err != nil || n != 1 {
		t.Errorf("%d slots (%v), want 1: status must not create any", n, err)
	}
}
