package rest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// DefaultName is the catalog name (and path prefix) when Config leaves it
// empty. It matches the embedded SQL catalog's name.
const DefaultName = "pg2iceberg"

// Config configures a Server. The zero value serves an unauthenticated
// catalog named DefaultName.
type Config struct {
	// Name is the catalog's name. Clients may send it as the warehouse
	// parameter of /v1/config. Default DefaultName.
	Name string
	// Prefix is the path segment advertised in /v1/config overrides, after
	// which clients call /v1/{Prefix}/namespaces/... Paths without it are
	// served too. Default Name.
	Prefix string
	// Warehouse is the served warehouse as a URI (file:///abs/dir or
	// s3://bucket/prefix). It is also accepted as the warehouse parameter of
	// /v1/config.
	Warehouse string
	// Token, when not empty, must come with every request as
	// "Authorization: Bearer <Token>".
	Token string
	// ClientID and ClientSecret, when set, let clients that only speak
	// OAuth2 trade them for a token at POST /v1/oauth/tokens (the
	// client-credentials grant, scope ReadScope); every other request then
	// needs that token or Token. TokenTTL is how long an issued token is
	// valid (default DefaultTokenTTL).
	ClientID     string
	ClientSecret string
	TokenTTL     time.Duration
	// Mount is the path the API is served under, e.g. /v1/iceberg: clients
	// then use http://host:port/v1/iceberg as the catalog URI and call
	// /v1/iceberg/v1/config. Default: the root.
	Mount string
	// TableConfig is the config of every loaded table: the storage settings
	// a client needs to read the files with its own credentials (see
	// StorageConfig). It must not hold secrets.
	TableConfig map[string]string
	// Credentials are storage secrets handed to clients with each table
	// (see VendedCredentials). Empty unless vending was switched on
	// explicitly.
	Credentials map[string]string
}

// reserved are the first path segments after /v1/ that are routes, so
// they cannot be a prefix.
var reserved = map[string]bool{"config": true, "oauth": true, "namespaces": true, "tables": true, "transactions": true, "views": true}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Prefix == "" {
		c.Prefix = c.Name
	}
	return c
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if strings.HasPrefix(c.Prefix, cutPrefix) {
		errs = append(errs, fmt.Errorf("catalog prefix %q: prefixes starting with %q name consistent cuts; pick another", c.Prefix, cutPrefix))
	}
	if strings.Contains(c.Prefix, "/") || reserved[c.Prefix] {
		errs = append(errs, fmt.Errorf("catalog prefix %q: use one path segment that is not one of config, oauth, namespaces, tables, transactions, views", c.Prefix))
	}
	if c.Mount != "" && (!strings.HasPrefix(c.Mount, "/") || strings.HasSuffix(c.Mount, "/") || strings.Contains(c.Mount, "//") ||
		strings.Contains(c.Mount, "/../") || strings.HasSuffix(c.Mount, "/..") || strings.ContainsAny(c.Mount, "?#% ")) {
		errs = append(errs, fmt.Errorf("catalog mount %q: give a path such as /v1/iceberg: starting with /, without a trailing /, .. or escapes", c.Mount))
	}
	if (c.ClientID == "") != (c.ClientSecret == "") {
		errs = append(errs, errors.New("catalog OAuth2 clients need both a client id and a client secret"))
	}
	if strings.ContainsAny(c.ClientSecret, " \t\r\n") || strings.ContainsAny(c.ClientID, " \t\r\n:") {
		errs = append(errs, errors.New("catalog client id or secret contains white space (or the id a colon): use one without"))
	}
	if c.TokenTTL < 0 || (c.TokenTTL > 0 && c.TokenTTL < time.Second) {
		errs = append(errs, fmt.Errorf("catalog token lifetime %s: give one second or more", c.TokenTTL))
	}
	if strings.ContainsAny(c.Token, " \t\r\n") {
		errs = append(errs, errors.New("catalog token contains white space: use a token without spaces or line breaks"))
	}
	for k := range c.TableConfig {
		if isSecretKey(k) {
			errs = append(errs, fmt.Errorf("table config %q is a secret: pass secrets as Credentials, which are vended only when switched on", k))
		}
	}
	return errors.Join(errs...)
}

// Server answers the read-only Iceberg REST catalog API over a catalog.
type Server struct {
	cat    catalog.Catalog
	cfg    Config
	issuer *issuer // nil: no token endpoint
	log    *slog.Logger
}

var _ http.Handler = (*Server)(nil)

// New returns a Server reading through cat.
func New(cat catalog.Catalog, cfg Config, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	var iss *issuer
	if cfg.ClientID != "" {
		ttl := cfg.TokenTTL
		if ttl == 0 {
			ttl = DefaultTokenTTL
		}
		iss = &issuer{id: cfg.ClientID, secret: cfg.ClientSecret, ttl: ttl, now: time.Now, tokens: map[string]time.Time{}}
	}
	return &Server{cat: cat, cfg: cfg, issuer: iss, log: log}, nil
}

