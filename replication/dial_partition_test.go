//go:build partition && linux

package replication

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// With the peer cut off below the sockets (iptables drops what the
// bridge sends, as a partition would), a connection the bridge dialed
// fails within about defaultUserTimeout, whether it has just sent a query or
// sits waiting on a silent server; the kernel's defaults take about 15
// and 2.5 minutes. Needs root and iptables: make partition.
func TestDialNoticesPartition(t *testing.T) {
	for _, tc := range []struct {
		name string
		send bool
	}{{"query sent", true}, {"silent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					defer c.Close() // held open, never read: a server that went away
				}
			}()
			c := dialConfigured(t, ln.Addr().String(), "", false)
			defer c.Close()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			rule := []string{"INPUT", "-p", "tcp", "--dport", port, "-j", "DROP"}
			if out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
				t.Fatalf("iptables (this test needs root and iptables): %v\n%s", err, out)
			}
			defer func() { _ = exec.Command("iptables", append([]string{"-D"}, rule...)...).Run() }()
			start := time.Now()
			if tc.send {
				if _, err := c.Write([]byte("SELECT 1")); err != nil {
					t.Fatal(err)
				}
			}
			_, err = c.Read(make([]byte, 1))
			took := time.Since(start)
			if err == nil || took > 2*defaultUserTimeout {
				t.Fatalf("read on the cut connection: %v after %s; want an error within %s", err, took.Round(time.Second), 2*defaultUserTimeout)
			}
			t.Logf("the cut connection failed after %s: %v", took.Round(time.Second), err)
		})
	}
}
