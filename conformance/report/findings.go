package report

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Finding is several failures that share one cause, stated once: the
// sign's positions a target does not compare, a check that fails in every
// format. Each instance stays a failure of its own; the finding says what
// they have in common, so that a vendor fixes one thing, not sixteen.
type Finding struct {
	// Cause is the shared cause in one sentence.
	Cause string `json:"cause"`
	// Checks are the failed checks it groups, in ID order.
	Checks []string `json:"checks"`
}

// signPosition is the ID of a sign position check: its operation, its
// position (from 0) and its format; a .contract twin is the same request.
var signPosition = regexp.MustCompile(`^([a-z_]+)\.sign\.position-(\d\d)\.(json|xml)$`)

// Findings groups d's failed MUST and SHOULD checks by shared cause.
func Findings(d Document) []Finding {
	var out []Finding
	if f, ok := signFinding(d); ok {
		out = append(out, f)
	}
	out = append(out, formatFindings(d)...)
	return out
}

// signFinding: the sign position checks that failed, and which positions
// they are. When they are the last ones (every position after k, none up
// to k), the target compares only the first k characters.
func signFinding(d Document) (Finding, bool) {
	failed, passed := map[int]bool{}, map[int]bool{}
	var ids []string
	for _, r := range d.Results {
		m := signPosition.FindStringSubmatch(r.ID)
		if m == nil {
			continue
		}
		at, _ := strconv.Atoi(m[2])
		switch r.Outcome {
		case Failed:
			failed[at+1] = true
			ids = append(ids, r.ID)
		case Passed:
			passed[at+1] = true
		}
	}
	if len(failed) < 2 {
		return Finding{}, false
	}
	sort.Strings(ids)
	positions := make([]int, 0, len(failed))
	for p := range failed {
		positions = append(positions, p)
	}
	sort.Ints(positions)
	first := positions[0]
	suffix := positions[len(positions)-1] == 32 && len(positions) == 33-first
	for p := 1; p < first && suffix; p++ {
		if !passed[p] {
			suffix = false // a position before was not shown compared
		}
	}
	var cause string
	if suffix {
		cause = fmt.Sprintf("only the first %d characters of the sign are compared: a sign changed at any of positions %d to 32 is accepted (published 5: a sign that differs from the right one is no sign)", first-1, first)
	} else {
		words := make([]string, len(positions))
		for i, p := range positions {
			words[i] = strconv.Itoa(p)
		}
		cause = "the sign's characters at positions " + strings.Join(words, ", ") + " of 32 are not compared: a sign changed there is accepted (published 5: a sign that differs from the right one is no sign)"
	}
	return Finding{Cause: cause, Checks: ids}, true
}

// formatFindings: a check that fails in JSON and in XML alike (its IDs
// differ only in the format) fails for its request, not for a format.
func formatFindings(d Document) []Finding {
	byBase := map[string][]string{}
	formats := map[string]map[string]bool{}
	for _, r := range d.Results {
		if r.Outcome != Failed || r.Level == "INFO" || signPosition.MatchString(r.ID) {
			continue
		}
		base, f, ok := withoutFormat(r.ID)
		if !ok {
			continue
		}
		byBase[base] = append(byBase[base], r.ID)
		if formats[base] == nil {
			formats[base] = map[string]bool{}
		}
		formats[base][f] = true
	}
	bases := make([]string, 0, len(byBase))
	for b := range byBase {
		if formats[b]["json"] && formats[b]["xml"] {
			bases = append(bases, b)
		}
	}
	sort.Strings(bases)
	out := make([]Finding, 0, len(bases))
	for _, b := range bases {
		ids := byBase[b]
		sort.Strings(ids)
		out = append(out, Finding{Cause: "the same check fails in JSON and in XML (" + b + "): the cause is in what is sent, not in the format", Checks: ids})
	}
	return out
}

// withoutFormat is id with its format part (.json, .xml) written as *.
func withoutFormat(id string) (base, format string, ok bool) {
	parts := strings.Split(id, ".")
	for i, p := range parts {
		if p == "json" || p == "xml" {
			parts[i] = "*"
			return strings.Join(parts, "."), p, true
		}
	}
	return "", "", false
}

// writeFindings writes the findings before the failures they group.
func writeFindings(w io.Writer, fs []Finding) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "Findings (failures that share a cause): %d\n", len(fs))
	for i, f := range fs {
		if i == MaxListed {
			fmt.Fprintf(w, "  ... and %d more (see the reports)\n", len(fs)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n    %d checks: %s\n", f.Cause, len(f.Checks), strings.Join(f.Checks, ", "))
	}
}
