package replication

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// spool keeps the messages of streamed in-progress transactions on local
// disk until their STREAM COMMIT or STREAM ABORT.
type spool struct {
	dir   string
	files map[uint32]*spoolFile // by top-level XID
}

type spoolFile struct {
	f       *os.File
	w       *bufio.Writer
	aborted map[uint32]bool // aborted subtransactions
	bytes   int64
}

func newSpool(dir string) (*spool, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "pg2iceberg-spool-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create spool directory: %w", err)
	}
	return &spool{dir: dir, files: make(map[uint32]*spoolFile)}, nil
}

// add appends a message of subtransaction xid of top-level transaction top.
func (s *spool) add(top, xid uint32, msg []byte) error {
	sf := s.files[top]
	if sf == nil {
		f, err := os.Create(filepath.Join(s.dir, strconv.FormatUint(uint64(top), 10)))
		if err != nil {
			return fmt.Errorf("spool transaction %d: %w", top, err)
		}
		sf = &spoolFile{f: f, w: bufio.NewWriterSize(f, 1<<20), aborted: make(map[uint32]bool)}
		s.files[top] = sf
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], xid)
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(msg)))
	if _, err := sf.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("spool transaction %d: %w", top, err)
	}
	if _, err := sf.w.Write(msg); err != nil {
		return fmt.Errorf("spool transaction %d: %w", top, err)
	}
	sf.bytes += int64(len(msg)) + 8
	return nil
}

// abort discards a transaction (sub == top) or one subtransaction.
func (s *spool) abort(top, sub uint32) {
	sf := s.files[top]
	if sf == nil {
		return
	}
	if sub != top {
		sf.aborted[sub] = true
		return
	}
	s.discard(top)
}

func (s *spool) discard(top uint32) {
	if sf := s.files[top]; sf != nil {
		_ = sf.f.Close()
		_ = os.Remove(sf.f.Name())
		delete(s.files, top)
	}
}

// replay calls fn for every message of transaction top that was not aborted,
// in order, then removes the transaction's file.
func (s *spool) replay(top uint32, fn func(msg []byte) error) error {
	sf := s.files[top]
	if sf == nil {
		return nil
	}
	defer s.discard(top)
	if err := sf.w.Flush(); err != nil {
		return fmt.Errorf("spool transaction %d: %w", top, err)
	}
	if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool transaction %d: %w", top, err)
	}
	r := bufio.NewReaderSize(sf.f, 1<<20)
	var hdr [8]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read spooled transaction %d: %w", top, err)
		}
		xid, n := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("read spooled transaction %d: %w", top, err)
		}
		if sf.aborted[xid] {
			continue
		}
		if err := fn(buf); err != nil {
			return err
		}
	}
}

// close removes every spooled transaction: after a disconnect the server
// sends them again from the start.
func (s *spool) close() {
	for top := range s.files {
		s.discard(top)
	}
	_ = os.Remove(s.dir)
}
