package simtest

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a running `gwsim serve`, started by Serve.
type Process struct {
	Cmd *exec.Cmd
	// URL is the base URL its banner printed.
	URL string

	mu     sync.Mutex
	stderr bytes.Buffer
	waited chan error
}

// banner finds the URL in gwsim's banner, as text or (--log-format json)
// as a JSON record.
var banner = regexp.MustCompile(`^(?:gwsim listening on |\{.*"url":")(http://[^\s"]+)`)

// Serve runs `bin serve --addr 127.0.0.1:0 --log-level warn args...` and
// returns once the banner names the URL. The process is killed when the
// test ends, if it is still running.
func Serve(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{waited: make(chan error, 1)}
	p.Cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}, args...)...)
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.Cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.stderr.Write(b)
	})
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := banner.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
		p.waited <- p.Cmd.Wait()
	}()
	t.Cleanup(func() { p.Kill() })
	select {
	case p.URL = <-urls:
		return p
	case <-time.After(20 * time.Second):
		p.Kill()
		t.Fatalf("gwsim serve printed no banner: %s", p.Stderr())
	}
	return nil
}

// Stderr is what the process wrote on stderr so far.
func (p *Process) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Kill stops the process at once (SIGKILL) and waits for it.
func (p *Process) Kill() {
	p.Cmd.Process.Kill()
	p.wait(10 * time.Second)
}

// Interrupt sends SIGINT and returns how the process exited (nil for exit
// 0), or an error when it did not stop within the limit.
func (p *Process) Interrupt(limit time.Duration) error {
	p.Cmd.Process.Signal(syscall.SIGINT)
	return p.wait(limit)
}

// Terminate sends SIGTERM (what Kubernetes and Docker send to stop a
// container) and returns how the process exited, or an error when it did
// not stop within the limit.
func (p *Process) Terminate(limit time.Duration) error {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	return p.wait(limit)
}

func (p *Process) wait(limit time.Duration) error {
	select {
	case err := <-p.waited:
		p.waited <- err // later calls see the same exit
		return err
	case <-time.After(limit):
		return errTimeout
	}
}

var errTimeout = &timeoutError{}

type timeoutError struct{}

func (*timeoutError) Error() string { return "gwsim serve did not stop in time" }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
