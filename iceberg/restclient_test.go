package iceberg_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/iceberg/rest"
)

// restServer serves a fresh embedded catalog holding namespace shop
// through pg2iceberg's own REST server, counting token requests and
// recording the last X-Test header. tls serves HTTPS.
func restServer(t *testing.T, cfg rest.Config, tls bool) (*httptest.Server, *atomic.Int32, *atomic.Value) {
	t.Helper()
	ctx := context.Background()
	cc := iceberg.CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")}
	cat, err := iceberg.OpenCatalog(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iceberg.CloseCatalog(cat) })
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	cfg.Warehouse, _ = cc.WarehouseURI()
	srv, err := rest.New(cat, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tokens atomic.Int32
	var header atomic.Value
	header.Store("")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/oauth/tokens") {
			tokens.Add(1)
		}
		header.Store(r.Header.Get("X-Test"))
		srv.ServeHTTP(w, r)
	})
	ts := httptest.NewUnstartedServer(h)
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts, &tokens, &header
}

// openREST opens the catalog at uri (asking for warehouse pg2iceberg, the
// served catalog's name) and makes two requests through it.
func openREST(t *testing.T, uri string, rc iceberg.RESTConfig) error {
	t.Helper()
	rc.Warehouse = "pg2iceberg"
	cat, err := iceberg.OpenCatalog(context.Background(), iceberg.CatalogConfig{
		Warehouse: filepath.Join(t.TempDir(), "client"), Catalog: uri, REST: rc})
	if err != nil {
		return err
	}
	defer iceberg.CloseCatalog(cat)
	for range 2 {
		if ok, err := cat.CheckNamespaceExists(context.Background(), table.Identifier{"shop"}); err != nil || !ok {
			t.Fatalf("CheckNamespaceExists(shop) = %v, %v; want true", ok, err)
		}
	}
	return nil
}

// OAuth2 client credentials: the token is fetched from the token endpoint
// and fetched again before it expires; a wrong secret is refused without
// the secret in the message.
func TestRESTClientOAuth2(t *testing.T) {
	const secret = "pg-cl13nt-s3cret"
	// A one-second token is inside oauth2's ten-second early-refresh
	// window: every request refreshes it.
	ts, tokens, _ := restServer(t, rest.Config{ClientID: "bridge", ClientSecret: secret, TokenTTL: time.Second}, false)
	if err := openREST(t, ts.URL, iceberg.RESTConfig{ClientID: "bridge", ClientSecret: secret, Scope: rest.ReadScope}); err != nil {
		t.Fatal(err)
	}
	if n := tokens.Load(); n < 3 {
		t.Errorf("token requests = %d, want one per request (3 or more) for a token about to expire", n)
	}
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := openREST(t, ts.URL, iceberg.RESTConfig{ClientID: "bridge", ClientSecretFile: file, OAuthURI: ts.URL + "/v1/oauth/tokens"}); err != nil {
		t.Errorf("client secret from a file: %v", err)
	}
	err := openREST(t, ts.URL, iceberg.RESTConfig{ClientID: "bridge", ClientSecret: "wrong-" + secret})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("wrong secret: error = %v, want invalid_client without the secret", err)
	}
	if err := openREST(t, ts.URL, iceberg.RESTConfig{}); err == nil {
		t.Errorf("no credentials: opened a catalog that needs a token")
	}
}

// A bearer token, an extra header, and TLS with a CA file or without
// verification.
func TestRESTClientTokenTLSHeaders(t *testing.T) {
	const token = "b34rer-t0ken"
	ts, _, header := restServer(t, rest.Config{Token: token}, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(ca, pemCert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := openREST(t, ts.URL, iceberg.RESTConfig{Token: token, CAFile: ca, Headers: []string{"x-test: hello"}}); err != nil {
		t.Fatal(err)
	}
	if got := header.Load(); got != "hello" {
		t.Errorf("X-Test header = %q, want hello", got)
	}
	if err := openREST(t, ts.URL, iceberg.RESTConfig{Token: token, InsecureSkipVerify: true}); err != nil {
		t.Errorf("insecure-skip-verify: %v", err)
	}
	if err := openREST(t, ts.URL, iceberg.RESTConfig{Token: token}); err == nil || !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), token) {
		t.Errorf("self-signed server without the CA: error = %v, want a certificate error without the token", err)
	}
	if err := openREST(t, ts.URL, iceberg.RESTConfig{Token: "wrong", CAFile: ca}); err == nil {
		t.Errorf("wrong token: opened the catalog")
	}
}

