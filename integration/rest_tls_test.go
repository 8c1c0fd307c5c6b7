package integration

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testCA is a certificate authority made for this test process, with a
// server certificate it signed for 127.0.0.1 and localhost.
type testCA struct {
	// caPEM is the CA certificate; cert and key the server's, in PEM.
	caPEM, cert, key string
	// trustStore is caPEM in a PKCS12 trust store (password changeit),
	// for JVMs.
	trustStore string
	pool       *x509.CertPool
}

var (
	caOnce   sync.Once
	caShared *testCA
	caErr    error
)

// sharedTestCA makes the process's CA once: the Spark JVM, shared by the
// tests, trusts it from its start.
func sharedTestCA() (*testCA, error) {
	caOnce.Do(func() { caShared, caErr = makeTestCA() })
	return caShared, caErr
}

// removeTestCA deletes the CA's files, if it was made (TestMain, after
// the Spark JVM that trusts it has stopped).
func removeTestCA() {
	if caShared != nil {
		_ = os.RemoveAll(filepath.Dir(caShared.caPEM))
	}
}

func makeTestCA() (*testCA, error) {
	dir, err := os.MkdirTemp("", "pg2iceberg-ca-")
	if err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pg2iceberg test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, err
	}
	ca := &testCA{caPEM: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "server.pem"), key: filepath.Join(dir, "server-key.pem"),
		trustStore: filepath.Join(dir, "trust.p12"), pool: x509.NewCertPool()}
	ca.pool.AddCert(caCert)
	for path, block := range map[string]*pem.Block{ca.caPEM: {Type: "CERTIFICATE", Bytes: caDER},
		ca.cert: {Type: "CERTIFICATE", Bytes: srvDER}, ca.key: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	out, err := exec.Command("keytool", "-importcert", "-noprompt", "-alias", "pg2iceberg-test-ca", "-file", ca.caPEM,
		"-keystore", ca.trustStore, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("keytool: %w\n%s", err, out)
	}
	return ca, nil
}

// client is an HTTPS client that trusts only the CA.
func (ca *testCA) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}}}
}

// oauthToken trades client credentials for a token at uri's token
// endpoint; it returns the status and the body.
func oauthToken(t *testing.T, c *http.Client, uri, id, secret string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
	resp, err := c.PostForm(uri+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatalf("POST %s/v1/oauth/tokens: %v", uri, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("token response: %v", err)
	}
	return resp.StatusCode, body
}

// getWith sends a GET with a bearer token and extra headers.
func getWith(t *testing.T, c *http.Client, u, token string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// failingPython runs a reader script that must fail, and returns its
// stderr.
func failingPython(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"readers/" + script}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err == nil {
		t.Errorf("%s with a wrong secret succeeded: %.300s", script, out)
	}
	return stderr.String()
}

// readerEnv is the environment without the CA bundle variables:
// requests lets REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE override a session's
// own CA (pyiceberg's ssl.cabundle), so a machine that sets them (this one
// does) would hide whether the client was configured right.
func readerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "REQUESTS_CA_BUNDLE" && k != "CURL_CA_BUNDLE" {
			env = append(env, kv)
		}
	}
	return env
}

// count304 counts the served requests answered 304 Not Modified in a
// stretch of a --debug log.
func count304(log string) int {
	return strings.Count(log, " status=304 ")
}

// The served catalog as a deployment behind TLS with OAuth2 would run it:
// HTTPS with a certificate of the test's own CA, clients trading a client
// id and secret for a token at the token endpoint, the API under a mount
// path (/v1/iceberg) with a prefix of its own. pyiceberg, Spark SQL and
// DuckDB each authenticate through the token endpoint, trust the CA, and
// read the mirrors equal to PostgreSQL; a wrong secret is refused with 401
// and a message saying so; a conditional loadTable gets 304.
func TestRESTServedTLSOAuth2(t *testing.T) {
	t.Parallel()
	jar := sparkJar(t)
	ca, err := sharedTestCA()
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	const clientID, secretEnv = "engines", "PG2ICEBERG_READER_SECRET"
	secret := fmt.Sprintf("s3cret-%d", time.Now().UnixNano())
	conn, uri, serve := servedShop(t, ca, clientID, secret, "--debug")
	wantOrders := pgRows(t, conn, ordersSelect, "shop.orders")
	wantCustomers := pgRows(t, conn, customersSelect, "shop.customers")
	spark := startSpark(t, uri, "", jar)
	spark.open["credential"] = clientID + ":" + secret
	env := append(readerEnv(), secretEnv+"="+clientID+":"+secret)

	// Each reader's requests are the log written while it read.
	seen := 0
	since := func() string {
		l := serve.log()
		s := l[seen:]
		seen = len(l)
		return s
	}
	since()
	conditional := map[string]int{}
	check := func(reader string, got interopReport, ok bool) {
		conditional[reader] = count304(since())
		if !ok {
			t.Errorf("%s did not read through the TLS/OAuth2 catalog", reader)
			return
		}
		compareRows(t, reader, "shop.orders", "id", got.Orders, wantOrders)
		compareRows(t, reader, "shop.customers", "id", got.Customers, wantCustomers)
	}
	got, ok := pythonReport(t, env, "", "pyiceberg_report.py", "--rest-uri", uri, "--credential-env", secretEnv, "--ca-bundle", ca.caPEM)
	check("pyiceberg", got, ok)
	duckEnv := append(readerEnv(), secretEnv+"="+secret)
	got, ok = pythonReport(t, duckEnv, "", "duckdb_report.py", "--rest-uri", uri, "--client-id", clientID, "--secret-env", secretEnv, "--ca-cert", ca.caPEM)
	check("DuckDB", got, ok)
	spark.wait(t)
	since()
	got = interopReport{}
	ok = spark.do(t, map[string]string{"op": "report", "orders": "pg.shop.orders", "customers": "pg.shop.customers", "changelog": "pg.shop.orders__changelog"}, &got)
	// Spark loads the tables again for a second query.
	var n []row
	ok = ok && spark.do(t, map[string]string{"op": "sql", "sql": "SELECT count(*) AS n FROM pg.shop.orders"}, &n)
	check("Spark SQL", got, ok)
	t.Logf("loadTable answered 304 per reader (If-None-Match sent and matched): %v", conditional)

	checkWrongSecret(t, ca, uri, clientID, secret, env, jar)
	checkConditionalLoad(t, ca, uri, clientID, secret)
	if strings.Contains(serve.log(), secret) {
		t.Errorf("the server's log holds the client secret")
	}
}

