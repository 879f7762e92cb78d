//go:build unix

package client

import (
	"os/exec"
	"syscall"
)

// ownGroup runs the command in a process group of its own and kills the
// whole group on timeout, so that a sign script's children do not outlive it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
