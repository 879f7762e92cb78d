// Package safefile writes output files whole and reads input files
// bounded, so that neither can be turned against the user by what is
// already in the folder.
//
// A file is written to a temporary file created exclusively (O_EXCL, a
// random name) in the same folder and renamed over the final name: a
// symlink planted at the final name or at any temporary name is replaced,
// never followed, and a reader never sees a file half written. A file is
// read only if it is a regular file (a FIFO, a device such as /dev/zero or
// a directory is refused with an error naming it, at once: opening does
// not block), and only up to a limit.
//
// The folder a path names is the user's choice and is taken as it is; the
// file's own name is never followed.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// File is an output file being written: write to it, then Commit to put
// it in place, or Abort to leave no trace. Abort after Commit does
// nothing, so `defer f.Abort()` is safe.
type File struct {
	*os.File
	path string
	perm fs.FileMode
	done bool
}

// Create starts writing the file at path: a temporary file in the same
// folder, created exclusively, that Commit renames to path.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("%s: not a file name", path)
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path, perm: perm}, nil
}

// Commit flushes the file to disk and renames it to its final name,
// replacing whatever was there (a planted symlink included: the link is
// replaced, its target untouched).
func (f *File) Commit() error {
	if f.done {
		return errors.New("safefile: " + f.path + " already committed or aborted")
	}
	f.done = true
	err := f.Chmod(f.perm)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file; the final name is left as
// it was.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
}

// WriteFile writes data to path whole (Create, Write, Commit).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// Write writes path whole with what fn writes to it; an error of fn
// leaves the final name as it was.
func Write(path string, perm fs.FileMode, fn func(io.Writer) error) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// ErrTooLarge is wrapped by the error of a file over the limit.
var ErrTooLarge = errors.New("too large")

// Open opens path for reading if it is a regular file of at most limit
// bytes (a symlink to one is followed). A FIFO, a device, a socket or a
// directory is refused at once with an error that says what it is.
func Open(path string, limit int64) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
	// It changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file", path, kind(st.Mode()))
	}
	if st.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed: %w", path, st.Size(), limit, ErrTooLarge)
	}
	return f, nil
}

// ReadFile reads a regular file of at most limit bytes (see Open). A file
// that grows past the limit while it is read is refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is more than the %d bytes allowed: %w", path, limit, ErrTooLarge)
	}
	return b, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.String() + ")"
}

// CreateLog creates the file at path for a log that others read while it
// is written (an ack log): a temporary file created exclusively, renamed
// to path at once, and returned open. Whatever was at path (a planted
// symlink included) is replaced, never followed or truncated.
func CreateLog(path string, perm fs.FileMode) (*os.File, error) {
	f, err := Create(path, perm)
	if err != nil {
		return nil, err
	}
	f.done = true
	err = f.Chmod(perm)
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.File.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return f.File, nil
}

// MaxInput bounds an input file that has no limit of its own (a report, a
// baseline, a result file read back).
const MaxInput = 256 << 20

// MaxSecret bounds a file that holds one secret or token (--secret-file).
const MaxSecret = 64 << 10
