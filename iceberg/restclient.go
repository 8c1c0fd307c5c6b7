package iceberg

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/apache/iceberg-go/catalog/rest"
)

// RESTConfig says how to reach and authenticate to a REST catalog (a
// Catalog of http(s)://...). The zero value sends no credentials and
// trusts the system's certificate authorities.
type RESTConfig struct {
	// ClientID and ClientSecret switch on OAuth2 client credentials: a
	// token is fetched from OAuthURI with Scope and fetched again before
	// it expires (iceberg-go's token source, golang.org/x/oauth2).
	ClientID     string
	ClientSecret string // a secret: never logged
	// ClientSecretFile holds the client secret when ClientSecret is empty.
	ClientSecretFile string
	// OAuthURI is the token endpoint; default {catalog}/v1/oauth/tokens.
	OAuthURI string
	// Scope is the OAuth2 scope asked for; default "catalog".
	Scope string
	// Token is a bearer token sent as is (no OAuth2 exchange).
	Token string // a secret: never logged
	// TokenFile holds the bearer token when Token is empty.
	TokenFile string
	// SigV4 signs every request with AWS Signature Version 4, with the
	// credentials of the AWS default chain (Glue's and S3 Tables' Iceberg
	// REST endpoints). SigV4Region defaults to the S3 region; SigV4Service
	// to "execute-api" (Glue: "glue", S3 Tables: "s3tables").
	SigV4        bool
	SigV4Region  string
	SigV4Service string
	// CAFile is a PEM file of certificate authorities to trust, in addition
	// to none: it replaces the system's pool for this catalog.
	CAFile string
	// InsecureSkipVerify accepts any server certificate (tests only).
	InsecureSkipVerify bool
	// Headers are sent with every request, each "Name: value", e.g.
	// "X-Iceberg-Access-Delegation: vended-credentials".
	Headers []string
	// Warehouse is the warehouse parameter of GET /v1/config (a catalog
	// name or ARN on hosted catalogs); default the warehouse URI.
	Warehouse string
	// Prefix is the path prefix after /v1/; default what /v1/config says.
	Prefix string
}

