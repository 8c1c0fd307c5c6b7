package bridge

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// syncBuffer is a log sink safe for the server goroutine.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStartCatalogServer(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	cat := iceberg.CatalogConfig{Warehouse: wh, S3Region: "us-east-1"}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	cases := []struct {
		name string
		cfg  CatalogServerConfig
		want string // error substring; "" to start
	}{
		{"loopback without token", CatalogServerConfig{Catalog: cat, Listen: "127.0.0.1:0"}, ""},
		{"any interface without token", CatalogServerConfig{Catalog: cat, Listen: "0.0.0.0:0"}, "refusing"},
		{"any interface named explicitly", CatalogServerConfig{Catalog: cat, Listen: "0.0.0.0:0", Explicit: true}, ""},
		{"any interface with token", CatalogServerConfig{Catalog: cat, Listen: "0.0.0.0:0", Token: "tok-3f9a71"}, ""},
		{"vending without token", CatalogServerConfig{Catalog: cat, Listen: "127.0.0.1:0", Vend: true}, "needs --catalog-token"},
		{"vending without keys", CatalogServerConfig{Catalog: cat, Listen: "127.0.0.1:0", Vend: true, Token: "tok-3f9a71"}, "AWS_ACCESS_KEY_ID"},
		{"bad address", CatalogServerConfig{Catalog: cat, Listen: "127.0.0.1"}, "listen address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			tc.cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
			var g errgroup.Group
			stop, err := startCatalogServer(context.Background(), &g, tc.cfg)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("startCatalogServer(%s) = %v, want an error containing %q", tc.cfg.Listen, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("startCatalogServer(%s) = %v", tc.cfg.Listen, err)
			}
			defer func() {
				stop()
				if err := g.Wait(); err != nil {
					t.Errorf("catalog server's goroutine: %v", err)
				}
			}()
			m := regexp.MustCompile(`msg="catalog server listening" addr=(\S+)`).FindStringSubmatch(logs.String())
			if m == nil {
				t.Fatalf("no listening line in the log:\n%s", logs.String())
			}
			addr := strings.Replace(m[1], "0.0.0.0", "127.0.0.1", 1)
			addr = strings.Replace(addr, "[::]", "127.0.0.1", 1)
			req, _ := http.NewRequest("GET", "http://"+addr+"/v1/config", nil)
			if tc.cfg.Token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.cfg.Token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"prefix":"pg2iceberg"`) {
				t.Errorf("GET /v1/config = %d %s, want 200 with the prefix", resp.StatusCode, body)
			}
			warned := strings.Contains(logs.String(), "level=WARN")
			if want := tc.cfg.Explicit && tc.cfg.Token == ""; warned != want {
				t.Errorf("warning logged = %t, want %t; log:\n%s", warned, want, logs.String())
			}
			if tc.cfg.Token != "" && strings.Contains(logs.String(), tc.cfg.Token+" ") {
				t.Errorf("the token is in the log:\n%s", logs.String())
			}
		})
	}
}
