package persist_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/safefile/safefiletest"
	"github.com/gwdmi/gwtools/simulator/internal/persist"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

// TestStateFilePlanted: a state-file path that is a FIFO or a symlink to
// /dev/zero is refused at once (no hang, no memory filled); a symlink
// planted to an empty file elsewhere is replaced by the new state file,
// never followed: its target stays as it was.
func TestStateFilePlanted(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := safefiletest.Planted(t, dir, "state.fifo", "zero.db")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{fifo, zero} {
			_, err := persist.Open(p, store.New(simtest.Fleet(), 0))
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want refused as not a regular file", p, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO as the state file hung")
	}

	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, nil, 0o600)
	before, _ := os.Stat(victim)
	p := filepath.Join(dir, "state.db")
	os.Symlink(victim, p)
	_, pf := open(t, p, simtest.Fleet())
	pf.Close()
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the state file is not a regular file: %v %v", st, err)
	}
	if after, _ := os.Stat(victim); after.Size() != 0 || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the symlink's target was written: %d bytes", after.Size())
	}
}
