package conformance

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Values drawn from the run's seed. Each generator draws a candidate and
// hands it to the domain's own validation (package device) before a case
// uses it as a valid value: a candidate the domain refuses is drawn again,
// and after maxDraws refusals the field's published example is used. The
// generator and the validator thus agree by construction, whatever the seed
// (TestDrawnValuesAreValid draws from every generator for 10,000 seeds).

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

// validFieldValue reports whether the domain accepts v for field f.
func validFieldValue(f *device.Field, v string) bool {
	_, err := f.Parse(0, device.Str(v))
	return err == nil
}

// drawInteger draws an integer strictly inside f's range.
func drawInteger(fk *gofakeit.Faker, f *device.Field) string {
	lo, hi := int(f.Min), int(f.Max)
	return drawValid(func() string { return strconv.Itoa(fk.Number(lo+1, hi-1)) },
		func(v string) bool { return validFieldValue(f, v) }, f.Example)
}

// drawDecimal draws a decimal with one fractional digit inside f's range.
func drawDecimal(fk *gofakeit.Faker, f *device.Field) string {
	lo, hi := int(f.Min), int(f.Max)
	return drawValid(func() string { return fmt.Sprintf("%d.%d", fk.Number(lo, hi-1), fk.Number(1, 9)) },
		func(v string) bool { return validFieldValue(f, v) }, f.Example)
}

var notSettingChar = regexp.MustCompile(`[^a-z0-9_]+`)

// drawMessageValue draws a <setting_name>=<number> message value from a
// noun ("trench coat" becomes "trench_coat").
func drawMessageValue(fk *gofakeit.Faker) string {
	return drawValid(func() string {
		name := strings.Trim(notSettingChar.ReplaceAllString(strings.ToLower(fk.Noun()), "_"), "_")
		return fmt.Sprintf("%s_level=%d", name, fk.Number(0, 1000))
	}, validMessageValue, "brightness=80")
}

// validMessageValue reports whether the domain accepts v as a message_value,
// by parsing a whole send message request that carries it.
func validMessageValue(v string) bool {
	_, err := device.Parse(device.SendMessage, device.JSON, append(validEnvelope(),
		device.Pair{Key: device.FieldMessageType, Value: device.Str("message")},
		device.Pair{Key: device.FieldMessageValue, Value: device.Str(v)}))
	return err == nil
}

// drawName draws a device name such as "Ana's Lamp".
func drawName(fk *gofakeit.Faker) string {
	return drawValid(func() string {
		return fk.FirstName() + "'s " + fk.RandomString([]string{"Lamp", "Heater", "Fan", "Light"})
	}, validName, "Conformance Check")
}

// validName reports whether the domain accepts v as a device name, by
// parsing a whole update_name request that carries it.
func validName(v string) bool {
	_, err := device.Parse(device.UpdateName, device.JSON, append(validEnvelope(),
		device.Pair{Key: device.FieldSN, Value: device.Str(strings.Repeat("a", 32))},
		device.Pair{Key: device.FieldName, Value: device.Str(v)}))
	return err == nil
}

// validEnvelope is a well-formed envelope (its credentials are not checked
// by parsing).
func validEnvelope() []device.Pair {
	return []device.Pair{
		{Key: device.FieldAPIKey, Value: device.Str("k")},
		{Key: device.FieldTimestamp, Value: device.Str("20260101120000")},
		{Key: device.FieldSign, Value: device.Str(strings.Repeat("0", 32))},
		{Key: device.FieldAccount, Value: device.Str(strings.Repeat("0", 24))},
		{Key: device.FieldMAC, Value: device.Str(strings.Repeat("0", 12))},
	}
}