// statusWriter remembers the status code for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// ServeHTTP authenticates the request, then routes it.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		// The path is logged, never the Authorization header.
		s.log.Debug("catalog request", "method", r.Method, "path", r.URL.Path, "status", w.status,
			"duration", time.Since(start), "remote", r.RemoteAddr)
	}()
	segs, ok := splitPath(r.URL, s.cfg.Mount)
	if ok && len(segs) == 2 && segs[0] == "oauth" && segs[1] == "tokens" {
		// Clients configured with client credentials ask here first,
		// without a token.
		s.serveToken(w, r)
		return
	}
	if !s.authorized(r) {
		s.log.Info("catalog request without a valid token", "method", r.Method, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="pg2iceberg"`)
		writeError(w, http.StatusUnauthorized, "NotAuthorizedException", "missing or invalid bearer token: send Authorization: Bearer <token>")
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "NotFoundException", fmt.Sprintf("no route for %s %s: the Iceberg REST catalog API is under %s/v1/", r.Method, r.URL.Path, s.cfg.Mount))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
		if isMetrics(segs, s.cfg.Prefix) && r.Method == http.MethodPost {
			// Engines report scan metrics after reading; accept and drop them.
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if strings.HasPrefix(segs[0], cutPrefix) {
			writeError(w, http.StatusForbidden, "ForbiddenException",
				fmt.Sprintf("%s is a consistent cut, read-only: %s %s is not allowed; pg2iceberg run writes the tables", segs[0], r.Method, r.URL.Path))
			return
		}
		writeError(w, http.StatusForbidden, "ForbiddenException",
			fmt.Sprintf("the catalog served by pg2iceberg is read-only: %s %s is not allowed; pg2iceberg run writes the tables", r.Method, r.URL.Path))
		return
	default:
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowedException",
			fmt.Sprintf("method %s is not allowed: the catalog served by pg2iceberg is read-only", r.Method))
		return
	}
	s.route(w, r, segs)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" && s.issuer == nil {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	token = strings.TrimSpace(token)
	if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) == 1 {
		return true
	}
	return s.issuer != nil && s.issuer.accepts(token)
}

// splitPath returns the unescaped path segments after mount and /v1/.
// Segments are split before unescaping, so a name may contain an escaped
// "/".
func splitPath(u *url.URL, mount string) ([]string, bool) {
	p := u.EscapedPath()
	for strings.HasPrefix(p, "//") {
		p = p[1:]
	}
	p, ok := strings.CutPrefix(p, mount)
	if !ok {
		return nil, false
	}
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return nil, false
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		return nil, false
	}
	segs := strings.Split(rest, "/")
	for i, seg := range segs {
		v, err := url.PathUnescape(seg)
		if err != nil || v == "" {
			return nil, false
		}
		segs[i] = v
	}
	return segs, true
}

func isMetrics(segs []string, prefix string) bool {
	if len(segs) > 0 && (segs[0] == prefix || strings.HasPrefix(segs[0], cutPrefix)) {
		segs = segs[1:]
	}
	return len(segs) == 5 && segs[0] == "namespaces" && segs[2] == "tables" && segs[4] == "metrics"
}

// route serves GET and HEAD requests.
func (s *Server) route(w http.ResponseWriter, r *http.Request, segs []string) {
	if len(segs) == 1 && segs[0] == "config" {
		s.config(w, r)
		return
	}
	var pin *decode.LSN
	if !reserved[segs[0]] {
		l, isCut, err := parseCutPrefix(segs[0])
		switch {
		case err != nil:
			writeError(w, http.StatusNotFound, "NotFoundException", err.Error())
			return
		case isCut:
			pin = &l
		case segs[0] != s.cfg.Prefix:
			writeError(w, http.StatusNotFound, "NotFoundException",
				fmt.Sprintf("unknown prefix %q: this catalog's prefix is %q, or a consistent cut's from GET /v1/config?warehouse=%s", segs[0], s.cfg.Prefix, ConsistentWarehouse))
			return
		}
		segs = segs[1:]
	}
	head := r.Method == http.MethodHead
	switch {
	case len(segs) == 1 && segs[0] == "namespaces" && !head:
		s.listNamespaces(w, r)
		return
	case len(segs) >= 2 && segs[0] == "namespaces":
		ns := parseNamespace(segs[1])
		switch {
		case len(segs) == 2 && head:
			s.namespaceExists(w, r, ns)
			return
		case len(segs) == 2:
			s.loadNamespace(w, r, ns)
			return
		case len(segs) == 3 && segs[2] == "tables" && !head:
			s.listTables(w, r, ns)
			return
		case len(segs) == 3 && segs[2] == "views" && !head:
			// Views are not served: an empty list, for clients that ask
			// although /v1/config does not advertise views.
			writeJSON(w, http.StatusOK, listTablesResponse{Identifiers: []identifier{}})
			return
		case len(segs) == 4 && segs[2] == "views":
			writeError(w, http.StatusNotFound, "NoSuchViewException", fmt.Sprintf("view %s.%s does not exist: pg2iceberg serves no views", strings.Join(ns, "."), segs[3]))
			return
		case len(segs) == 4 && segs[2] == "tables" && head:
			s.tableExists(w, r, append(ns, segs[3]))
			return
		case len(segs) == 4 && segs[2] == "tables":
			s.loadTable(w, r, append(ns, segs[3]), pin)
			return
		case len(segs) == 5 && segs[2] == "tables" && segs[4] == "credentials" && !head:
			s.loadCredentials(w, r, append(ns, segs[3]))
			return
		}
	}
	writeError(w, http.StatusNotFound, "NotFoundException", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
}

// parseNamespace splits a namespace path parameter at the unit separator
// (0x1F), the spec's default separator.
func parseNamespace(s string) []string {
	return strings.Split(s, "\x1f")
}
