package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// checkArgs parses a whole gwconform command line (subcommand and flags,
// without the program name) as gwconform would, without running anything:
// the tests of deploy/ and docs/ keep every command line they give valid.
func checkArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	switch args[0] {
	case "run":
		m := &runMain{Stdout: io.Discard, Stderr: io.Discard, checkOnly: true}
		if err := m.ParseFlags(args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	case "explore":
		m := &exploreMain{Stdout: io.Discard, Stderr: io.Discard}
		if err := m.ParseFlags(args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	case "checks", "load", "sign", "verify", "replay", "baseline", "-h", "--help", "help", "--version", "version":
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}
