package conformance

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// TestLevelsFollowTheSourceOfTheSentence walks the whole catalog: a check
// that quotes a sentence is MUST only when the sentence is the published
// interface's, or when the step of reasoning from a published sentence is
// written beside it; one that rests on the CONTRACT alone is SHOULD. Its
// assertion carries the quote and the inference, which the report and the
// failure text show.
func TestLevelsFollowTheSourceOfTheSentence(t *testing.T) {
	quoted, inferred := 0, 0
	for _, m := range Checks() {
		if m.Quote == "" {
			continue
		}
		quoted++
		if !strings.Contains(m.Assertion, m.Quote) {
			t.Errorf("%s: the assertion does not quote its sentence: %s", m.ID, m.Assertion)
		}
		if m.Level != check.Must {
			if m.Inference != "" {
				t.Errorf("%s: a %s carries an inference", m.ID, m.Level)
			}
			continue
		}
		if oracle.Texts(m.Quote) != "published" {
			if m.Inference == "" {
				t.Errorf("%s is MUST on the CONTRACT's sentence alone: “%s”", m.ID, m.Quote)
				continue
			}
			inferred++
		}
		if m.Inference != "" && !strings.Contains(m.Assertion, m.Inference) {
			t.Errorf("%s: the assertion does not carry its inference", m.ID)
		}
	}
	if quoted < 500 {
		t.Errorf("only %d checks quote a sentence", quoted)
	}
	// The near misses of a key that a service may read as the same key.
	for _, m := range Checks() {
		for _, id := range []string{"message.near-miss.api_key.other-case.json", "message.near-miss.api_key.leading-space.xml", "command.field-name.dimming.capitalized.json"} {
			if m.ID == id {
				t.Errorf("%s is %s: only the CONTRACT refuses it", id, m.Level)
			}
		}
		if m.ID == "message.near-miss.api_key.first-character-changed.json" && (m.Level != check.Must || m.Inference == "") {
			t.Errorf("%s: %s, inference %q; want MUST by inference", m.ID, m.Level, m.Inference)
		}
	}
}

// TestInferenceIsSaidOnceBesideItsQuote: a check's title names what is
// sent, nothing more; the inference a MUST rests on is said once, in the
// assertion beside its quote, so that sixteen sign positions do not each
// repeat it in their titles and failure lines.
func TestInferenceIsSaidOnceBesideItsQuote(t *testing.T) {
	seen := map[string]int{}
	for _, m := range Checks() {
		if strings.Contains(strings.ToLower(m.Title), "inference") {
			t.Errorf("%s: the title carries an inference: %s", m.ID, m.Title)
		}
		if m.Inference != "" {
			if n := strings.Count(m.Assertion, m.Inference); n != 1 {
				t.Errorf("%s: the assertion says its inference %d times: %s", m.ID, n, m.Assertion)
			}
		}
		for _, fam := range []string{".sign.position-", ".near-miss.myservice_id.position-"} {
			if strings.Contains(m.ID, fam) && m.Level == check.Must {
				seen[fam]++
				if m.Inference == "" {
					t.Errorf("%s: MUST without the inference it rests on", m.ID)
				}
			}
		}
	}
	for _, fam := range []string{".sign.position-", ".near-miss.myservice_id.position-"} {
		if seen[fam] < 20 {
			t.Errorf("only %d MUST checks of the %s family", seen[fam], fam)
		}
	}
}
