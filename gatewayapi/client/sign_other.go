//go:build !unix

package client

import "os/exec"

// ownGroup does nothing where process groups are not available; WaitDelay
// still bounds the wait for the command's children.
func ownGroup(*exec.Cmd) {}
