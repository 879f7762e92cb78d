package catalog

import (
	"strings"
	"testing"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// TestDrawnValuesAreValid draws from every generator for 10,000 seeds: every
// value is one the harness's own rules accept at the MUST level, and the
// generators draw (the fallback is rare), so the checks that send them
// never blame a target for refusing a value the harness should not have
// sent.
func TestDrawnValuesAreValid(t *testing.T) {
	const seeds = 10000
	type gen struct {
		name     string
		draw     func(*gofakeit.Faker) string
		valid    func(string) bool
		fallback string
	}
	var gens []gen
	for _, typ := range oracle.Types {
		for i := range typ.Fields {
			f := &typ.Fields[i]
			if f.Kind == oracle.Integer && f.Max-f.Min > 4 || f.Kind == oracle.Decimal {
				gens = append(gens, gen{typ.Name + "." + f.Name, func(fk *gofakeit.Faker) string { return drawNumber(fk, f) },
					func(v string) bool { return validFieldValue(f, v) }, f.Example})
			}
		}
	}
	gens = append(gens,
		gen{"message_value", drawMessageValue, validMessageValue, oracle.MessageValue.Example},
		gen{"name", drawName, validName, oracle.Name.Example})
	for _, g := range gens {
		fallbacks, distinct := 0, map[string]bool{}
		for seed := int64(1); seed <= seeds; seed++ {
			e := &Bench{Seed: seed}
			v := g.draw(e.Faker("message.message_value.drawn"))
			if !g.valid(v) {
				t.Fatalf("%s: seed %d drew %q, which the oracle refuses", g.name, seed, v)
			}
			if v == g.fallback {
				fallbacks++
			}
			distinct[v] = true
		}
		if fallbacks > seeds/100 {
			t.Errorf("%s: %d of %d seeds fell back to %q: the generator draws mostly invalid values", g.name, fallbacks, seeds, g.fallback)
		}
		if len(distinct) < 50 {
			t.Errorf("%s: only %d distinct values in %d seeds", g.name, len(distinct), seeds)
		}
	}
}

// TestDrawnMessageValueSeed1795380519 is the seed that drew "trench
// coat_level=301", a setting name with a space, and blamed the target for
// refusing it.
func TestDrawnMessageValueSeed1795380519(t *testing.T) {
	e := &Bench{Seed: 1795380519}
	v := drawMessageValue(e.Faker("message.message_value.drawn"))
	if strings.Contains(v, " ") || !validMessageValue(v) {
		t.Fatalf("drew %q", v)
	}
	if !strings.HasPrefix(v, "trench_coat_level=") {
		t.Logf("seed 1795380519 now draws %q", v)
	}
	if validMessageValue("trench coat_level=301") {
		t.Fatal("the oracle accepts a setting name with a space")
	}
}
