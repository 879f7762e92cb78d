package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is a program under load, started as its own process.
type server struct {
	cmd     *exec.Cmd
	url     string
	started time.Duration // from start until it said where it listens
	stderr  *bytes.Buffer
	done    chan error
	once    sync.Once
}

var urlRe = regexp.MustCompile(`http://[0-9A-Za-z.:\[\]-]+`)

// startServer runs argv and waits (up to wait) for the first line of its
// stdout that holds an http:// URL: gwsim's banner, or ServeBare's line.
func startServer(argv []string, wait time.Duration) (*server, error) {
	return startServerEnv(argv, nil, wait)
}

// startServerEnv is startServer with env added to the environment.
func startServerEnv(argv, env []string, wait time.Duration) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if u := urlRe.FindString(sc.Text()); u != "" && !sent {
				found <- u
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case u, ok := <-found:
		if !ok {
			<-s.done
			return nil, fmt.Errorf("%s exited without listening: %s", strings.Join(argv, " "), tail(s.stderr.String()))
		}
		s.url, s.started = u, time.Since(start)
		return s, nil
	case <-time.After(wait):
		s.stop()
		return nil, fmt.Errorf("%s did not listen within %s", strings.Join(argv, " "), wait)
	}
}

// stop ends the process: SIGTERM, then SIGKILL after five seconds.
func (s *server) stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// cpu is the CPU time (user and system) the process has used so far, from
// /proc; ok is false where /proc is not there.
func (s *server) cpu() (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const ticks = 100 // USER_HZ, 100 on every Linux build that matters
	return time.Duration(ut+st) * time.Second / ticks, true
}

// rss is the resident memory of the process, from /proc.
func (s *server) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// settleTime is how long a server is left after it listens before its
// RSS is read: what a user sees once it serves, not a figure taken while
// the runtime is still returning start-up memory.
const settleTime = time.Second

// settledRSS is the process's RSS settleTime after it listened.
func (s *server) settledRSS() int64 {
	time.Sleep(settleTime)
	return s.rss()
}

// output runs a command to completion and returns its stdout.
func output(ctx context.Context, dir string, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, tail(stderr.String()+stdout.String()))
	}
	return stdout.String(), nil
}

// tail is the end of a program's output, for error messages.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// machineBusy is the CPU time all cores spent not idle since boot, from
// /proc/stat.
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are already in user
			continue
		}
		busy += n
	}
	const ticks = 100
	return time.Duration(busy) * time.Second / ticks, true
}

// loadAverage is /proc/loadavg's first three numbers.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// exitOf is the exit status of a command that ran: 0 when err is nil, its
// code when it exited so; any other error (it could not start) is
// returned.
func exitOf(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	}
	return 0, err
}

// adminCall sends one call to gwsim's admin API (JSON body) and fails
// unless it is answered with a 2xx.
func adminCall(ctx context.Context, url, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, url+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
	}
	return nil
}
