package server

import (
	"errors"
	"fmt"
	"strings"
)

// MinAdminTokenLength is the shortest admin token gwsim takes: 32
// characters, as openssl rand -hex 16 writes.
const MinAdminTokenLength = 32

// placeholders are words of the tokens our own docs, manifests and
// examples show in place of a real one: a token holding one is known to
// whoever read them.
var placeholders = []string{"change-me", "changeme", "change_me", "replace-me", "replaceme", "your-token", "your_token",
	"placeholder", "example", "test-token", "xxxxxxxx"}

// CheckAdminToken refuses an admin token that anyone could know or guess:
// one holding a placeholder of our docs or manifests (such as
// change-me-to-a-long-random-token), shorter than MinAdminTokenLength, of
// fewer than 10 different characters, or holding a space or a control
// character. The error never repeats the token. An empty token (none) is
// not checked here.
func CheckAdminToken(token string) error {
	if token == "" {
		return nil
	}
	lower := strings.ToLower(token)
	for _, p := range placeholders {
		if strings.Contains(lower, p) {
			return fmt.Errorf("the admin token is a placeholder of gwsim's docs or manifests (it holds %q): make a real one, such as openssl rand -hex 16", p)
		}
	}
	if len(token) < MinAdminTokenLength {
		return fmt.Errorf("the admin token has %d characters; it needs at least %d (openssl rand -hex 16 makes one)", len(token), MinAdminTokenLength)
	}
	distinct := map[rune]bool{}
	for _, c := range token {
		if c <= ' ' || c == 0x7f {
			return errors.New("the admin token holds a space or a control character; it goes in an HTTP header: use letters, digits and punctuation")
		}
		distinct[c] = true
	}
	if len(distinct) < 10 {
		return fmt.Errorf("the admin token has only %d different characters: make a random one, such as openssl rand -hex 16", len(distinct))
	}
	return nil
}
