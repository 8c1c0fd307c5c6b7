// Command keyindex measures the mirror's key index alone, without
// PostgreSQL or Iceberg: the memory it takes per key for bigint keys
// (serial, as a copy leaves them; serial then updated; random) and uuid
// keys. It is not part of `make test`; bench/README.md ("Key index")
// records its figures.
//
//	go run ./bench/keyindex -n 1000000,10000000
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

func main() {
	sizes := flag.String("n", "1000000,10000000", "key counts, comma-separated")
	kinds := flag.String("kinds", "serial,serial-updated,random,uuid", "key kinds, comma-separated")
	budget := flag.Int64("budget", 0, "memory budget of the index in bytes; 0: all in memory (no disk tier)")
	dir := flag.String("dir", os.TempDir(), "directory for the disk tier's runs")
	updates := flag.Int("updates", 1_000_000, "random updates timed after the build (lookup, delete, insert)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("%-15s %12s %10s %12s %10s %12s %10s\n", "kind", "keys", "bytes/key", "build", "disk B/key", "updates/s", "spilled")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatalf("-n %q: %v", s, err)
		}
		for _, kind := range strings.Split(*kinds, ",") {
			before := heap()
			start := time.Now()
			x := keyindex.New()
			tier := ""
			if *budget > 0 {
				tier = filepath.Join(*dir, "pg2iceberg-bench-keyindex")
				if err := x.UseDisk(tier, *budget); err != nil {
					log.Fatal(err)
				}
			}
			keys := build(x, kind, n)
			took := time.Since(start)
			after := heap()
			disk := dirBytes(tier)
			rate := update(x, keys, *updates)
			if err := x.Err(); err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%-15s %12d %10.1f %12s %10.1f %12.0f %10v\n", kind, x.Len(), float64(after-before)/float64(n), took.Round(time.Millisecond),
				float64(disk)/float64(n), rate, x.Spilled())
			x.Clear()
			runtime.KeepAlive(x)
		}
	}
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

// dirBytes is the size of the files in dir.
func dirBytes(dir string) int64 {
	if dir == "" {
		return 0
	}
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// update times random updates as the mirror makes them: the old row's
// lookup and delete, then the new row's insert. It returns updates/s.
func update(x *keyindex.Index, keys func(i int) string, n int) float64 {
	f := x.AddFile("updated")
	start := time.Now()
	for i := range n {
		k := keys(mrand.IntN(x.Len()))
		if _, ok := x.Get(k); !ok {
			log.Fatalf("update: key %x not found", k)
		}
		x.Del(k)
		x.Set(k, keyindex.Loc{File: f, Pos: int64(i)})
	}
	return float64(n) / time.Since(start).Seconds()
}

// build fills an index with n keys of a kind, as the mirror would, and
// returns the key of row i.
func build(x *keyindex.Index, kind string, n int) func(i int) string {
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
			x.Set(randomKey(i), keyindex.Loc{File: f, Pos: int64(i)})
		}
		return randomKey
	case "uuid":
		f := x.AddFile("uuid")
		for i := range n {
			x.Set(uuidKey(i), keyindex.Loc{File: f, Pos: int64(i)})
		}
		return uuidKey
	default:
		log.Fatalf("unknown kind %q", kind)
	}
	return func(i int) string { return string(bigint(int64(i + 1))) }
}

// randomKey and uuidKey are the keys of row i: random-looking, and the
// same for the same i, so the updates need no list of the keys.
func randomKey(i int) string { return string(bigint(int64(mix(uint64(i))))) }

func uuidKey(i int) string {
	u := binary.BigEndian.AppendUint64([]byte{16}, mix(uint64(i)))
	return string(binary.BigEndian.AppendUint64(u, mix(uint64(i)^0x9e3779b97f4a7c15)))
}

func mix(v uint64) uint64 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	v *= 0xc4ceb9fe1a85ec53
	return v ^ v>>33
}