// servedShop mirrors the shop schema after updates and deletes, stops
// the bridge and serves the warehouse as a deployment would: over TLS with
// the CA's certificate, OAuth2 client credentials (clientID, secret), the
// mount /v1/iceberg and the prefix lake. It returns the source, the
// catalog's URI and the serving process.
func servedShop(t *testing.T, ca *testCA, clientID, secret string, extra ...string) (*pgx.Conn, string, *bridge) {
	t.Helper()
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	const slot = "pg2iceberg_shop_pub"
	b := startBridge(t, nil, runArgs(pg, "shop_pub", tg)...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `UPDATE shop.orders SET status = 'paid' WHERE id % 3 = 0`)
	exec1(t, conn, `DELETE FROM shop.orders WHERE id % 7 = 0`)
	exec1(t, conn, `UPDATE shop.customers SET active = NOT active WHERE id % 4 = 0`)
	exec1(t, conn, `DELETE FROM shop.customers WHERE id % 25 = 0`)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	args := append([]string{"serve", "--warehouse", tg.warehouse, "--catalog", tg.catalog, "--listen", "127.0.0.1:0",
		"--catalog-client-id", clientID, "--catalog-mount", "/v1/iceberg", "--catalog-prefix", "lake",
		"--catalog-tls-cert", ca.cert, "--catalog-tls-key", ca.key}, extra...)
	serve := startBridge(t, []string{"PG2ICEBERG_CATALOG_CLIENT_SECRET=" + secret}, args...)
	return conn, "https://" + listening(t, serve) + "/v1/iceberg", serve
}

// checkWrongSecret requires the token endpoint, pyiceberg and Spark to
// refuse a wrong secret with 401 and say why.
func checkWrongSecret(t *testing.T, ca *testCA, uri, clientID, secret string, env []string, jar string) {
	t.Helper()
	const why = "unknown client id or wrong secret"
	code, body := oauthToken(t, ca.client(), uri, clientID, "wrong-"+secret)
	if code != http.StatusUnauthorized || body["error"] != "invalid_client" || body["error_description"] != why {
		t.Errorf("token with a wrong secret = %d %v, want 401 invalid_client %q", code, body, why)
	}
	wrong := append(env, "PG2ICEBERG_READER_WRONG="+clientID+":wrong-"+secret, "PG2ICEBERG_READER_WRONG_SECRET=wrong-"+secret)
	if msg := failingPython(t, wrong, "pyiceberg_report.py", "--rest-uri", uri, "--credential-env", "PG2ICEBERG_READER_WRONG", "--ca-bundle", ca.caPEM); !strings.Contains(msg, why) {
		t.Errorf("pyiceberg with a wrong secret says %q, want it to say %q", tail(msg, 5), why)
	}
	duck := failingPython(t, wrong, "duckdb_report.py", "--rest-uri", uri, "--client-id", clientID, "--secret-env", "PG2ICEBERG_READER_WRONG_SECRET", "--ca-cert", ca.caPEM)
	t.Logf("DuckDB with a wrong secret says %.300q", duck)
	s := startSpark(t, uri, "", jar)
	s.open["credential"] = clientID + ":wrong-" + secret
	var msg string
	if s.do(t, map[string]string{"op": "error", "sql": "SHOW NAMESPACES IN pg"}, &msg) && !strings.Contains(msg, why) {
		t.Errorf("Spark with a wrong secret says %.500q, want it to say %q", msg, why)
	}
	t.Logf("a wrong secret: token endpoint 401 invalid_client; Spark says %.200q", msg)
}

// checkConditionalLoad loads a table through the mount and prefix, then
// again with its ETag in If-None-Match: 304 and no body.
func checkConditionalLoad(t *testing.T, ca *testCA, uri, clientID, secret string) {
	t.Helper()
	c := ca.client()
	code, body := oauthToken(t, c, uri, clientID, secret)
	tok, _ := body["access_token"].(string)
	if code != http.StatusOK || tok == "" || body["scope"] != "catalog:read" {
		t.Fatalf("token = %d %v, want 200 with a catalog:read token", code, body)
	}
	u := uri + "/v1/lake/namespaces/shop/tables/orders"
	resp, text := getWith(t, c, u, tok, nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" || !strings.Contains(text, `"metadata-location"`) {
		t.Fatalf("loadTable = %d (ETag %q) %.200s, want 200 with an ETag", resp.StatusCode, etag, text)
	}
	resp, text = getWith(t, c, u, tok, map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified || text != "" {
		t.Errorf("loadTable with If-None-Match %s = %d %.200q, want 304 and no body", etag, resp.StatusCode, text)
	}
	if resp, _ := getWith(t, c, u, "not-"+tok, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("loadTable with a token the server did not issue = %d, want 401", resp.StatusCode)
	}
}
