package iceberg

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// serveRaw accepts connections on a loopback port and hands each, with
// its parsed request, to handle; it returns the base URL.
func serveRaw(t *testing.T, handle func(c net.Conn, req *http.Request)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				handle(c, req)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// A server that takes the request and never answers (a half-open peer)
// fails the request with S3SilentError, which unwraps to the deadline.
func TestS3ClientSilentPeer(t *testing.T) {
	url := serveRaw(t, func(c net.Conn, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		select {} // never answers, never closes
	})
	client := s3HTTPClient(300 * time.Millisecond)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url+"/bucket/key", nil)
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request nobody answers succeeded")
	}
	var silent *S3SilentError
	if !errors.As(err, &silent) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("error %v (%T): want an S3SilentError that unwraps to os.ErrDeadlineExceeded", err, err)
	}
	if !strings.Contains(err.Error(), "--s3-timeout") {
		t.Errorf("error %q does not name the setting", err)
	}
}

// An upload the server takes slowly (2 KB every 10 ms for its first
// 3 s, the rest at once) and a download that trickles (a byte every
// 300 ms) are not cut off by a 1 s timeout: the timeout is for
// silence, not for slowness. (The transport's read of the answer is
// pending from the start of the upload; each write extends it.)
func TestS3ClientSlowButMoving(t *testing.T) {
	const size = 8 << 20
	got := make(chan int, 1)
	url := serveRaw(t, func(c net.Conn, req *http.Request) {
		if req.Method == http.MethodPut {
			n := 0
			buf := make([]byte, 2<<10)
			for slow := time.Now().Add(3 * time.Second); ; {
				k, err := req.Body.Read(buf)
				n += k
				if err != nil {
					break
				}
				if time.Now().Before(slow) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			got <- n
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			return
		}
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n")
		for _, b := range []byte("moving") {
			time.Sleep(300 * time.Millisecond)
			_, _ = c.Write([]byte{b})
		}
	})
	client := s3HTTPClient(time.Second)

	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPut, url+"/bucket/key", bytes.NewReader(make([]byte, size)))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("slow upload: %v", err)
	}
	resp.Body.Close()
	if n := <-got; n != size {
		t.Fatalf("server read %d bytes, want %d", n, size)
	}

	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, url+"/bucket/key", nil)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatalf("slow download: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "moving" {
		t.Fatalf("slow download: %q, %v", body, err)
	}
}

// draining sees the kernel's send queue: unchanged while the peer reads
// nothing, changed once it reads.
func TestS3ConnDraining(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		peer <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	srv := <-peer
	defer srv.Close()
	if _, ok := unsent(raw); !ok {
		t.Skip("the kernel's send queue is not readable on this system")
	}
	c := &idleConn{Conn: raw, timeout: 200 * time.Millisecond}
	// Fill the peer's buffer and the send queue: the write stops.
	n, err := c.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write nobody reads: %d bytes, %v; want the S3 timeout", n, err)
	}
	if q, _ := unsent(raw); q == 0 {
		t.Fatal("nothing queued after a stopped write")
	}
	c.draining() // records the queue
	if c.draining() {
		t.Fatal("draining with a peer that reads nothing")
	}
	if _, err := io.ReadFull(srv, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if !c.draining() {
		t.Fatal("not draining after the peer read 1 MB")
	}
}

func TestS3TimeoutProperty(t *testing.T) {
	if d, err := s3TimeoutOf(map[string]string{}); err != nil || d != DefaultS3Timeout {
		t.Errorf("no property: %v, %v; want the default", d, err)
	}
	if d, err := s3TimeoutOf(CatalogConfig{Warehouse: "s3://b/p", S3Timeout: 5 * time.Second}.IOProps()); err != nil || d != 5*time.Second {
		t.Errorf("S3Timeout 5s: %v, %v", d, err)
	}
	if _, err := s3TimeoutOf(map[string]string{propS3Timeout: "soon"}); err == nil {
		t.Error("timeout \"soon\" accepted")
	}
	if err := (CatalogConfig{Warehouse: "s3://b/p", S3Timeout: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "S3 timeout") {
		t.Errorf("a negative timeout: %v", err)
	}
}

// The s3:// file IO iceberg-go loads is the one registered here: a read
// from an endpoint that never answers fails with S3SilentError after the
// configured timeout instead of waiting for good.
func TestS3FileIOHasTimeout(t *testing.T) {
	url := serveRaw(t, func(c net.Conn, req *http.Request) {
		select {} // never answers, never closes
	})
	props := CatalogConfig{Warehouse: "s3://bucket/wh", S3Endpoint: url, S3Region: "us-east-1", S3PathStyle: true,
		S3AccessKeyID: "k", S3SecretAccessKey: "s", S3Timeout: 300 * time.Millisecond}.IOProps()
	fsys, err := icebergio.LoadFS(context.Background(), props, "s3://bucket/wh")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := fsys.Open("s3://bucket/wh/x.parquet")
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		var silent *S3SilentError
		if !errors.As(err, &silent) {
			t.Fatalf("read from a silent endpoint: %v; want an S3SilentError", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a read from a silent endpoint still waits after a minute (timeout 300ms)")
	}
}
