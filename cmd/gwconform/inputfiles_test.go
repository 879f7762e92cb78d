package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/safefile/safefiletest"
)

// TestInputFilesThatAreNotFiles: a bundle to verify, a report or explore
// file to replay, shard results to merge, explore's baseline, a key to sign
// or verify with, or a --product-file that is a
// FIFO (which would hang gwconform) or /dev/zero (which would fill
// memory) is refused at once with an error naming the file.
func TestInputFilesThatAreNotFiles(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := safefiletest.Planted(t, dir, "result.json", "zero.json")
	for _, p := range []string{fifo, zero} {
		for name, cmd := range map[string]func(ctx context.Context, stdout, stderr *bytes.Buffer) int{
			"verify": func(_ context.Context, o, e *bytes.Buffer) int { return verifyMain([]string{p}, o, e) },
			"replay": func(ctx context.Context, o, e *bytes.Buffer) int {
				return replayCmd(ctx, []string{p, "command.some.check"}, o, e)
			},
			"load merge": func(ctx context.Context, o, e *bytes.Buffer) int {
				return loadCmd(ctx, []string{"merge", p}, o, e)
			},
			"explore --baseline": func(ctx context.Context, o, e *bytes.Buffer) int {
				return exploreCmd(ctx, []string{"--baseline", p}, o, e)
			},
			"verify --key": func(_ context.Context, o, e *bytes.Buffer) int {
				return verifyMain([]string{filepath.Join(dir, "b.tar.gz"), "--key", p}, o, e)
			},
			"run --sign-key": func(ctx context.Context, o, e *bytes.Buffer) int {
				return runCmd(ctx, []string{"--bundle", filepath.Join(dir, "b.tar.gz"), "--sign-key", p}, o, e)
			},
		} {
			var out, errb bytes.Buffer
			done := make(chan int, 1)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { done <- cmd(ctx, &out, &errb) }()
			select {
			case code := <-done:
				if code == 0 || !strings.Contains(out.String()+errb.String(), "not a regular file") {
					t.Errorf("gwconform %s %s: exit %d, %q; want it refused as not a regular file", name, p, code, out.String()+errb.String())
				}
			case <-time.After(10 * time.Second):
				t.Errorf("gwconform %s %s hung", name, p)
			}
			cancel()
		}
	}
}
