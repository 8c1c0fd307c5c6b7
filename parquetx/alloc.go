package parquetx

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the Arrow allocator of the data files' builders and Parquet
// writers. Go's allocator hands out every large buffer fresh: a copy
// writing millions of rows made and zeroed the same column buffers for
// every batch of 8192 rows, and page-faulted them in, which cost a tenth of
// its CPU. bufferPool keeps freed buffers by power-of-two size and hands
// them out again, zeroed as Arrow expects; buffers never freed are left to
// the garbage collector, as before. It is safe for concurrent use.
//
// What makes it safe: a buffer comes back only through Free, which Arrow
// calls when the last reference to an array's data is released, and
// arrow-go's Parquet writer copies what it keeps of a batch (encoded
// values, statistics, dictionary entries) before the batch is released.
// TestBufferPoolFiles writes through it, poisoning freed buffers, and
// reads every value back.
type bufferPool struct {
	classes [poolMaxClass - poolMinClass + 1]sync.Pool
	poison  bool // tests: fill freed buffers, so that a use after Free shows
}

// Buffers between 4 KiB and 64 MiB are pooled; others come from and go
// back to Go as with memory.GoAllocator.
const (
	poolMinClass = 12
	poolMaxClass = 26
	poolAlign    = 64 // Arrow's buffer alignment
)

var dataAlloc memory.Allocator = &bufferPool{}

// poolClass returns the size class of a buffer of size bytes, or -1 if such
// buffers are not pooled.
func poolClass(size int) int {
	if size <= 0 {
		return -1
	}
	c := bits.Len(uint(size - 1))
	if c > poolMaxClass {
		return -1
	}
	return max(c, poolMinClass)
}

func (p *bufferPool) Allocate(size int) []byte {
	c := poolClass(size)
	if c < 0 {
		return alignedBytes(size)
	}
	if b, ok := p.classes[c-poolMinClass].Get().(*[]byte); ok {
		buf := (*b)[:size]
		clear(buf)
		return buf
	}
	return alignedBytes(1 << c)[:size]
}

func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size]) // a pooled buffer's tail is not zero
		}
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *bufferPool) Free(b []byte) {
	c := cap(b)
	if c < 1<<poolMinClass || c > 1<<poolMaxClass || c&(c-1) != 0 {
		return // not of a pooled size: the garbage collector's
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%poolAlign != 0 {
		return
	}
	b = b[:c]
	if p.poison {
		for i := range b {
			b[i] = 0xEE
		}
	}
	p.classes[poolClass(c)-poolMinClass].Put(&b)
}

// alignedBytes returns size zeroed bytes starting at a multiple of
// poolAlign, as memory.GoAllocator does.
func alignedBytes(size int) []byte {
	buf := make([]byte, size+poolAlign)
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & (poolAlign - 1))
	return buf[shift : shift+size : shift+size]
}
