// Command nullconsumer is the bench's second reference for the limit of
// logical decoding: a client that costs its walsender as little as a client
// can. It starts replication on a slot with exactly the bridge's plugin
// options (replication/stream.go) and session settings
// (replication/conn.go), discards every message and acknowledges the
// received position every -status-interval and when the server asks.
//
// It reads as cheaply as it can, so the walsender never waits for it:
// socket reads of up to -read-buffer bytes under pgproto3, whose messages
// are reused (no allocation per message); a receive low-water mark
// (-rcvlowat), so it wakes up for many messages at a time rather than for
// each of the walsender's sends; no clock read per message (a socket read
// deadline); and only the byte that tells a change from other messages is
// looked at.
//
// It stops at the first message that ends past -stop (the bench passes its
// marker's position, as for the bridge), acknowledges what it received, ends
// the stream with CopyDone, and prints one JSON line of counts on stdout.
//
//	nullconsumer -url postgres://user@host:port/db -slot s -publication p -stop 0/5000000
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pg2iceberg/pg2iceberg/replication"
)

type config struct {
	url            string
	slot           string
	publication    string
	app            string
	start          pglogrepl.LSN
	stop           pglogrepl.LSN
	statusInterval time.Duration
	readBuffer     int
	rcvLowat       int
	pause          time.Duration
}

// pausingReader sleeps before each read: a consumer busy with other work.
type pausingReader struct {
	r     io.Reader
	pause time.Duration
}

func (p pausingReader) Read(b []byte) (int, error) {
	time.Sleep(p.pause)
	return p.r.Read(b)
}

// result is what the run printed as JSON: what was received, so the caller
// can check that every change went through.
type result struct {
	Messages    int64  `json:"messages"`
	Changes     int64  `json:"changes"` // Insert, Update and Delete messages
	Bytes       int64  `json:"bytes"`   // pgoutput payload bytes
	ReceivedLSN string `json:"received_lsn"`
	// Seconds runs from the start of replication to the stop message.
	Seconds float64 `json:"seconds"`
	// Mallocs counts the heap allocations while receiving.
	Mallocs     uint64 `json:"mallocs"`
	StatusSends int    `json:"status_sends"`
}

func main() {
	var c config
	var start, stop string
	flag.StringVar(&c.url, "url", "", "PostgreSQL URL (the password from PGPASSWORD)")
	flag.StringVar(&c.slot, "slot", "", "logical replication slot (pgoutput)")
	flag.StringVar(&c.publication, "publication", "", "publication")
	flag.StringVar(&c.app, "app", "nullconsumer", "application_name of the connection")
	flag.StringVar(&start, "start", "0/0", "start position (0/0: the slot's confirmed_flush_lsn)")
	flag.StringVar(&stop, "stop", "", "stop at the first message that ends past this position")
	flag.DurationVar(&c.statusInterval, "status-interval", 10*time.Second, "acknowledge the received position this often (the bridge's and pg_recvlogical's default)")
	flag.IntVar(&c.readBuffer, "read-buffer", 1<<20, "socket read size in bytes")
	flag.DurationVar(&c.pause, "pause", 0, "sleep this long before each socket read (an experiment: a consumer busy between reads)")
	flag.IntVar(&c.rcvLowat, "rcvlowat", 256<<10, "socket receive low-water mark in bytes (SO_RCVLOWAT): wake up for no less (0: the kernel's default, a wake-up per send)")
	flag.Parse()
	if err := c.parse(start, stop); err != nil {
		fmt.Fprintln(os.Stderr, "nullconsumer:", err)
		os.Exit(2)
	}
	res, err := run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nullconsumer:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "nullconsumer:", err)
		os.Exit(1)
	}
}

func (c *config) parse(start, stop string) error {
	var problems []error
	if c.url == "" || c.slot == "" || c.publication == "" || stop == "" {
		problems = append(problems, errors.New("-url, -slot, -publication and -stop are required"))
	}
	var err error
	if c.start, err = pglogrepl.ParseLSN(start); err != nil {
		problems = append(problems, fmt.Errorf("-start %q: %w", start, err))
	}
	if stop != "" {
		if c.stop, err = pglogrepl.ParseLSN(stop); err != nil {
			problems = append(problems, fmt.Errorf("-stop %q: %w", stop, err))
		}
	}
	if c.statusInterval <= 0 || c.readBuffer < 8192 || c.rcvLowat < 0 || c.rcvLowat > c.readBuffer {
		problems = append(problems, errors.New("-status-interval must be positive, -read-buffer at least 8192, and -rcvlowat from 0 to -read-buffer"))
	}
	return errors.Join(problems...)
}

func run(ctx context.Context, c config) (result, error) {
	pc, err := pgconn.ParseConfig(c.url)
	if err != nil {
		return result{}, fmt.Errorf("parse -url: %w", err)
	}
	for k, v := range replication.SessionParams() {
		pc.RuntimeParams[k] = v
	}
	pc.RuntimeParams["application_name"] = c.app
	pc.RuntimeParams["replication"] = "database"
	pc.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		if c.pause > 0 {
			r = pausingReader{r: r, pause: c.pause}
		}
		return pgproto3.NewFrontend(bufio.NewReaderSize(r, c.readBuffer), w)
	}
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return result{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	opts := pglogrepl.StartReplicationOptions{PluginArgs: replication.PluginArgs(c.publication)}
	if err := pglogrepl.StartReplication(ctx, conn, c.slot, c.start, opts); err != nil {
		return result{}, fmt.Errorf("start replication on slot %s: %w", c.slot, err)
	}
	return consume(conn, c)
}

