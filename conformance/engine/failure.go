package engine

import (
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2"
)

// failInWords is the suite's Gomega fail handler: it passes Ginkgo the
// failure in words ("expected 400, got 200") instead of Gomega's matcher
// text ("Expected\n    <int>: 200\nto equal\n    <int>: 400").
func failInWords(message string, callerSkip ...int) {
	skip := 1
	if len(callerSkip) > 0 {
		skip += callerSkip[0]
	}
	ginkgo.Fail(InWords(message), skip)
}

var (
	typed   = regexp.MustCompile(`(?m)^\s*<[^>]*>: ?`)
	matcher = regexp.MustCompile(`(?s)^Expected\n(.*?)\n(to (?:not )?[a-z][a-z ]*?)\n(.*)$`)
	unary   = regexp.MustCompile(`(?s)^Expected\n(.*?)\n(to (?:not )?(?:be (?:true|false|nil|empty|zero)|have occurred|succeed))$`)
)

// InWords rewrites a Gomega failure message as a sentence: the
// explanation the check gave, then what was expected and what came.
func InWords(message string) string {
	i := strings.Index(message, "Expected\n")
	if i < 0 {
		return message
	}
	prefix, rest := strings.TrimSpace(message[:i]), message[i:]
	clean := func(s string) string {
		return strings.Join(strings.Fields(typed.ReplaceAllString(s, "")), " ")
	}
	var words string
	if m := unary.FindStringSubmatch(rest); m != nil {
		// BeTrue, BeFalse...: the check's own explanation says it all.
		if prefix != "" {
			return prefix
		}
		words = "expected " + clean(m[1]) + " " + m[2]
	} else if m := matcher.FindStringSubmatch(rest); m != nil {
		want, got, how := clean(m[3]), clean(m[1]), strings.TrimPrefix(m[2], "to ")
		switch how {
		case "equal":
			words = "expected " + want + ", got " + got
		case "contain element matching":
			words = "expected one of " + got + ", got " + want
		default:
			words = "expected something to " + how + " " + want + ", got " + got
		}
	} else {
		words = clean(rest)
	}
	if prefix == "" {
		return words
	}
	return prefix + ": " + words
}
