package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// spool keeps the messages of streamed in-progress transactions on local
// disk until their STREAM COMMIT or STREAM ABORT.
type spool struct {
	dir   string
	lock  *os.File              // the directory, flock'ed while the spool lives
	files map[uint32]*spoolFile // by top-level XID
	stale int                   // stale spool directories removed at creation
}

// spoolPrefix names a process's spool directory: pg2iceberg-spool-<pid>.
const spoolPrefix = "pg2iceberg-spool-"

type spoolFile struct {
	f       *os.File
	w       *bufio.Writer
	aborted map[uint32]bool // aborted subtransactions
	bytes   int64
}

// newSpool creates this process's spool directory in dir (default: the
// temp directory) and holds a lock on it for as long as the spool lives,
// after removing the spool directories of processes that died without
// removing theirs (SIGKILL, a crash): those nobody holds a lock on.
func newSpool(dir string) (*spool, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	stale := removeStaleSpools(dir)
	path := filepath.Join(dir, spoolPrefix+strconv.Itoa(os.Getpid()))
	lock, err := lockSpoolDir(path)
	if err != nil {
		return nil, fmt.Errorf("create spool directory: %w", err)
	}
	return &spool{dir: path, lock: lock, files: make(map[uint32]*spoolFile), stale: stale}, nil
}

// lockSpoolDir creates the directory path and takes an exclusive flock on
// it. Another process's removeStaleSpools may remove the directory between
// the two steps; then the locked inode is no longer at path, and it starts
// over.
func lockSpoolDir(path string) (*os.File, error) {
	for range 10 {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, err
		}
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if sameFile(f, path) {
			return f, nil
		}
		_ = f.Close()
	}
	return nil, fmt.Errorf("%s keeps disappearing while it is created", path)
}

// sameFile reports whether the open file f is still the file at path.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// removeStaleSpools removes the spool directories in dir that no live
// process holds (a bridge holds a flock on its own for its lifetime, and
// the kernel drops it when the process dies) and returns how many it
// removed. It never fails: a directory it cannot remove stays.
func removeStaleSpools(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), spoolPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && sameFile(f, path) {
			if os.RemoveAll(path) == nil {
				n++
			}
		}
		_ = f.Close()
	}
	return n
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

// spoolReader reads a spooled transaction's messages back, in order,
// leaving out those of aborted subtransactions.
type spoolReader struct {
	sf  *spoolFile
	top uint32
	r   *bufio.Reader
	hdr [8]byte
	buf []byte
}

// reader opens transaction top's spool file for reading from the start (nil
// when nothing was spooled). The caller discards the transaction after.
func (s *spool) reader(top uint32) (*spoolReader, error) {
	sf := s.files[top]
	if sf == nil {
		return nil, nil
	}
	if err := sf.w.Flush(); err != nil {
		return nil, fmt.Errorf("spool transaction %d: %w", top, err)
	}
	if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("spool transaction %d: %w", top, err)
	}
	return &spoolReader{sf: sf, top: top, r: bufio.NewReaderSize(sf.f, 1<<20)}, nil
}

// next returns the next message, valid until the next call, or io.EOF
// after the last (also for a nil reader).
func (r *spoolReader) next() ([]byte, error) {
	if r == nil {
		return nil, io.EOF
	}
	for {
		if _, err := io.ReadFull(r.r, r.hdr[:]); err == io.EOF {
			return nil, io.EOF
		} else if err != nil {
			return nil, fmt.Errorf("read spooled transaction %d: %w", r.top, err)
		}
		xid, n := binary.BigEndian.Uint32(r.hdr[:4]), binary.BigEndian.Uint32(r.hdr[4:])
		if cap(r.buf) < int(n) {
			r.buf = make([]byte, n)
		}
		r.buf = r.buf[:n]
		if _, err := io.ReadFull(r.r, r.buf); err != nil {
			return nil, fmt.Errorf("read spooled transaction %d: %w", r.top, err)
		}
		if !r.sf.aborted[xid] {
			return r.buf, nil
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
	_ = s.lock.Close()
}
