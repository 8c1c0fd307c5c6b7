package connstr

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// PostgreSQL URLs.
		{"postgres://app:pw@db:5432/shop", "postgres://app:xxxxx@db:5432/shop"},
		{"postgresql://app:p%40w%2Fd@db/shop?sslmode=require", "postgresql://app:xxxxx@db/shop?sslmode=require"},
		{"postgres://app@db/shop?password=pw&sslmode=disable", "postgres://app@db/shop?password=xxxxx&sslmode=disable"},
		{"postgres://app@db/shop?sslpassword=k3y&password=pw", "postgres://app@db/shop?sslpassword=xxxxx&password=xxxxx"},
		{"postgres://app@db/shop?pass%77ord=pw", "postgres://app@db/shop?pass%77ord=xxxxx"},
		{"postgres://app:pw@h1:5432,h2:5433/shop?target_session_attrs=read-write", "postgres://app:xxxxx@h1:5432,h2:5433/shop?target_session_attrs=read-write"},
		{"postgres://app:pw@[::1]:5432/shop", "postgres://app:xxxxx@[::1]:5432/shop"},
		{"postgres://app@db/shop", "postgres://app@db/shop"},
		{"postgres://app:p@ss@db/shop", unreadable},
		{"postgres://app:pa/ss@db/shop", unreadable},
		// Keyword/value.
		{"host=db user=app password=pw dbname=shop", "host=db user=app password=xxxxx dbname=shop"},
		{"host=db password = pw dbname=shop", "host=db password = xxxxx dbname=shop"},
		{"host=db password='two words' dbname=shop", "host=db password='xxxxx' dbname=shop"},
		{`host=db password='it\'s \\ here' dbname=shop`, "host=db password='xxxxx' dbname=shop"},
		{`host=db password=a\ b dbname=shop`, "host=db password=xxxxx dbname=shop"},
		{"password=pw", "password=xxxxx"},
		{"host=db sslpassword=k3y sslkey=/k.pem", "host=db sslpassword=xxxxx sslkey=xxxxx"},
		{"host=db password='unterminated", unreadable},
		{"host=db password", unreadable},
		// Catalog URLs.
		{"https://cat:pw@rest.example/api?token=t0k&warehouse=w", "https://cat:xxxxx@rest.example/api?token=xxxxx&warehouse=w"},
		{"http://rest/api?credential=id:s3c&client_secret=s&X-Api-Key=k", "http://rest/api?credential=xxxxx&client_secret=xxxxx&X-Api-Key=xxxxx"},
		{"http://rest:8181/api", "http://rest:8181/api"},
		{"http://a b/", unreadable},
		// Not connection strings.
		{"./warehouse/catalog.db", "./warehouse/catalog.db"},
		{"", ""},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReadable(t *testing.T) {
	for in, want := range map[string]bool{
		"postgres://app:p%40ss@db/shop": true,
		"postgres://app:p@ss@db/shop":   false,
		"postgres://app:p/ss@db/shop":   false,
		"host=db password='a b'":        true,
		"host=db password='a b":         false,
		"https://c:pw@rest/api":         true,
		"./catalog.db":                  true,
	} {
		if got := Readable(in); got != want {
			t.Errorf("Readable(%q) = %t, want %t", in, got, want)
		}
	}
}

func TestScrub(t *testing.T) {
	for _, tc := range []struct {
		conn, text string
		secrets    []string
	}{
		{"postgres://app:p%40ss-w0rd@db/shop", `connect to db: "p@ss-w0rd" and p%40ss-w0rd and p%40ss-w0rd`, []string{"p@ss", "p%40ss"}},
		{"postgres://app@db/shop?password=a+b%20c", "a+b%20c and a+b c and a%2Bb+c", []string{"a+b", "a%2Bb"}},
		{`host=db password='it\'s secret'`, `it\'s secret and it's secret`, []string{"it's", `it\'s`}},
		{"http://c:pw-x@h/?token=tok-1", `Get "http://c:***@h/v1/config?token=tok-1": refused (pw-x)`, []string{"tok-1", "pw-x"}},
		{"host=db password='unterminated", "host=db password='unterminated", []string{"unterminated"}},
	} {
		got := Scrub(tc.text, "./catalog.db", tc.conn)
		for _, s := range tc.secrets {
			if strings.Contains(got, s) {
				t.Errorf("Scrub(%q, %q) = %q: shows %q", tc.text, tc.conn, got, s)
			}
		}
	}
	err := fmt.Errorf("open: %w", fs.ErrNotExist)
	se := ScrubError(fmt.Errorf("dial pw-x: %w", err), "postgres://u:pw-x@h/d")
	if !errors.Is(se, fs.ErrNotExist) || strings.Contains(se.Error(), "pw-x") {
		t.Errorf("ScrubError = %v (Is ErrNotExist: %t)", se, errors.Is(se, fs.ErrNotExist))
	}
	if ScrubError(nil, "x") != nil {
		t.Errorf("ScrubError(nil) is not nil")
	}
}
