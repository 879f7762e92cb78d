package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseFlags parses args with fs. A mistake gets one line on fs's output,
// naming the flag and, for an unknown one, the nearest flag fs has
// ("did you mean --parallel?"), instead of the flag package's line followed
// by the whole usage; the usage is printed for -h alone. The error is
// flag.ErrHelp for -h, one wrapping errUsage once the line is printed.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		}
		return err
	}
	problem := flagProblem(fs, err)
	fmt.Fprintf(out, "%s: %s; \"%s -h\" lists every flag\n", fs.Name(), problem, fs.Name())
	return fmt.Errorf("%w: %s", errUsage, problem)
}

// flagProblem says what is wrong with a command line in the flag
// package's error err, with flags written --name as our usage writes them.
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		s := "unknown flag --" + name
		if near := nearestFlag(fs, name); near != "" {
			s += " (did you mean --" + near + "?)"
		}
		return s
	}
	// "invalid value "x" for flag -timeout: ...", "flag needs an argument: -target"
	return strings.Replace(msg, " -", " --", 1)
}

// nearestFlag is the visible flag of fs closest to name: at most two edits
// away, or name's start or end; "" when none is.
func nearestFlag(fs *flag.FlagSet, name string) string {
	name = strings.TrimLeft(name, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if hiddenFlag(f) {
			return
		}
		d := editDistance(strings.ToLower(name), f.Name)
		if d > 2 && len(name) >= 4 && (strings.HasPrefix(f.Name, name) || strings.HasSuffix(f.Name, name)) {
			d = 2
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// nearestWord is the word of words closest to w (at most two edits), or "".
func nearestWord(w string, words []string) string {
	best, bestD := "", 3
	for _, c := range words {
		if d := editDistance(w, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// hiddenFlag: Ginkgo's and go test's own flags, and the internal worker
// flags, are not offered as suggestions or listed in a synopsis.
func hiddenFlag(f *flag.Flag) bool {
	return strings.HasPrefix(f.Name, "ginkgo.") || strings.HasPrefix(f.Name, "test.") || strings.HasPrefix(f.Usage, "internal:")
}

// editDistance is the Levenshtein distance between a and b, with a
// transposition of two neighbours counted as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
