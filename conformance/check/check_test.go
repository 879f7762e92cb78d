package check

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// English puts "an" before a vowel exactly where the pattern
// \b([Aa]) ([AEIOUaeiou]) does, on made-up titles and random text.
func TestEnglishAsThePattern(t *testing.T) {
	article := regexp.MustCompile(`\b([Aa]) ([AEIOUaeiou])`)
	cases := []string{
		"", "a", "a ", "a A", "A update_name request", "a Appliance Module Plus is rejected",
		"a Light Dimmer", "Na Ab", "_a ab", "(a e)", "é a i", "a a a a", "data apple", "1a e",
	}
	cases = append(cases, randomTexts(rand.New(rand.NewPCG(1, 2)), "aAeEbB _1.(é")...)
	for _, s := range cases {
		if got, want := English(s), article.ReplaceAllString(s, "${1}n $2"); got != want {
			t.Fatalf("English(%q) = %q, want %q", s, got, want)
		}
	}
}

// Slug makes the word the pattern [^A-Za-z0-9_.:-]+ made, each run
// replaced by "-" and "-" trimmed, on the names the catalog has and on
// random text with letters of other scripts, a Kelvin sign that lowers to
// "k", and bytes that are not UTF-8.
func TestSlugAsThePattern(t *testing.T) {
	unsafe := regexp.MustCompile(`[^A-Za-z0-9_.:-]+`)
	cases := []string{
		"", "-", "--a--", "Light Dimmer", "Appliance Module Plus", "a - b", "a- b", "  x  ", "x.y:z_w",
		"Ünïcode Name", "\u212a", "\xff\xfeA", "effect", "gen:http-method",
	}
	cases = append(cases, randomTexts(rand.New(rand.NewPCG(3, 4)), "aZ9_.:- /é\u212aß&|!,()[]")...)
	for _, s := range cases {
		want := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
		if got := Slug(s); got != want {
			t.Fatalf("Slug(%q) = %q, want %q", s, got, want)
		}
	}
}

// randomTexts are 20,000 texts of up to 11 characters drawn from alphabet.
func randomTexts(r *rand.Rand, alphabet string) []string {
	runes := []rune(alphabet)
	out := make([]string, 20000)
	for i := range out {
		b := make([]rune, r.IntN(12))
		for j := range b {
			b[j] = runes[r.IntN(len(runes))]
		}
		out[i] = string(b)
	}
	return out
}
