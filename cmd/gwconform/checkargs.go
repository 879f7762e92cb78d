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
	case "load":
		var err error
		switch {
		case len(args) > 1 && args[1] == "merge":
			_, err = parseMergeFlags(args[2:], io.Discard)
		case len(args) > 1 && args[1] == "check-acks":
			_, err = parseCheckAcksFlags(args[2:], io.Discard)
		default:
			m := &loadMain{Stdout: io.Discard, Stderr: io.Discard}
			err = m.ParseFlags(args[1:])
		}
		if errors.Is(err, errUsage) {
			err = errors.New("bad flags")
		}
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("load: %w", err)
		}
		return nil
	case "checks", "sign", "verify", "replay", "baseline", "-h", "--help", "help", "--version", "version":
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}
