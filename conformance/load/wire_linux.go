//go:build linux

package load

import (
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// rawWire reads and writes the connection's non-blocking socket with raw
// system calls inside syscall.RawConn's Read and Write: the worker still
// waits in Go's network poller when no answer is there yet, but a call
// that does not block skips the runtime's system-call bookkeeping, which
// on every read and write wakes the runtime's monitor thread (sysmon). On
// two cores shared with the target that bookkeeping was a tenth of the
// load generator's CPU.
type rawWire struct {
	*netWire
	rc     syscall.RawConn
	p      []byte
	n      int
	errno  syscall.Errno
	readF  func(uintptr) bool
	writeF func(uintptr) bool
}

func dialWire(addr string, timeout time.Duration) (io.ReadWriteCloser, error) {
	c, err := dialNet(addr, timeout)
	if err != nil {
		return nil, err
	}
	nw := c.(*netWire)
	tc, ok := nw.Conn.(*net.TCPConn)
	if !ok {
		return nw, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nw, nil
	}
	w := &rawWire{netWire: nw, rc: rc}
	w.readF, w.writeF = w.read, w.write
	return w, nil
}

func (w *rawWire) read(fd uintptr) bool {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&w.p[0])), uintptr(len(w.p)))
	if e == syscall.EAGAIN {
		return false // wait in the poller
	}
	w.n, w.errno = int(r), e
	return true
}

func (w *rawWire) write(fd uintptr) bool {
	for len(w.p) > 0 {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.p[0])), uintptr(len(w.p)))
		switch e {
		case 0:
			w.n += int(r)
			w.p = w.p[r:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
	}
	return true
}

func (w *rawWire) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.p, w.n, w.errno = p, 0, 0
	for {
		if err := w.rc.Read(w.readF); err != nil {
			return 0, err
		}
		switch {
		case w.errno == syscall.EINTR:
			continue
		case w.errno != 0:
			return 0, &net.OpError{Op: "read", Net: "tcp", Err: w.errno}
		case w.n == 0:
			return 0, io.EOF
		}
		return w.n, nil
	}
}

func (w *rawWire) Write(p []byte) (int, error) {
	if now := time.Now(); w.deadline.Sub(now) < w.timeout/2 {
		w.deadline = now.Add(w.timeout)
		w.Conn.SetDeadline(w.deadline)
	}
	w.p, w.n, w.errno = p, 0, 0
	if err := w.rc.Write(w.writeF); err != nil {
		return w.n, err
	}
	if w.errno != 0 {
		return w.n, &net.OpError{Op: "write", Net: "tcp", Err: w.errno}
	}
	return w.n, nil
}

// closedByPeer peeks at the socket without waiting: end of stream or an
// error means the server closed the connection (or reset it), and bytes
// nobody asked for make it no use either; only "nothing yet" is alive.
func (w *rawWire) closedByPeer() bool {
	var b [1]byte
	closed := false
	err := w.rc.Read(func(fd uintptr) bool {
		_, _, e := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = e != syscall.EAGAIN && e != syscall.EINTR
		return true
	})
	return closed || err != nil
}
