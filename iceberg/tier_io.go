package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
)

// A table whose cold files live in another bucket (hot/cold tiering) is
// read and written through one file IO, but iceberg-go's S3 IO serves one
// bucket: a path in another is refused (blobfs.ErrUnsupportedObjectAuthority).
// Every table's IO comes from the scheme registry (the catalog's
// LoadFSFunc), so the s3:// scheme is registered here again with an IO
// that opens one iceberg-go IO per bucket on first use, each with the
// table's properties (the same endpoint and credentials). The per-bucket
// IOs are loaded through the s3a:// scheme: iceberg-go's own IO, which
// accepts s3:// paths of its bucket, with the S3 timeout and one IO per
// bucket and properties (s3client.go).

func init() {
	icebergio.Unregister("s3")
	icebergio.Register("s3", func(ctx context.Context, parsed *url.URL, props map[string]string) (icebergio.IO, error) {
		b := &bucketsIO{ctx: ctx, props: props, ios: make(map[string]icebergio.IO)}
		if _, err := b.bucket(parsed.Host); err != nil {
			return nil, err
		}
		return b, nil
	})
}

// bucketsIO routes each path to the IO of its bucket.
type bucketsIO struct {
	ctx   context.Context
	props map[string]string
	mu    sync.Mutex
	ios   map[string]icebergio.IO
}

// bucket returns the IO of a bucket, opening it on first use.
func (b *bucketsIO) bucket(name string) (icebergio.IO, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if io, ok := b.ios[name]; ok {
		return io, nil
	}
	io, err := icebergio.LoadFS(b.ctx, b.props, "s3a://"+name)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", name, err)
	}
	b.ios[name] = io
	return io, nil
}

// of returns the IO of the bucket of path p.
func (b *bucketsIO) of(p string) (icebergio.IO, error) {
	u, err := url.Parse(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return b.bucket(u.Host)
}

var errCannot = errors.New("the file IO of this bucket cannot do this")

func (b *bucketsIO) Open(name string) (icebergio.File, error) {
	io, err := b.of(name)
	if err != nil {
		return nil, err
	}
	return io.Open(name)
}

func (b *bucketsIO) Remove(name string) error {
	io, err := b.of(name)
	if err != nil {
		return err
	}
	return io.Remove(name)
}

func (b *bucketsIO) ReadFile(name string) ([]byte, error) {
	io, err := b.of(name)
	if err != nil {
		return nil, err
	}
	if r, ok := io.(icebergio.ReadFileIO); ok {
		return r.ReadFile(name)
	}
	return nil, &fs.PathError{Op: "read", Path: name, Err: errCannot}
}

func (b *bucketsIO) Create(name string) (icebergio.FileWriter, error) {
	io, err := b.of(name)
	if err != nil {
		return nil, err
	}
	if w, ok := io.(icebergio.WriteFileIO); ok {
		return w.Create(name)
	}
	return nil, &fs.PathError{Op: "create", Path: name, Err: errCannot}
}

func (b *bucketsIO) WriteFile(name string, p []byte) error {
	io, err := b.of(name)
	if err != nil {
		return err
	}
	if w, ok := io.(icebergio.WriteFileIO); ok {
		return w.WriteFile(name, p)
	}
	return &fs.PathError{Op: "write", Path: name, Err: errCannot}
}

func (b *bucketsIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	io, err := b.of(root)
	if err != nil {
		return err
	}
	if l, ok := io.(icebergio.ListableIO); ok {
		return l.WalkDir(root, fn)
	}
	return &fs.PathError{Op: "walk", Path: root, Err: errCannot}
}

func (b *bucketsIO) Stat(name string) (fs.FileInfo, error) {
	io, err := b.of(name)
	if err != nil {
		return nil, err
	}
	if s, ok := io.(icebergio.StatIO); ok {
		return s.Stat(name)
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: errCannot}
}

// DeleteFiles deletes paths, bucket by bucket.
func (b *bucketsIO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	var deleted []string
	var errs []error
	for _, p := range paths {
		if err := b.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, p)
	}
	return deleted, errors.Join(errs...)
}

// createWithClass creates name as an object of the S3 storage class
// (STANDARD_IA, GLACIER_IR, ...): the cold files of a tiered table. An IO
// that is not S3 (a directory) creates it as Create does.
func createWithClass(w icebergio.WriteFileIO, name, class string) (icebergio.FileWriter, error) {
	b, ok := w.(*bucketsIO)
	if !ok || class == "" {
		return w.Create(name)
	}
	io, err := b.of(name)
	if err != nil {
		return nil, err
	}
	bio, ok := io.(*blobfs.FileIO)
	if !ok {
		return b.Create(name)
	}
	sc := s3types.StorageClass(class)
	opts := &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
		var put *s3.PutObjectInput
		if as(&put) {
			put.StorageClass = sc
		}
		var mp *s3.CreateMultipartUploadInput
		if as(&mp) {
			mp.StorageClass = sc
		}
		return nil
	}}
	return bio.NewWriter(b.ctx, name, true, opts)
}
