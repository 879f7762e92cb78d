package server

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// When a request was sent, as its connection shows it. The client report
// judges a request against an earlier answer only when the app sent it
// after that answer reached it (clients.Transit); the moment a handler
// starts says little of that on a busy machine, or when requests of one
// device wait for each other. So every connection is numbered and keeps
// when its next request reached gwsim: the moment it was accepted for its
// first request, the moment the next request's first byte was read for a
// later one.

// sentListener numbers the connections it accepts.
type sentListener struct {
	net.Listener
	next atomic.Uint32
}

func (l *sentListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &sentConn{Conn: c, id: l.next.Add(1)}
	if sc.id == 0 {
		sc.id = l.next.Add(1) // 0 is "not known"
	}
	sc.pending.Store(time.Now().UnixNano())
	return sc, nil
}

// sentConn is one accepted connection: its number and when its next
// request's first byte came (Unix nanoseconds, 0 until one came).
type sentConn struct {
	net.Conn
	id      uint32
	pending atomic.Int64
	claimed atomic.Bool
}

func (c *sentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.pending.Load() == 0 {
		c.pending.CompareAndSwap(0, time.Now().UnixNano())
	}
	return n, err
}

// claim is when the request a handler took reached gwsim (start when
// the connection could not tell), the connection's number, and whether
// the request is the connection's first.
func (c *sentConn) claim(start time.Time) (time.Time, uint32, bool) {
	first := !c.claimed.Swap(true)
	if ns := c.pending.Swap(0); ns != 0 && ns <= start.UnixNano() {
		return time.Unix(0, ns), c.id, first
	}
	return start, c.id, first
}

// idle forgets what was read before the connection went idle (the body
// of the request answered): the next request's first byte comes after.
func (c *sentConn) idle() { c.pending.Store(0) }

// sentOf is the sentConn under a connection the server accepted.
func sentOf(c net.Conn) *sentConn {
	switch v := c.(type) {
	case *sentConn:
		return v
	case noFiveXXConn:
		return sentOf(v.Conn)
	}
	return nil
}

type sentKey struct{}

// connContext keeps the request's connection in its context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if sc := sentOf(c); sc != nil {
		return context.WithValue(ctx, sentKey{}, sc)
	}
	return ctx
}

// sentBy reads what the connection of r shows of when r was sent.
func sentBy(r *http.Request, start time.Time) (time.Time, uint32, bool) {
	if sc, ok := r.Context().Value(sentKey{}).(*sentConn); ok {
		return sc.claim(start)
	}
	return time.Time{}, 0, false
}

// TrackSent numbers the connections ln accepts and keeps when each of
// their requests reached the server, for another server that feeds a
// client report (gwsim proxy): with SentContext as its ConnContext,
// SentIdle as its ConnState and SentBy in its handler.
func TrackSent(ln net.Listener) net.Listener { return &sentListener{Listener: ln} }

// SentContext is the ConnContext of a server whose listener is TrackSent's.
func SentContext(ctx context.Context, c net.Conn) context.Context { return connContext(ctx, c) }

// SentIdle is the ConnState of a server whose listener is TrackSent's.
func SentIdle(c net.Conn, st http.ConnState) {
	if st == http.StateIdle {
		if sc := sentOf(c); sc != nil {
			sc.idle()
		}
	}
}

// SentBy is when r reached the server as its connection shows it (start
// when it cannot tell), the connection's number (0: not known) and
// whether r is its first request: clients.Exchange's Sent, Conn, First.
func SentBy(r *http.Request, start time.Time) (time.Time, uint32, bool) { return sentBy(r, start) }
