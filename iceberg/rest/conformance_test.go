package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	icegorest "github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg/rest"
)

func (f fixture) serverWith(t *testing.T, cfg rest.Config) string {
	t.Helper()
	wh, err := f.cfg.WarehouseURI()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Warehouse = wh
	srv, err := rest.New(f.cat, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, srv).URL
}

func doHeader(t *testing.T, method, url string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// loadTable has an ETag; If-None-Match with it is 304 until the table
// commits again, and snapshots=refs is a different representation.
func TestLoadTableETag(t *testing.T) {
	f := newFixture(t)
	base := f.serverWith(t, rest.Config{}) + "/v1/pg2iceberg/namespaces/shop/tables/orders"
	status, hdr, _ := doHeader(t, "GET", base, nil)
	etag := hdr.Get("ETag")
	if status != 200 || !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("load table = %d with ETag %q, want 200 and a quoted ETag", status, etag)
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		status, hdr, body := doHeader(t, "GET", base, map[string]string{"If-None-Match": inm})
		if status != http.StatusNotModified || body != "" || hdr.Get("ETag") != etag {
			t.Errorf("If-None-Match %s = %d %q ETag %q, want 304, no body, ETag %s", inm, status, body, hdr.Get("ETag"), etag)
		}
	}
	if status, _, _ := doHeader(t, "GET", base, map[string]string{"If-None-Match": `"other"`}); status != 200 {
		t.Errorf("If-None-Match another tag = %d, want 200", status)
	}
	_, hdr, _ = doHeader(t, "GET", base+"?snapshots=refs", nil)
	if refs := hdr.Get("ETag"); refs == etag || refs == "" {
		t.Errorf("snapshots=refs ETag = %q, want one of its own (all: %s)", refs, etag)
	}
	// A commit makes the held tag stale.
	if _, err := f.table.NewTransaction().Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	tx := f.table.NewTransaction()
	if err := tx.SetProperties(map[string]string{"touched": "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, hdr, _ = doHeader(t, "GET", base, map[string]string{"If-None-Match": etag})
	if status != 200 || hdr.Get("ETag") == etag {
		t.Errorf("after a commit, If-None-Match the old tag = %d with ETag %q, want 200 and a new tag", status, hdr.Get("ETag"))
	}
}

// Every endpoint /v1/config lists is served, and views are listed.
func TestEndpointsServed(t *testing.T) {
	f := newFixture(t)
	ts := f.serverWith(t, rest.Config{})
	_, _, body := doHeader(t, "GET", ts+"/v1/config", nil)
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(body), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"GET": 200, "HEAD": 204, "POST": 204}
	fill := strings.NewReplacer("{prefix}", "pg2iceberg", "{namespace}", "shop", "{table}", "orders", "{view}", "nope")
	views := 0
	for _, ep := range cfg.Endpoints {
		method, path, _ := strings.Cut(ep, " ")
		status, _, body := doHeader(t, method, ts+fill.Replace(path), nil)
		if strings.Contains(path, "{view}") {
			views++
			if status != 404 || (method == "GET" && !strings.Contains(body, "NoSuchViewException")) {
				t.Errorf("%s = %d %s, want 404 NoSuchViewException", ep, status, body)
			}
			continue
		}
		if status != want[method] {
			t.Errorf("%s = %d %s, want %d", ep, status, body, want[method])
		}
	}
	if views != 2 || len(cfg.Endpoints) != 11 {
		t.Errorf("endpoints = %q, want the 11 served (2 of them views/{view})", cfg.Endpoints)
	}
}

// A mount path moves the whole API, and iceberg-go finds it there.
func TestMount(t *testing.T) {
	f := newFixture(t)
	ts := f.serverWith(t, rest.Config{Mount: "/v1/iceberg"})
	for path, want := range map[string]int{"/v1/iceberg/v1/config": 200, "/v1/iceberg/v1/pg2iceberg/namespaces/shop/tables/orders": 200, "/v1/config": 404, "/v1/iceberg/config": 404} {
		if status, _, body := doHeader(t, "GET", ts+path, nil); status != want {
			t.Errorf("GET %s = %d %s, want %d", path, status, body, want)
		}
	}
	cat, err := icegorest.NewCatalog(context.Background(), "pg", ts+"/v1/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(context.Background(), table.Identifier{"shop", "orders"}); err != nil {
		t.Errorf("LoadTable through the mount: %v", err)
	}
}

// The OAuth2 client-credentials grant: a right secret gets a read-scoped
// token that works; everything else is refused with the OAuth error.
func TestTokenEndpoint(t *testing.T) {
	const secret = "cl13nt-s3cret"
	f := newFixture(t)
	ts := f.serverWith(t, rest.Config{ClientID: "spark", ClientSecret: secret, TokenTTL: time.Minute})
	// post sends form; basic moves the client id and secret into HTTP
	// Basic authentication.
	post := func(form url.Values, basic bool) (int, string) {
		req, _ := http.NewRequest("POST", ts+"/v1/oauth/tokens", nil)
		if basic {
			req.SetBasicAuth(form.Get("client_id"), form.Get("client_secret"))
			form.Del("client_id")
			form.Del("client_secret")
		}
		req.Body = io.NopCloser(strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	form := func(kv ...string) url.Values {
		v := url.Values{"grant_type": {"client_credentials"}, "client_id": {"spark"}, "client_secret": {secret}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		want   string
	}{
		{"wrong secret", form("client_secret", "nope"), 401, "invalid_client"},
		{"wrong id", form("client_id", "trino"), 401, "invalid_client"},
		{"password grant", form("grant_type", "password"), 400, "unsupported_grant_type"},
		{"write scope", form("scope", "catalog:write"), 400, "invalid_scope"},
		{"default scope", form("scope", "catalog"), 200, `"scope":"catalog:read"`},
		{"no scope", form(), 200, `"expires_in":60`},
	} {
		status, body := post(tc.form, false)
		if status != tc.status || !strings.Contains(body, tc.want) || strings.Contains(body, secret) {
			t.Errorf("%s: token = %d %s, want %d with %s and without the secret", tc.name, status, body, tc.status, tc.want)
		}
	}
	status, body := post(form(), true)
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := json.Unmarshal([]byte(body), &tok); status != 200 || err != nil || tok.AccessToken == "" || !strings.EqualFold(tok.TokenType, "bearer") {
		t.Fatalf("token with Basic auth = %d %s, want 200 and a bearer token", status, body)
	}
	tables := ts + "/v1/pg2iceberg/namespaces/shop/tables"
	if status, _, _ := doHeader(t, "GET", tables, map[string]string{"Authorization": "Bearer " + tok.AccessToken}); status != 200 {
		t.Errorf("list tables with the issued token = %d, want 200", status)
	}
	for _, auth := range []string{"", "Bearer " + tok.AccessToken[:20], "Bearer " + secret} {
		if status, _, _ := doHeader(t, "GET", tables, map[string]string{"Authorization": auth}); status != 401 {
			t.Errorf("list tables with %q = %d, want 401", auth, status)
		}
	}
	if status, _, _ := doHeader(t, "GET", ts+"/v1/oauth/tokens", nil); status != 405 {
		t.Errorf("GET /v1/oauth/tokens = %d, want 405", status)
	}
	// iceberg-go with client credentials: the flow Spark and pyiceberg use.
	cat, err := icegorest.NewCatalog(context.Background(), "pg", ts, icegorest.WithCredential("spark:"+secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(context.Background(), table.Identifier{"shop", "orders"}); err != nil {
		t.Errorf("LoadTable with client credentials: %v", err)
	}
	if _, err := icegorest.NewCatalog(context.Background(), "pg", ts, icegorest.WithCredential("spark:wrong")); err == nil {
		t.Errorf("NewCatalog with a wrong secret succeeded")
	}
}
