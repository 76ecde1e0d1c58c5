package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is a connection to a test server in PostgreSQL's frontend/backend
// protocol (version 3), as far as this package needs it: trust
// authentication and simple queries, whose rows come back as text. It
// stands in for a driver because this package is part of the core module,
// which must require no PostgreSQL driver (modules_test.go); the stores'
// own tests connect with theirs.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
}

// protocolVersion is 3.0, the version of every PostgreSQL since 7.4.
const protocolVersion = 3 << 16

// maxMessage bounds a backend message, so a garbled length fails instead of
// allocating without limit; these helpers' replies are tiny.
const maxMessage = 1 << 24

// dial connects to the server on 127.0.0.1:port as the user postgres, to
// database, and waits until the server is ready for a query.
func dial(ctx context.Context, port int, database string) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, r: bufio.NewReader(nc)}
	startup := binary.BigEndian.AppendUint32(nil, protocolVersion)
	for _, s := range []string{"user", "postgres", "database", database, ""} {
		startup = append(append(startup, s...), 0)
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(4+len(startup)))
	if err := c.exchange(ctx, append(msg, startup...), nil); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}

// query runs sql (one statement or several, separated by semicolons) and
// returns the rows it returned, each column as text ("" for NULL), or the
// server's error. The connection stays usable after an error in sql.
func (c *conn) query(ctx context.Context, sql string) ([][]string, error) {
	body := append([]byte(sql), 0)
	msg := append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))...)
	var rows [][]string
	err := c.exchange(ctx, append(msg, body...), func(row []string) { rows = append(rows, row) })
	return rows, err
}

// close ends the session (Terminate) and closes the connection.
func (c *conn) close() error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.nc.Write([]byte{'X', 0, 0, 0, 4})
	return c.nc.Close()
}

// exchange sends msg and reads the backend's messages up to ReadyForQuery,
// handing each data row to row. The first error the server reports is
// returned once it is ready again; a broken connection ends the exchange
// at once.
func (c *conn) exchange(ctx context.Context, msg []byte, row func([]string)) error {
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(deadline)
		defer func() { _ = c.nc.SetDeadline(time.Time{}) }()
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.nc.Write(msg); err != nil {
		return err
	}
	var serverErr error
	for {
		typ, body, err := c.read()
		if err != nil && serverErr != nil {
			return serverErr // as at start-up: the server says why, then hangs up
		}
		if err != nil {
			return err
		}
		switch typ {
		case 'R': // authentication: 0 is AuthenticationOk, all else asks for a password or more
			if len(body) < 4 || binary.BigEndian.Uint32(body) != 0 {
				return errors.New("pgtest: the server asks for authentication; test servers trust the user postgres")
			}
		case 'E':
			if serverErr == nil {
				serverErr = errorResponse(body)
			}
		case 'D':
			if row != nil {
				r, err := dataRow(body)
				if err != nil {
					return err
				}
				row(r)
			}
		case 'Z':
			return serverErr
		}
	}
}

// read reads one backend message: its type and its body.
func (c *conn) read() (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(c.r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > maxMessage {
		return 0, nil, fmt.Errorf("pgtest: backend message %q of length %d", head[0], n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return 0, nil, err
	}
	return head[0], body, nil
}

// errorResponse is the server's error: its fields are a type byte and a
// zero-terminated string each, the list ended by a zero byte.
func errorResponse(body []byte) error {
	fields := map[byte]string{}
	for len(body) > 1 {
		end := bytes.IndexByte(body[1:], 0)
		if end < 0 {
			break
		}
		fields[body[0]] = string(body[1 : 1+end])
		body = body[2+end:]
	}
	return fmt.Errorf("pgtest: %s: %s (SQLSTATE %s)", fields['S'], fields['M'], fields['C'])
}

// dataRow is a row's columns: a count, then each column's length (-1 for
// NULL) and bytes.
func dataRow(body []byte) ([]string, error) {
	bad := errors.New("pgtest: malformed data row")
	if len(body) < 2 {
		return nil, bad
	}
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	row := make([]string, 0, n)
	for range n {
		if len(body) < 4 {
			return nil, bad
		}
		l := int32(binary.BigEndian.Uint32(body))
		body = body[4:]
		if l < 0 {
			row = append(row, "")
			continue
		}
		if int(l) > len(body) {
			return nil, bad
		}
		row = append(row, string(body[:l]))
		body = body[l:]
	}
	return row, nil
}
