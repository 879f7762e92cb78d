package catalog

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Values drawn from the run's seed. Each generator draws a candidate and
// hands it to the harness's own rule table (package oracle, written from
// the two texts, never the simulator's validation) before a case uses it
// as a valid value: a candidate the oracle does not call valid at the
// MUST level is drawn again, and after maxDraws refusals the field's
// published example is used (TestDrawnValuesAreValid draws from every
// generator for 10,000 seeds).

// maxDraws bounds the redraws of one value.
const maxDraws = 32

// drawValid draws with draw until valid accepts, or returns fallback.
func drawValid(draw func() string, valid func(string) bool, fallback string) string {
	for i := 0; i < maxDraws; i++ {
		if v := draw(); valid(v) {
			return v
		}
	}
	return fallback
}

// validFieldValue reports whether the oracle calls v a valid value of f
// that MUST be accepted.
func validFieldValue(f *oracle.Field, v string) bool {
	j := f.Judge(device.XML, oracle.Str(v))
	return j.OK && j.Must && !j.Open
}

// drawNumber draws a number of an Integer or Decimal field strictly inside
// its range, in its plain form.
func drawNumber(fk *gofakeit.Faker, f *oracle.Field) string {
	return drawValid(func() string { return f.Draw(fk.Rand) },
		func(v string) bool { return validFieldValue(f, v) }, f.Example)
}

var notSettingChar = regexp.MustCompile(`[^a-z0-9_]+`)

// drawMessageValue draws a <setting_name>=<number> message value from a
// noun ("trench coat" becomes "trench_coat").
func drawMessageValue(fk *gofakeit.Faker) string {
	return drawValid(func() string {
		name := strings.Trim(notSettingChar.ReplaceAllString(strings.ToLower(fk.Noun()), "_"), "_")
		return fmt.Sprintf("%s_level=%d", name, fk.Number(0, 1000))
	}, validMessageValue, oracle.MessageValue.Example)
}

// validMessageValue reports whether the oracle calls v a message_value
// that MUST be accepted.
func validMessageValue(v string) bool { return validFieldValue(&oracle.MessageValue, v) }

// drawName draws a device name such as "Ana's Lamp".
func drawName(fk *gofakeit.Faker) string {
	return drawValid(func() string {
		return fk.FirstName() + "'s " + fk.RandomString([]string{"Lamp", "Heater", "Fan", "Light"})
	}, validName, oracle.Name.Example)
}

// validName reports whether the oracle calls v a name that MUST be
// accepted.
func validName(v string) bool { return validFieldValue(&oracle.Name, v) }
