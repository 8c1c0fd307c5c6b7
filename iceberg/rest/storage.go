package rest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// secretKeys are FileIO properties that hold credentials.
var secretKeys = map[string]bool{
	icebergio.S3AccessKeyID:     true,
	icebergio.S3SecretAccessKey: true,
	icebergio.S3SessionToken:    true,
}

func isSecretKey(k string) bool { return secretKeys[k] }

// StorageConfig returns the table config a client needs to reach the
// warehouse's files with its own credentials: for S3, the endpoint, the
// region and the addressing style, under the names pyiceberg, Iceberg Java
// (S3FileIO) and iceberg-go read. A local warehouse needs none.
func StorageConfig(c iceberg.CatalogConfig) map[string]string {
	out := map[string]string{}
	if !c.IsS3() {
		return out
	}
	if c.S3Endpoint != "" {
		out[icebergio.S3EndpointURL] = c.S3Endpoint
	}
	if c.S3Region != "" {
		out[icebergio.S3Region] = c.S3Region
		out[icebergio.S3ClientRegion] = c.S3Region // Iceberg Java
	}
	out["s3.path-style-access"] = strconv.FormatBool(c.S3PathStyle)              // Iceberg Java, pyiceberg (fsspec)
	out[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!c.S3PathStyle) // pyiceberg (pyarrow), iceberg-go
	return out
}

// VendedCredentials returns the server's own S3 keys, read with getenv
// from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, as
// FileIO properties to hand to clients. Only static keys from the
// environment are vended; profiles and instance roles are not.
func VendedCredentials(getenv func(string) string) (map[string]string, error) {
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return nil, errors.New("credential vending needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (profiles and instance roles are not vended)")
	}
	out := map[string]string{icebergio.S3AccessKeyID: id, icebergio.S3SecretAccessKey: secret}
	if tok := getenv("AWS_SESSION_TOKEN"); tok != "" {
		out[icebergio.S3SessionToken] = tok
	}
	return out, nil
}

// CheckListen decides whether the catalog may listen on addr. With a token,
// or on a loopback address, it may. Without a token, any other address
// (including ":8181", every interface) needs explicit, meaning the operator
// named the address; then it may, with a warning to log.
func CheckListen(addr string, hasToken, explicit bool) (warning string, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if hasToken || isLoopback(host) {
		return "", nil
	}
	if !explicit {
		return "", fmt.Errorf("refusing to serve the catalog without a token on %s, which is not a loopback address: set --catalog-token or --catalog-token-file, or name the address with --listen", addr)
	}
	return fmt.Sprintf("the catalog is served without a token on %s: anyone who can reach it can read every table's metadata and file locations; set --catalog-token or --catalog-token-file", addr), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
