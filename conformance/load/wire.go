package load

import (
	"io"
	"net"
	"time"
)

// netWire is a connection through Go's network poller, with the deadline
// moved only when less than half the timeout is left rather than on every
// request.
type netWire struct {
	net.Conn
	timeout  time.Duration
	deadline time.Time
}

func dialNet(addr string, timeout time.Duration) (io.ReadWriteCloser, error) {
	c, err := net.DialTimeout("tcp", addr, min(timeout, 10*time.Second))
	if err != nil {
		return nil, err
	}
	return &netWire{Conn: c, timeout: timeout}, nil
}

func (w *netWire) Write(p []byte) (int, error) {
	if now := time.Now(); w.deadline.Sub(now) < w.timeout/2 {
		w.deadline = now.Add(w.timeout)
		w.Conn.SetDeadline(w.deadline)
	}
	return w.Conn.Write(p)
}
