package connstr

import (
	"net/url"
	"slices"
	"sort"
	"strings"
)

// mask replaces a secret.
const mask = "xxxxx"

// unreadable stands for a whole connection string whose parts cannot be
// told apart with certainty.
const unreadable = "(a connection string that does not parse)"

// secretKey reports whether a parameter's value is a secret: password and
// sslpassword of PostgreSQL, and what REST catalogs and their proxies put in
// URLs (token, credential, client_secret, api_key, ...). It errs on the
// side of masking.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "pwd", "secret", "token", "credential", "key", "auth", "signature"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// part is a secret's place in a connection string: s[from:to] is replaced
// by Redact, and value is the secret as the reader takes it (decoded,
// unescaped).
type part struct {
	from, to int
	value    string
}

// parts finds the secrets of s: a postgres:// or postgresql:// URL read as
// libpq and pgx read it, another URL (a REST catalog) read as net/url reads
// it, or a keyword/value string (host=... password='...'). ok is false when
// s cannot be taken apart with certainty.
func parts(s string) (ps []part, ok bool) {
	switch {
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return pgURLParts(s)
	case strings.Contains(s, "://"):
		return urlParts(s)
	case strings.Contains(s, "="):
		return keywordValueParts(s)
	}
	return nil, true // a file path
}

// pgURLParts follows pgconn's parseURLSettings: the userinfo ends at the
// first '@' before any '/', the password follows its first ':', the query
// starts at the first '?' after it.
func pgURLParts(s string) ([]part, bool) {
	start := strings.Index(s, "://") + 3
	p := s[start:]
	var ps []part
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		if c := strings.IndexByte(p[:i], ':'); c >= 0 {
			ps = append(ps, decoded(s, start+c+1, start+i))
		}
		start += i + 1
		p = s[start:]
	}
	q := strings.IndexByte(p, '?')
	beforeQuery := p
	if q >= 0 {
		beforeQuery = p[:q]
	}
	if strings.Contains(beforeQuery, "@") {
		return nil, false // a password with an unencoded '@' or '/'
	}
	if q < 0 {
		return ps, true
	}
	return append(ps, queryParts(s, start+q+1)...), true
}

// urlParts reads a URL as net/url does: the query starts at the first
// '?', the userinfo ends at the last '@' of the authority.
func urlParts(s string) ([]part, bool) {
	if _, err := url.Parse(s); err != nil {
		return nil, false
	}
	start := strings.Index(s, "://") + 3
	rest := s[start:]
	q := strings.IndexByte(rest, '?')
	if f := strings.IndexByte(rest, '#'); f >= 0 && (q < 0 || f < q) {
		rest = rest[:f]
	}
	authority := rest
	if q >= 0 {
		authority = rest[:q]
	}
	if i := strings.IndexByte(authority, '/'); i >= 0 {
		authority = authority[:i]
	}
	var ps []part
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if c := strings.IndexByte(authority[:at], ':'); c >= 0 {
			ps = append(ps, decoded(s, start+c+1, start+at))
		}
	}
	if q >= 0 {
		ps = append(ps, queryParts(s, start+q+1)...)
	}
	return ps, true
}

// queryParts finds the secret values of the query that starts at s[from:]
// (up to a '#').
func queryParts(s string, from int) []part {
	var ps []part
	end := len(s)
	if f := strings.IndexByte(s[from:], '#'); f >= 0 {
		end = from + f
	}
	for pos := from; pos <= end; {
		next := strings.IndexByte(s[pos:end], '&')
		if next < 0 {
			next = end - pos
		}
		pair := s[pos : pos+next]
		if k, _, ok := strings.Cut(pair, "="); ok {
			key, err := url.QueryUnescape(k)
			if err != nil {
				key = k
			}
			if secretKey(key) {
				ps = append(ps, decoded(s, pos+len(k)+1, pos+next))
			}
		}
		pos += next + 1
	}
	return ps
}

// decoded is the part s[from:to], percent-encoded in s.
func decoded(s string, from, to int) part {
	v, err := url.PathUnescape(s[from:to])
	if err != nil {
		v = s[from:to]
	}
	return part{from, to, v}
}

const spaces = " \t\n\r\v\f"

