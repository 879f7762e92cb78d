package bench

import "context"

// Section is one part of a benchmark run: what it measures into the
// Report, the goals it holds the figures to, and its part of
// docs/benchmarks.md. Sections() lists them in the order they run and are
// written; a new measurement is a new Section (its figures in fields of
// its own or in Report.Extra under its name) added to that list.
type Section struct {
	Name string
	// Measure runs the measurements; nil for a section that only writes.
	Measure func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error
	// Goals are the section's rows of the goals table; nil for none.
	Goals func(r *Report) []Goal
	// Write writes the section's Markdown; it writes nothing when the
	// section measured nothing.
	Write func(r *Report, p func(string, ...any))
}

// Section names that options refer to.
const (
	SectionLoad    = "load: gwsim against a bare net/http handler"
	SectionMemory  = "fleets: memory, RSS and start-up"
	SectionSuite   = "the conformance suite, serial and parallel"
	SectionGoBench = "Go benchmarks and profiles"
)

// Sections are the parts of a run, in order.
func Sections() []Section {
	return []Section{
		{Name: SectionLoad, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
			return r.loadComparison(ctx, o, logf)
		}, Goals: (*Report).loadGoals, Write: (*Report).writeLoad},
		{Name: SectionMemory, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
			return r.measureFleets(ctx, o, logf)
		}, Goals: (*Report).memoryGoals, Write: (*Report).writeFleets},
		{Name: SectionSuite, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
			if err := r.suite(ctx, o); err != nil {
				return err
			}
			if err := r.measureReportSizes(ctx, o); err != nil {
				return err
			}
			return r.measureHarness(ctx, o, logf)
		}, Goals: (*Report).suiteGoals, Write: (*Report).writeSuite},
		networkSection(),
		redisSection(),
		clientReportSection(),
		metricsSection(),
		controlSection(),
		exploreSection(),
		diffSection(),
		{Name: SectionGoBench, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
			return r.goBenchmarks(ctx, o)
		}, Write: func(r *Report, p func(string, ...any)) {
			r.writeGoBench(p)
			r.writeProfiles(p)
		}},
	}
}
