package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icegorest "github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/iceberg/rest"
)

// fixture is a real embedded SQLite catalog with namespaces shop and empty
// and one table, shop.orders, holding one snapshot of three rows.
type fixture struct {
	cfg   iceberg.CatalogConfig
	cat   catalog.Catalog
	table *table.Table
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	cfg := iceberg.CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")}
	cat, err := iceberg.OpenCatalog(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"shop", "empty"} {
		if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			t.Fatal(err)
		}
	}
	sc := icego.NewSchemaWithIdentifiers(0, []int{1},
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true},
		icego.NestedField{ID: 2, Name: "status", Type: icego.PrimitiveTypes.String})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"shop", "orders"}, sc,
		catalog.WithProperties(icego.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	arrSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"new", "paid", "new"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(arrSchema, []arrow.RecordBatch{rec})
	defer at.Release()
	if tbl, err = tbl.AppendTable(ctx, at, 10, nil); err != nil {
		t.Fatal(err)
	}
	return fixture{cfg: cfg, cat: cat, table: tbl}
}

func (f fixture) server(t *testing.T, token string) *httptest.Server {
	t.Helper()
	wh, err := f.cfg.WarehouseURI()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rest.New(f.cat, rest.Config{Warehouse: wh, Token: token, TableConfig: map[string]string{"s3.region": "eu-west-1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, srv)
}

func do(t *testing.T, method, url, auth string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

func TestHandlers(t *testing.T) {
	f := newFixture(t)
	ts := f.server(t, "")
	wh, _ := f.cfg.WarehouseURI()
	cases := []struct {
		name   string
		method string
		path   string
		status int
		want   []string // substrings of the body
	}{
		{"config", "GET", "/v1/config", 200, []string{`"overrides":{"prefix":"pg2iceberg"}`, `"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"`, `"defaults":{}`}},
		{"config by name", "GET", "/v1/config?warehouse=pg2iceberg", 200, []string{`"prefix":"pg2iceberg"`}},
		{"config by uri", "GET", "/v1/config?warehouse=" + wh, 200, []string{`"prefix":"pg2iceberg"`}},
		{"config by path", "GET", "/v1/config?warehouse=" + strings.TrimPrefix(wh, "file://"), 200, []string{`"prefix":"pg2iceberg"`}},
		{"config other warehouse", "GET", "/v1/config?warehouse=s3://elsewhere", 400, []string{`"type":"BadRequestException"`, `not served here`}},
		{"list namespaces", "GET", "/v1/namespaces", 200, []string{`{"namespaces":[["empty"],["shop"]]}`}},
		{"list namespaces prefixed", "GET", "/v1/pg2iceberg/namespaces", 200, []string{`{"namespaces":[["empty"],["shop"]]}`}},
		{"list namespaces page 1", "GET", "/v1/namespaces?pageSize=1", 200, []string{`{"namespaces":[["empty"]],"next-page-token":"1"}`}},
		{"list namespaces page 2", "GET", "/v1/namespaces?pageSize=1&pageToken=1", 200, []string{`{"namespaces":[["shop"]]}`}},
		{"list namespaces bad token", "GET", "/v1/namespaces?pageToken=x", 400, []string{`BadRequestException`}},
		{"list namespaces under shop", "GET", "/v1/namespaces?parent=shop", 200, []string{`{"namespaces":[]}`}},
		{"list namespaces under missing", "GET", "/v1/namespaces?parent=nope", 404, []string{`NoSuchNamespaceException`}},
		{"unknown prefix", "GET", "/v1/other/namespaces", 404, []string{`unknown prefix \"other\"`}},
		{"load namespace", "GET", "/v1/pg2iceberg/namespaces/shop", 200, []string{`"namespace":["shop"]`, `"properties":{`}},
		{"load missing namespace", "GET", "/v1/pg2iceberg/namespaces/nope", 404, []string{`"type":"NoSuchNamespaceException"`, `"code":404`}},
		{"namespace exists", "HEAD", "/v1/pg2iceberg/namespaces/shop", 204, nil},
		{"namespace missing", "HEAD", "/v1/pg2iceberg/namespaces/nope", 404, nil},
		{"list tables", "GET", "/v1/pg2iceberg/namespaces/shop/tables", 200, []string{`{"identifiers":[{"namespace":["shop"],"name":"orders"}]}`}},
		{"list tables empty", "GET", "/v1/namespaces/empty/tables", 200, []string{`{"identifiers":[]}`}},
		{"list tables missing namespace", "GET", "/v1/namespaces/nope/tables", 404, []string{`NoSuchNamespaceException`}},
		{"list views", "GET", "/v1/namespaces/shop/views", 200, []string{`{"identifiers":[]}`}},
		{"load view", "GET", "/v1/namespaces/shop/views/v", 404, []string{`NoSuchViewException`}},
		{"load table", "GET", "/v1/pg2iceberg/namespaces/shop/tables/orders", 200, []string{`"metadata-location":"` + f.table.MetadataLocation() + `"`, `"config":{"s3.region":"eu-west-1"}`, `"format-version":2`}},
		{"load table unprefixed", "GET", "/v1/namespaces/shop/tables/orders?snapshots=refs", 200, []string{`"metadata-location":"` + f.table.MetadataLocation() + `"`}},
		{"load table bad snapshots", "GET", "/v1/namespaces/shop/tables/orders?snapshots=some", 400, []string{`BadRequestException`}},
		{"load missing table", "GET", "/v1/pg2iceberg/namespaces/shop/tables/nope", 404, []string{`"type":"NoSuchTableException"`}},
		{"load table in missing namespace", "GET", "/v1/pg2iceberg/namespaces/nope/tables/orders", 404, []string{`"code":404`}},
		{"table exists", "HEAD", "/v1/pg2iceberg/namespaces/shop/tables/orders", 204, nil},
		{"table missing", "HEAD", "/v1/pg2iceberg/namespaces/shop/tables/nope", 404, nil},
		{"credentials not vended", "GET", "/v1/pg2iceberg/namespaces/shop/tables/orders/credentials", 200, []string{`{"storage-credentials":[]}`}},
		{"create namespace", "POST", "/v1/pg2iceberg/namespaces", 403, []string{`"type":"ForbiddenException"`, `read-only`}},
		{"drop table", "DELETE", "/v1/pg2iceberg/namespaces/shop/tables/orders", 403, []string{`read-only`}},
		{"commit table", "POST", "/v1/namespaces/shop/tables/orders", 403, []string{`read-only`}},
		{"rename table", "POST", "/v1/pg2iceberg/tables/rename", 403, []string{`read-only`}},
		{"put", "PUT", "/v1/pg2iceberg/namespaces/shop", 403, []string{`read-only`}},
		{"options", "OPTIONS", "/v1/config", 405, []string{`read-only`}},
		{"metrics report", "POST", "/v1/pg2iceberg/namespaces/shop/tables/orders/metrics", 204, nil},
		{"oauth", "POST", "/v1/oauth/tokens", 400, []string{`unsupported_grant_type`}},
		{"not v1", "GET", "/v2/config", 404, []string{`NotFoundException`}},
		{"unknown route", "GET", "/v1/pg2iceberg/namespaces/shop/tables/orders/plan", 404, []string{`no route`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := do(t, tc.method, ts.URL+tc.path, "")
			if status != tc.status {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, status, body, tc.status)
			}
			if tc.method == "HEAD" && body != "" {
				t.Errorf("HEAD %s has a body: %q", tc.path, body)
			}
			if body != "" && hdr.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s Content-Type = %q, want application/json", tc.method, tc.path, hdr.Get("Content-Type"))
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s %s body = %s, want it to contain %s", tc.method, tc.path, body, w)
				}
			}
		})
	}
}

// The metadata in loadTable is the table's current metadata, as a reader
// parses it.
func TestLoadTableMetadata(t *testing.T) {
	f := newFixture(t)
	ts := f.server(t, "")
	status, _, body := do(t, "GET", ts.URL+"/v1/pg2iceberg/namespaces/shop/tables/orders", "")
	if status != 200 {
		t.Fatalf("load table = %d %s", status, body)
	}
	var resp struct {
		Location string          `json:"metadata-location"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(resp.Metadata)
	if err != nil {
		t.Fatalf("parse metadata: %v", err)
	}
	if !meta.Equals(f.table.Metadata()) {
		t.Errorf("metadata differs from the table's:\n%s", resp.Metadata)
	}
	if got, want := meta.CurrentSnapshot().SnapshotID, f.table.CurrentSnapshot().SnapshotID; got != want {
		t.Errorf("current snapshot = %d, want %d", got, want)
	}
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token-0123456789"
	f := newFixture(t)
	ts := f.server(t, token)
	paths := []string{"/v1/config", "/v1/pg2iceberg/namespaces", "/v1/pg2iceberg/namespaces/shop/tables/orders", "/v1/pg2iceberg/namespaces/nope/tables/x", "/v1/elsewhere", "/"}
	cases := []struct {
		name   string
		method string
		auth   string
		status int
	}{
		{"no header", "GET", "", 401},
		{"no header head", "HEAD", "", 401},
		{"no header write", "POST", "", 401},
		{"wrong token", "GET", "Bearer wrong", 401},
		{"token prefix", "GET", "Bearer " + token[:10], 401},
		{"basic", "GET", "Basic " + token, 401},
		{"bare token", "GET", token, 401},
	}
	var first string
	for _, tc := range cases {
		for _, p := range paths {
			t.Run(tc.name+" "+p, func(t *testing.T) {
				status, hdr, body := do(t, tc.method, ts.URL+p, tc.auth)
				if status != tc.status {
					t.Fatalf("%s %s with %q = %d, want %d", tc.method, p, tc.auth, status, tc.status)
				}
				if hdr.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without WWW-Authenticate")
				}
				if tc.method == "HEAD" {
					return
				}
				if first == "" {
					first = body
				}
				// The same body everywhere: nothing about the catalog leaks.
				if body != first {
					t.Errorf("401 body for %s = %s, want the same as for other paths: %s", p, body, first)
				}
				for _, leak := range []string{"shop", "orders", "metadata", "pg2iceberg/", f.cfg.Warehouse} {
					if strings.Contains(body, leak) {
						t.Errorf("401 body %s contains %q", body, leak)
					}
				}
			})
		}
	}
	if !strings.Contains(first, `"type":"NotAuthorizedException"`) || !strings.Contains(first, `"code":401`) {
		t.Errorf("401 body = %s, want an ErrorModel with type NotAuthorizedException", first)
	}
	for _, auth := range []string{"Bearer " + token, "bearer " + token} {
		if status, _, body := do(t, "GET", ts.URL+"/v1/pg2iceberg/namespaces/shop/tables/orders", auth); status != 200 {
			t.Errorf("load table with %q = %d %s, want 200", auth[:7], status, body)
		}
	}
}

// iceberg-go's own REST client reads through the server, and its writes
// fail.
func TestIcebergGoClient(t *testing.T) {
	const token = "tok-abcdef"
	ctx := context.Background()
	f := newFixture(t)
	ts := f.server(t, token)
	if _, err := icegorest.NewCatalog(ctx, "pg", ts.URL); err == nil {
		t.Errorf("NewCatalog without the token succeeded, want an error")
	}
	cat, err := icegorest.NewCatalog(ctx, "pg", ts.URL, icegorest.WithOAuthToken(token))
	if err != nil {
		t.Fatal(err)
	}
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 2 {
		t.Fatalf("ListNamespaces = %v, %v; want [empty shop]", nss, err)
	}
	var tables []string
	for ident, err := range cat.ListTables(ctx, table.Identifier{"shop"}) {
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, strings.Join(ident, "."))
	}
	if len(tables) != 1 || tables[0] != "shop.orders" {
		t.Errorf("ListTables(shop) = %v, want [shop.orders]", tables)
	}
	for _, tc := range []struct {
		ident table.Identifier
		want  bool
	}{{table.Identifier{"shop", "orders"}, true}, {table.Identifier{"shop", "nope"}, false}} {
		if ok, err := cat.CheckTableExists(ctx, tc.ident); err != nil || ok != tc.want {
			t.Errorf("CheckTableExists(%v) = %v, %v; want %v", tc.ident, ok, err, tc.want)
		}
	}
	if ok, err := cat.CheckNamespaceExists(ctx, table.Identifier{"shop"}); err != nil || !ok {
		t.Errorf("CheckNamespaceExists(shop) = %v, %v; want true", ok, err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"shop", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithRowFilter(icego.EqualTo(icego.Reference("status"), "new"))).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 2 {
		t.Errorf("scan status = 'new' through REST: %d rows, want 2", at.NumRows())
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"shop", "nope"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("LoadTable(shop.nope) error = %v, want ErrNoSuchTable", err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"new"}, nil); err == nil {
		t.Errorf("CreateNamespace succeeded on a read-only catalog")
	}
	if err := cat.DropTable(ctx, table.Identifier{"shop", "orders"}); err == nil {
		t.Errorf("DropTable succeeded on a read-only catalog")
	}
	if ok, _ := f.cat.CheckTableExists(ctx, table.Identifier{"shop", "orders"}); !ok {
		t.Errorf("shop.orders is gone after a refused DropTable")
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  rest.Config
		want string // "" for valid
	}{
		{"zero", rest.Config{}, ""},
		{"prefix", rest.Config{Prefix: "lake"}, ""},
		{"reserved prefix", rest.Config{Prefix: "namespaces"}, "catalog prefix"},
		{"slash prefix", rest.Config{Prefix: "a/b"}, "catalog prefix"},
		{"token with space", rest.Config{Token: "a b"}, "white space"},
		{"secret in table config", rest.Config{TableConfig: map[string]string{"s3.secret-access-key": "x"}}, "is a secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}
