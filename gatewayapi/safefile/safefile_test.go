package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/safefile/safefiletest"
)

// TestWriteReplacesAPlantedSymlink: a symlink planted at the output's name
// (junit.xml -> a file the attacker wants overwritten) is replaced by the
// new file; its target keeps its content. Temporary names are random and
// created exclusively, so no planted name is ever opened.
func TestWriteReplacesAPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	out := filepath.Join(dir, "junit.xml")
	if err := os.Symlink(victim, out); err != nil {
		t.Fatal(err)
	}
	// The old fixed temporary names too.
	os.Symlink(victim, out+".tmp")
	if err := WriteFile(out, []byte("<testsuites/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	st, err := os.Lstat(out)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Fatalf("junit.xml is not a regular 0644 file: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(out); string(b) != "<testsuites/>" {
		t.Fatalf("content %q", b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".junit.xml.*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestAbortLeavesTheOldFile: a write that fails half way leaves the file
// as it was, and no temporary file.
func TestAbortLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	os.WriteFile(out, []byte("old"), 0o644)
	err := Write(out, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("boom")
	})
	if err == nil || err.Error() != "boom" {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("the old file changed: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestOpenRefusesWhatIsNotARegularFile: a FIFO is refused at once (it
// would block start-up forever), /dev/zero through a symlink is refused
// (it would fill memory), and so is a directory and a file over the
// limit; a symlink to a regular file is read.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := safefiletest.Planted(t, dir, "fleet.yaml", "zero.yaml")
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, make([]byte, 2000), 0o644)
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("ok"), 0o644)
	link := filepath.Join(dir, "link.yaml")
	os.Symlink(good, link)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for path, want := range map[string]string{fifo: "named pipe", zero: "character device", dir: "directory", big: "more than the 1000"} {
			_, err := ReadFile(path, 1000)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: %v, want an error naming it and saying %q", path, err, want)
			}
		}
		if _, err := ReadFile(big, 1000); !errors.Is(err, ErrTooLarge) {
			t.Errorf("big: %v is not ErrTooLarge", err)
		}
		if b, err := ReadFile(link, 1000); err != nil || string(b) != "ok" {
			t.Errorf("a symlink to a regular file: %q %v", b, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading hung (the FIFO was opened as a file)")
	}
}

// TestCreateLogReplacesAPlantedSymlink: an ack log whose name is a planted
// symlink is created beside it; the link's target is untouched, and the
// log is readable under its name while it is written.
func TestCreateLogReplacesAPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	out := filepath.Join(dir, "acks.jsonl")
	os.Symlink(victim, out)
	f, err := CreateLog(out, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("{\"seq\":1}\n")
	if b, _ := os.ReadFile(out); string(b) != "{\"seq\":1}\n" {
		t.Errorf("the log under its name while written: %q", b)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if st, _ := os.Lstat(out); !st.Mode().IsRegular() {
		t.Errorf("%s is %v", out, st.Mode())
	}
}
