package iceberg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/aws/smithy-go"
)

// CheckWarehouse checks, before anything is created, that the warehouse
// is usable: for S3, that credentials are found and that the bucket
// exists and can be read (and with write, written and deleted from: the
// bridge deletes expired files); for a directory, that it can be created
// and written. Each failure says what to set or do. It goes through the
// same file IO as the tables, so what it finds holds for them.
func CheckWarehouse(ctx context.Context, c CatalogConfig, write bool) error {
	if err := c.Validate(); err != nil {
		return err
	}
	wh, err := c.WarehouseURI()
	if err != nil {
		return err
	}
	if !c.IsS3() {
		if !write {
			return nil
		}
		return checkLocalWarehouse(strings.TrimPrefix(wh, "file://"))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	props := c.IOProps()
	awsCfg, err := s3io.ParseAWSConfig(ctx, props)
	if err != nil {
		return fmt.Errorf("warehouse %s: S3 configuration: %w", wh, err)
	}
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return fmt.Errorf("warehouse %s: no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary keys), or AWS_PROFILE for a profile in ~/.aws/config; the AWS SDK said: %w", wh, err)
	}
	fsys, err := icebergio.LoadFS(ctx, props, wh)
	if err != nil {
		return fmt.Errorf("warehouse %s: %w", wh, err)
	}
	probe := wh + "/.pg2iceberg-probe-" + randomSuffix()
	if !write {
		return checkS3Listable(c, wh, fsys, probe)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("warehouse %s: its file IO cannot write", wh)
	}
	if err := wfs.WriteFile(probe, []byte("pg2iceberg checks that it can write here; safe to delete\n")); err != nil {
		return s3Problem(c, wh, "write", err)
	}
	if err := fsys.Remove(probe); err != nil {
		return s3Problem(c, wh, "delete", err)
	}
	return nil
}

// checkS3Listable lists the prefix probe (no object has it). Reading one
// object cannot tell a missing bucket from a missing object (a HEAD
// answer has no body to say which); a listing can.
func checkS3Listable(c CatalogConfig, wh string, fsys icebergio.IO, probe string) error {
	lfs, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return nil
	}
	err := lfs.WalkDir(probe, func(_ string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return fs.SkipAll
	})
	var api smithy.APIError
	if err != nil && (!errors.Is(err, fs.ErrNotExist) || errors.As(err, &api) && api.ErrorCode() == "NoSuchBucket") {
		return s3Problem(c, wh, "list", err)
	}
	return nil
}

// s3Problem says in S3's terms why the warehouse cannot be used.
func s3Problem(c CatalogConfig, wh, op string, err error) error {
	bucket, _, _ := strings.Cut(strings.TrimPrefix(wh, "s3://"), "/")
	where := "S3"
	if c.S3Endpoint != "" {
		where = c.S3Endpoint
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchBucket":
			return fmt.Errorf("warehouse %s: bucket %s does not exist at %s: create it (for example aws s3 mb s3://%s) or fix --warehouse: %w", wh, bucket, where, bucket, err)
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
			return fmt.Errorf("warehouse %s: %s refused the credentials (%s): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or AWS_PROFILE: %w", wh, where, api.ErrorCode(), err)
		case "AccessDenied", "Forbidden":
			return fmt.Errorf("warehouse %s: the credentials may not %s in bucket %s: the bridge needs to read, write and delete objects under the warehouse prefix: %w", wh, op, bucket, err)
		}
	}
	return fmt.Errorf("warehouse %s: cannot %s a test object at %s (check --s3-endpoint, --s3-region and --s3-path-style): %w", wh, op, where, err)
}

// checkLocalWarehouse creates the warehouse directory and writes and
// removes a file in it.
func checkLocalWarehouse(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create warehouse directory: %w", err)
	}
	probe := filepath.Join(dir, ".pg2iceberg-probe-"+randomSuffix())
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return fmt.Errorf("warehouse directory %s is not writable: %w", dir, err)
	}
	return os.Remove(probe)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