// Resolve returns c with the client secret and the token read from their
// files, when given that way.
func (c RESTConfig) Resolve() (RESTConfig, error) {
	read := func(v *string, file, what string) error {
		if *v != "" || file == "" {
			return nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		if *v = strings.TrimSpace(string(b)); *v == "" {
			return fmt.Errorf("%s %s is empty", what, file)
		}
		return nil
	}
	if err := read(&c.ClientSecret, c.ClientSecretFile, "--rest-client-secret-file"); err != nil {
		return c, err
	}
	return c, read(&c.Token, c.TokenFile, "--rest-token-file")
}

// Secrets are the values of c, once resolved, that no message may show.
func (c RESTConfig) Secrets() []string {
	var out []string
	for _, s := range []string{c.ClientSecret, c.Token} {
		if s != "" {
			out = append(out, s)
		}
	}
	for _, l := range c.Headers {
		if k, v, ok := strings.Cut(l, ":"); ok && secretHeader(k) && strings.TrimSpace(v) != "" {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// secretHeader says whether a header's name says it carries a credential
// (X-Api-Key, X-Amz-Security-Token, Cookie, ...), whose value is then kept
// out of messages like a token's.
func secretHeader(name string) bool {
	name = strings.ToLower(name)
	for _, word := range []string{"key", "token", "secret", "auth", "password", "credential", "session", "cookie", "signature"} {
		if strings.Contains(name, word) {
			return true
		}
	}
	return false
}

// RedactHeader hides the value of a "Name: value" header line that
// carries a credential (see secretHeader); other lines are kept.
func RedactHeader(line string) string {
	if k, _, ok := strings.Cut(line, ":"); ok && secretHeader(k) {
		return k + ": <redacted>"
	}
	return line
}

// validate reports every problem with the REST settings; rest says whether
// the catalog is a REST catalog at all. The secrets' files are not read.
func (c RESTConfig) validate(rest bool) []error {
	var errs []error
	if c.ClientSecret != "" && c.ClientSecretFile != "" {
		errs = append(errs, errors.New("the REST client secret is given twice: use PG2ICEBERG_REST_CLIENT_SECRET or --rest-client-secret-file, not both"))
	}
	if c.Token != "" && c.TokenFile != "" {
		errs = append(errs, errors.New("the REST token is given twice: use PG2ICEBERG_REST_TOKEN or --rest-token-file, not both"))
	}
	if c.ClientSecret == "" {
		c.ClientSecret = c.ClientSecretFile
	}
	if c.Token == "" {
		c.Token = c.TokenFile
	}
	set := c.ClientID != "" || c.ClientSecret != "" || c.Token != "" || c.SigV4 || c.CAFile != "" ||
		c.InsecureSkipVerify || len(c.Headers) > 0 || c.Warehouse != "" || c.Prefix != "" || c.OAuthURI != "" || c.Scope != ""
	if set && !rest {
		errs = append(errs, errors.New("REST catalog options (--rest-...) are set, but --catalog is not an http(s):// REST catalog"))
	}
	if (c.ClientID == "") != (c.ClientSecret == "") {
		errs = append(errs, errors.New("OAuth2 client credentials need both --rest-client-id and the secret (PG2ICEBERG_REST_CLIENT_SECRET or --rest-client-secret-file)"))
	}
	auth := 0
	for _, on := range []bool{c.ClientID != "" || c.ClientSecret != "", c.Token != "", c.SigV4} {
		if on {
			auth++
		}
	}
	if auth > 1 {
		errs = append(errs, errors.New("REST catalog authentication: use one of OAuth2 client credentials, a bearer token or SigV4"))
	}
	if (c.OAuthURI != "" || c.Scope != "") && c.ClientID == "" {
		errs = append(errs, errors.New("--rest-oauth-uri and --rest-scope apply to OAuth2 client credentials: set --rest-client-id and its secret too"))
	}
	if c.OAuthURI != "" {
		if u, err := url.Parse(c.OAuthURI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--rest-oauth-uri %q: give the token endpoint as http(s)://host/path", c.OAuthURI))
		}
	}
	if (c.SigV4Region != "" || c.SigV4Service != "") && !c.SigV4 {
		errs = append(errs, errors.New("--rest-sigv4-region and --rest-sigv4-service apply to SigV4: set --rest-sigv4 too"))
	}
	if _, err := parseHeaders(c.Headers); err != nil {
		errs = append(errs, err)
	}
	if strings.Contains(strings.Trim(c.Prefix, "/"), "/") {
		errs = append(errs, fmt.Errorf("--rest-prefix %q: give one path segment", c.Prefix))
	}
	return errs
}

// options are iceberg-go's REST options for c; warehouse is the warehouse
// URI and region the S3 region (SigV4's default).
func (c RESTConfig) options(warehouse, region string) ([]rest.Option, error) {
	if strings.ContainsAny(c.Token+c.ClientSecret, " \t\r\n") {
		return nil, errors.New("the REST catalog token or client secret contains white space: give it without spaces or line breaks")
	}
	var opts []rest.Option
	switch {
	case c.ClientID != "":
		opts = append(opts, rest.WithCredential(c.ClientID+":"+c.ClientSecret))
		if c.Scope != "" {
			opts = append(opts, rest.WithScope(c.Scope))
		}
		if c.OAuthURI != "" {
			u, _ := url.Parse(c.OAuthURI) // checked by validate
			opts = append(opts, rest.WithAuthURI(u))
		}
	case c.Token != "":
		opts = append(opts, rest.WithOAuthToken(c.Token))
	case c.SigV4:
		r := c.SigV4Region
		if r == "" {
			r = region
		}
		opts = append(opts, rest.WithSigV4RegionSvc(r, c.SigV4Service))
	}
	if len(c.Headers) > 0 {
		h, err := parseHeaders(c.Headers)
		if err != nil {
			return nil, err
		}
		opts = append(opts, rest.WithHeaders(h))
	}
	if c.Prefix != "" {
		opts = append(opts, rest.WithPrefix(strings.Trim(c.Prefix, "/")))
	}
	if c.Warehouse != "" {
		warehouse = c.Warehouse
	}
	opts = append(opts, rest.WithWarehouseLocation(warehouse))
	if c.CAFile != "" || c.InsecureSkipVerify {
		tc := &tls.Config{InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // asked for by --rest-insecure-skip-verify
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("read --rest-ca-file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--rest-ca-file %s holds no PEM certificate", c.CAFile)
			}
		}
		opts = append(opts, rest.WithTLSConfig(tc))
	}
	return opts, nil
}

// parseHeaders turns "Name: value" lines into a header map.
func parseHeaders(lines []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range lines {
		k, v, ok := strings.Cut(l, ":")
		k = http.CanonicalHeaderKey(strings.TrimSpace(k))
		switch _, dup := out[k]; {
		case !ok || k == "" || strings.ContainsAny(k, " \t") || strings.ContainsAny(v, "\r\n"):
			name, _, _ := strings.Cut(strings.TrimSpace(l), " ")
			return nil, fmt.Errorf("--rest-header %q...: write Name: value, one header each", name)
		case k == "Authorization":
			return nil, errors.New("--rest-header Authorization: pass the token with PG2ICEBERG_REST_TOKEN or --rest-token-file, which keep it out of the process list")
		case dup:
			return nil, fmt.Errorf("--rest-header %s is given twice: give each header once", k)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}
