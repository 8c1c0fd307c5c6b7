package rest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ReadScope is the scope of every token the server issues: the catalog is
// read-only, whatever the client asks for. A client may ask for it, for
// "catalog" (what Iceberg's clients ask by default) or for nothing.
const ReadScope = "catalog:read"

// DefaultTokenTTL is how long an issued token is valid when Config leaves
// TokenTTL zero.
const DefaultTokenTTL = time.Hour

// maxIssued bounds the live issued tokens; past it the oldest is dropped
// (its client fetches another when it is refused).
const maxIssued = 10000

// issuer hands out bearer tokens for the OAuth2 client-credentials grant
// at POST /v1/oauth/tokens and checks them.
type issuer struct {
	id, secret string
	ttl        time.Duration
	now        func() time.Time

	mu     sync.Mutex           // guards tokens
	tokens map[string]time.Time // issued token -> expiry
}

type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope"`
	IssuedTokenType string `json:"issued_token_type"`
}

// tokenError answers the spec's OAuthError (RFC 6749 section 5.2).
func tokenError(w http.ResponseWriter, code int, kind, desc string) {
	writeJSON(w, code, map[string]string{"error": kind, "error_description": desc})
}

// serveToken answers POST /v1/oauth/tokens. Client id and secret come in
// the form (client_secret_post, what Iceberg's clients send) or as HTTP
// Basic authentication.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if s.issuer == nil {
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type",
			"this catalog issues no tokens: configure the client with the bearer token itself (token=...), or start the server with a client id and secret")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		tokenError(w, http.StatusMethodNotAllowed, "invalid_request", "ask for a token with POST")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "the body is not a form (application/x-www-form-urlencoded)")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "only grant_type=client_credentials is supported")
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if !s.issuer.valid(id, secret) {
		s.log.Info("catalog token refused", "client_id", id, "remote", r.RemoteAddr)
		tokenError(w, http.StatusUnauthorized, "invalid_client", "unknown client id or wrong secret")
		return
	}
	for _, sc := range strings.Fields(r.PostForm.Get("scope")) {
		if sc != "catalog" && sc != ReadScope {
			tokenError(w, http.StatusBadRequest, "invalid_scope", "scope "+sc+" is not granted: the catalog is read-only; ask for catalog or "+ReadScope)
			return
		}
	}
	tok, err := s.issuer.issue()
	if err != nil {
		s.log.Error("catalog token not issued", "error", err)
		tokenError(w, http.StatusInternalServerError, "server_error", "cannot make a token")
		return
	}
	s.log.Debug("catalog token issued", "client_id", id, "expires_in", s.issuer.ttl)
	writeJSON(w, http.StatusOK, tokenResponse{AccessToken: tok, TokenType: "bearer",
		ExpiresIn: int64(s.issuer.ttl / time.Second), Scope: ReadScope,
		IssuedTokenType: "urn:ietf:params:oauth:token-type:access_token"})
}

func (i *issuer) valid(id, secret string) bool {
	okID := subtle.ConstantTimeCompare([]byte(id), []byte(i.id))
	okSecret := subtle.ConstantTimeCompare([]byte(secret), []byte(i.secret))
	return okID&okSecret == 1
}

// issue makes a new random token valid for ttl, dropping the expired ones.
func (i *issuer) issue() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	now := i.now()
	i.mu.Lock()
	defer i.mu.Unlock()
	var oldest string
	for t, exp := range i.tokens {
		if !now.Before(exp) {
			delete(i.tokens, t)
		} else if oldest == "" || exp.Before(i.tokens[oldest]) {
			oldest = t
		}
	}
	if len(i.tokens) >= maxIssued {
		delete(i.tokens, oldest)
	}
	i.tokens[tok] = now.Add(i.ttl)
	return tok, nil
}

// accepts reports whether tok is an issued token that has not expired.
func (i *issuer) accepts(tok string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	exp, ok := i.tokens[tok]
	return ok && i.now().Before(exp)
}
