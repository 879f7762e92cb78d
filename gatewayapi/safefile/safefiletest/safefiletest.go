// Package safefiletest plants, for a test, the files that are not files
// that a program must refuse to read: a FIFO, which would block its read
// for ever, and a symlink to /dev/zero, which would fill its memory.
package safefiletest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Planted makes, in dir, a FIFO named fifoName and a symlink to /dev/zero
// named zeroName, and returns their paths. It skips the test where the
// file system has no FIFOs.
func Planted(t testing.TB, dir, fifoName, zeroName string) (fifo, zero string) {
	t.Helper()
	fifo = filepath.Join(dir, fifoName)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	zero = filepath.Join(dir, zeroName)
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	return fifo, zero
}