// XLogData: 'w', WAL start, WAL end, send time, then the pgoutput message;
// keepalive: 'k', WAL end, send time, reply requested.
const (
	xlogHeader      = 1 + 8 + 8 + 8
	keepaliveLength = 1 + 8 + 8 + 1
)

// drainEvery bounds how long a tail shorter than the receive low-water
// mark waits in the socket: the read deadline, after which a read returns
// what is there.
const drainEvery = 100 * time.Millisecond

// consume receives until a message ends past c.stop.
func consume(conn *pgconn.PgConn, c config) (result, error) {
	var res result
	var received pglogrepl.LSN
	status := func() error {
		res.StatusSends++
		return pglogrepl.SendStandbyStatusUpdate(context.Background(), conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: received})
	}
	if err := setRcvLowat(conn, c.rcvLowat); err != nil {
		return res, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	start := time.Now()
	nextStatus := start.Add(c.statusInterval)
	for {
		now := time.Now()
		if !now.Before(nextStatus) {
			if err := status(); err != nil {
				return res, fmt.Errorf("send status: %w", err)
			}
			nextStatus = now.Add(c.statusInterval)
		}
		if err := conn.Conn().SetReadDeadline(now.Add(min(drainEvery, c.statusInterval))); err != nil {
			return res, fmt.Errorf("set read deadline: %w", err)
		}
		done, err := receiveUntilTimeout(conn, c.stop, &res, &received, status)
		if err != nil {
			return res, err
		}
		if done {
			break
		}
	}
	res.Seconds = time.Since(start).Seconds()
	runtime.ReadMemStats(&ms)
	res.Mallocs = ms.Mallocs - mallocs
	res.ReceivedLSN = received.String()
	if err := status(); err != nil {
		return res, fmt.Errorf("send status: %w", err)
	}
	// End the stream as pg_recvlogical does at its end position: closing
	// the socket with data unread would reset the connection, and the
	// walsender could exit without reading the last status. The server's
	// last messages are short: no low-water mark for them.
	if err := setRcvLowat(conn, 1); err != nil {
		return res, err
	}
	if err := conn.Conn().SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		return res, fmt.Errorf("set read deadline: %w", err)
	}
	if _, err := pglogrepl.SendStandbyCopyDone(context.Background(), conn); err != nil {
		return res, fmt.Errorf("end the replication stream: %w", err)
	}
	return res, nil
}

// setRcvLowat sets the socket's receive low-water mark (SO_RCVLOWAT): the
// kernel wakes a waiting reader only once n bytes are queued, so each read
// takes many messages, and the walsender's sends do not each wake the
// consumer (on loopback the sender pays for the wake-up). 0 leaves the
// socket as it is.
func setRcvLowat(conn *pgconn.PgConn, n int) error {
	if n <= 0 {
		return nil
	}
	sc, ok := conn.Conn().(syscall.Conn)
	if !ok {
		return fmt.Errorf("set SO_RCVLOWAT: the connection is a %T, not a socket (-rcvlowat 0 leaves it alone)", conn.Conn())
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("set SO_RCVLOWAT: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}); err != nil {
		return fmt.Errorf("set SO_RCVLOWAT: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("set SO_RCVLOWAT to %d: %w", n, serr)
	}
	return nil
}

// receiveUntilTimeout receives messages until the read deadline passes
// (false) or a message ends past stop (true).
func receiveUntilTimeout(conn *pgconn.PgConn, stop pglogrepl.LSN, res *result, received *pglogrepl.LSN, status func() error) (bool, error) {
	for {
		msg, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			if pgconn.Timeout(err) {
				return false, nil
			}
			return false, fmt.Errorf("receive: %w", err)
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok {
			if e, ok := msg.(*pgproto3.ErrorResponse); ok {
				return false, fmt.Errorf("replication stream: %w", pgconn.ErrorResponseToPgError(e))
			}
			return false, fmt.Errorf("replication stream: unexpected %T before the stop position", msg)
		}
		d := cd.Data
		switch {
		case len(d) > xlogHeader && d[0] == pglogrepl.XLogDataByteID:
			payload := d[xlogHeader:]
			end := pglogrepl.LSN(binary.BigEndian.Uint64(d[1:9])) + pglogrepl.LSN(len(payload))
			*received = max(*received, end)
			res.Messages++
			res.Bytes += int64(len(payload))
			switch payload[0] {
			case 'I', 'U', 'D':
				res.Changes++
			}
			if end > stop {
				return true, nil
			}
		case len(d) >= keepaliveLength && d[0] == pglogrepl.PrimaryKeepaliveMessageByteID:
			if d[keepaliveLength-1] != 0 {
				if err := status(); err != nil {
					return false, fmt.Errorf("send status: %w", err)
				}
			}
		default:
			return false, fmt.Errorf("replication stream: unexpected CopyData of %d bytes", len(d))
		}
	}
}