// keywordValueParts follows pgconn's parseKeywordValueSettings (libpq's
// conninfo syntax): key = value, the value single-quoted or up to the next
// space, a backslash escaping the next byte.
func keywordValueParts(s string) ([]part, bool) {
	var ps []part
	pos := len(s) - len(strings.TrimLeft(s, spaces))
	for pos < len(s) {
		eq := strings.IndexByte(s[pos:], '=')
		if eq < 0 {
			return nil, false
		}
		key := strings.Trim(s[pos:pos+eq], spaces)
		pos += eq + 1
		pos += len(s[pos:]) - len(strings.TrimLeft(s[pos:], spaces))
		from, to, end, ok := kvValue(s, pos)
		if !ok || key == "" || strings.ContainsAny(key, spaces) {
			return nil, false
		}
		if secretKey(key) {
			ps = append(ps, part{from, to, unescape(s[from:to])})
		}
		pos = end + len(s[end:]) - len(strings.TrimLeft(s[end:], spaces))
	}
	return ps, true
}

// kvValue reads the value that starts at s[pos:]: s[from:to] is its text
// without quotes, end where the next key starts.
func kvValue(s string, pos int) (from, to, end int, ok bool) {
	quoted := pos < len(s) && s[pos] == '\''
	if quoted {
		pos++
	}
	i := pos
	for ; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if quoted && s[i] == '\'' || !quoted && strings.IndexByte(spaces, s[i]) >= 0 {
			break
		}
	}
	i = min(i, len(s))
	if !quoted {
		return pos, i, i, true
	}
	if i >= len(s) {
		return 0, 0, 0, false // unterminated quote
	}
	return pos, i, i + 1, true
}

func unescape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' {
			i++
			if i == len(v) {
				break
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Readable reports whether s can be taken apart with certainty, so that
// Redact and Scrub find every secret. A PostgreSQL URL with an unencoded
// '@' or '/' in its password is not: pgx would take part of the password
// for the host and print it in its errors.
func Readable(s string) bool {
	_, ok := parts(s)
	return ok
}

// Redact returns a connection string for messages with every secret
// replaced by xxxxx: the password of a URL's userinfo; password,
// sslpassword, token, credential and other secret-named query parameters;
// password and sslpassword in keyword/value form, quoted or not. A string
// whose parts cannot be told apart with certainty is replaced whole.
func Redact(s string) string {
	ps, ok := parts(s)
	if !ok {
		return unreadable
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].from < ps[j].from })
	var b strings.Builder
	last := 0
	for _, p := range ps {
		b.WriteString(s[last:p.from])
		b.WriteString(mask)
		last = p.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// Scrubber replaces secrets in messages of libraries that may echo a
// connection string or a URL.
type Scrubber struct {
	secrets []string // longest first
}

// NewScrubber finds the secrets of conns, in the forms a library may print
// them (as written, decoded, re-encoded). A connection string whose parts
// cannot be told apart is a secret as a whole.
func NewScrubber(conns ...string) *Scrubber {
	var secrets []string
	for _, c := range conns {
		ps, ok := parts(c)
		if !ok {
			secrets = append(secrets, c)
			continue
		}
		for _, p := range ps {
			secrets = append(secrets, c[p.from:p.to], p.value, url.QueryEscape(p.value), url.PathEscape(p.value))
		}
	}
	secrets = slices.DeleteFunc(secrets, func(s string) bool { return s == "" })
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	return &Scrubber{slices.Compact(secrets)}
}

// Add makes s scrub the given secrets as well (a token or a client secret
// that is no part of a connection string), as written and escaped.
func (s *Scrubber) Add(secrets ...string) *Scrubber {
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v, url.QueryEscape(v), url.PathEscape(v))
		}
	}
	sort.Slice(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
	s.secrets = slices.Compact(s.secrets)
	return s
}

// Scrub replaces every secret in text.
func (s *Scrubber) Scrub(text string) string {
	for _, secret := range s.secrets {
		text = strings.ReplaceAll(text, secret, mask)
	}
	return text
}

// Scrub replaces in text every secret of the connection strings (see
// NewScrubber).
func Scrub(text string, conns ...string) string { return NewScrubber(conns...).Scrub(text) }

// Error is an error whose message has the secrets of connection strings
// scrubbed (see Scrub); errors.Is and errors.As see the original.
type Error struct {
	err error
	s   *Scrubber
}

// ScrubError wraps err so that its message shows none of the secrets of
// conns; nil stays nil.
func ScrubError(err error, conns ...string) error { return NewScrubber(conns...).Wrap(err) }

// Wrap wraps err so that its message shows none of the secrets; nil stays
// nil.
func (s *Scrubber) Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{err, s}
}

func (e *Error) Error() string { return e.s.Scrub(e.err.Error()) }
func (e *Error) Unwrap() error { return e.err }
