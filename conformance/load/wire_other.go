//go:build !linux

package load

import (
	"io"
	"time"
)

func dialWire(addr string, timeout time.Duration) (io.ReadWriteCloser, error) {
	return dialNet(addr, timeout)
}