func TestRESTConfigValidate(t *testing.T) {
	rc := func(uri string, r iceberg.RESTConfig) iceberg.CatalogConfig {
		return iceberg.CatalogConfig{Warehouse: "/tmp/wh", Catalog: uri, REST: r}
	}
	const uri = "https://cat.example/api"
	for _, tc := range []struct {
		name string
		cfg  iceberg.CatalogConfig
		want string // "" for valid
	}{
		{"none", rc(uri, iceberg.RESTConfig{}), ""},
		{"oauth2", rc(uri, iceberg.RESTConfig{ClientID: "a", ClientSecret: "b", Scope: "catalog", OAuthURI: "https://idp/token"}), ""},
		{"sigv4", rc(uri, iceberg.RESTConfig{SigV4: true, SigV4Service: "glue", Warehouse: "123456789012"}), ""},
		{"not rest", rc("", iceberg.RESTConfig{Token: "t"}), "not an http(s):// REST catalog"},
		{"id without secret", rc(uri, iceberg.RESTConfig{ClientID: "a"}), "need both"},
		{"secret twice", rc(uri, iceberg.RESTConfig{ClientID: "a", ClientSecret: "b", ClientSecretFile: "/f"}), "given twice"},
		{"two auths", rc(uri, iceberg.RESTConfig{Token: "t", SigV4: true}), "use one of"},
		{"scope without oauth2", rc(uri, iceberg.RESTConfig{Scope: "catalog"}), "--rest-scope"},
		{"bad oauth uri", rc(uri, iceberg.RESTConfig{ClientID: "a", ClientSecret: "b", OAuthURI: "idp/token"}), "--rest-oauth-uri"},
		{"region without sigv4", rc(uri, iceberg.RESTConfig{SigV4Region: "eu-west-1"}), "--rest-sigv4"},
		{"header without colon", rc(uri, iceberg.RESTConfig{Headers: []string{"X-A"}}), "Name: value"},
		{"authorization header", rc(uri, iceberg.RESTConfig{Headers: []string{"authorization: Bearer x"}}), "PG2ICEBERG_REST_TOKEN"},
		{"header twice", rc(uri, iceberg.RESTConfig{Headers: []string{"X-A: 1", "x-a: 2"}}), "given twice"},
		{"prefix", rc(uri, iceberg.RESTConfig{Prefix: "a/b"}), "one path segment"},
	} {
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

// A header that carries a credential (an API key, a session token) is a
// secret like the token: Secrets gives its value for scrubbing, and a
// malformed line's error does not echo it. A header such as the access
// delegation one is not, so its short common value is not masked in every
// log line.
func TestRESTConfigHeaderSecrets(t *testing.T) {
	rc := iceberg.RESTConfig{Token: "tok3n", Headers: []string{
		"X-Api-Key: k3y-v4lue", "X-Amz-Security-Token: s3ss10n", "X-Iceberg-Access-Delegation: vended-credentials",
	}}
	got := strings.Join(rc.Secrets(), " ")
	for _, want := range []string{"tok3n", "k3y-v4lue", "s3ss10n"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets() = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "vended") {
		t.Errorf("Secrets() = %q holds a value that is not a credential", got)
	}
	cfg := iceberg.CatalogConfig{Warehouse: "/tmp/wh", Catalog: "https://cat.example/api",
		REST: iceberg.RESTConfig{Headers: []string{"X-Api-Key k3y-v4lue"}}}
	err := cfg.Validate()
	if err == nil || strings.Contains(err.Error(), "k3y") || !strings.Contains(err.Error(), "X-Api-Key") {
		t.Errorf("Validate() of a header without a colon = %v, want an error naming X-Api-Key without its value", err)
	}
	for line, want := range map[string]string{
		"X-Api-Key: k3y-v4lue":                            "X-Api-Key: <redacted>",
		"X-Iceberg-Access-Delegation: vended-credentials": "X-Iceberg-Access-Delegation: vended-credentials",
	} {
		if got := iceberg.RedactHeader(line); got != want {
			t.Errorf("RedactHeader(%q) = %q, want %q", line, got, want)
		}
	}
}
