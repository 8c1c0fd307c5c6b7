// Command keyindex measures the mirror's key index alone, without
// PostgreSQL or Iceberg: the memory it takes per key for bigint keys
// (serial, as a copy leaves them; serial then updated; random) and uuid
// keys. It is not part of `make test`; bench/README.md ("Key index")
// records its figures.
//
//	go run ./bench/keyindex -n 1000000,10000000
package main

import (
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

func main() {
	sizes := flag.String("n", "1000000,10000000", "key counts, comma-separated")
	kinds := flag.String("kinds", "serial,serial-updated,random,uuid", "key kinds, comma-separated")
	flag.Parse()
	debug.SetGCPercent(-1) // measure live heap only, after explicit GCs
	fmt.Printf("%-15s %12s %10s %12s\n", "kind", "keys", "bytes/key", "build")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatalf("-n %q: %v", s, err)
		}
		for _, kind := range strings.Split(*kinds, ",") {
			before := heap()
			start := time.Now()
			x := build(kind, n)
			took := time.Since(start)
			after := heap()
			fmt.Printf("%-15s %12d %10.1f %12s\n", kind, x.Len(), float64(after-before)/float64(n), took.Round(time.Millisecond))
			runtime.KeepAlive(x)
		}
	}
	os.Exit(0)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// bigint is the key of a bigint value.
func bigint(v int64) []byte { return binary.BigEndian.AppendUint64([]byte{8}, uint64(v)) }

// build fills an index with n keys of a kind, as the mirror would.
func build(kind string, n int) *keyindex.Index {
	x := keyindex.New()
	switch kind {
	case "serial", "serial-updated": // a copy: files of 1M rows, keys 1..n
		const perFile = 1 << 20
		for lo := 0; lo < n; lo += perFile {
			var keys keyindex.Keys
			for v := lo; v < min(n, lo+perFile); v++ {
				keys.Push(append(keys.Tail(), bigint(int64(v+1))...))
			}
			if _, ok := x.AddAll(&keys, x.AddFile(fmt.Sprintf("copy-%d", lo))); !ok {
				log.Fatal("duplicate key")
			}
		}
		if kind == "serial-updated" { // every row updated once, in random order
			f := x.AddFile("updates")
			for i, v := range mrand.Perm(n) {
				x.Set(string(bigint(int64(v+1))), keyindex.Loc{File: f, Pos: int64(i)})
			}
		}
	case "random":
		f := x.AddFile("random")
		for i := range n {
			x.Set(string(bigint(int64(mrand.Uint64()))), keyindex.Loc{File: f, Pos: int64(i)})
		}
	case "uuid":
		f := x.AddFile("uuid")
		var u [16]byte
		for i := range n {
			_, _ = rand.Read(u[:])
			x.Set(string(append([]byte{16}, u[:]...)), keyindex.Loc{File: f, Pos: int64(i)})
		}
	default:
		log.Fatalf("unknown kind %q", kind)
	}
	return x
}
