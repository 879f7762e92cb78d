package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in HDR histograms (HdrHistogram) of microseconds
// from 1 µs to one hour with two significant digits: every value a
// histogram reports is within 1% of a value recorded, and a histogram
// merged from others is exactly the one recording all their values would
// have made, so shards' percentiles combine without loss. Larger latencies
// count as one hour.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 2
	// HistogramPrecision is the relative error of a percentile read from a
	// Histogram: two significant digits.
	HistogramPrecision = 0.01
)

// Histogram is a latency distribution: an HDR histogram kept sparse (its
// memory grows with the distinct latencies seen, not the range), written
// in JSON as the HdrHistogram V2 compressed encoding in base64, which
// HdrHistogram's tools in other languages read too. The zero value is an
// empty histogram ready to use.
type Histogram struct {
	h *hdrhistogram.PackedHistogram
}

func newDenseHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

func (h *Histogram) init() {
	if h.h == nil {
		h.h = hdrhistogram.NewPacked(histLowest, histHighest, histDigits)
	}
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	h.init()
	h.h.RecordValue(toMicros(d))
}

func toMicros(d time.Duration) int64 {
	return min(max(int64(d/time.Microsecond), histLowest), histHighest)
}

// addDense adds a dense histogram's counts (a worker's) to h.
func (h *Histogram) addDense(d *hdrhistogram.Histogram) {
	if d.TotalCount() == 0 {
		return
	}
	h.init()
	h.h.MergeFrom(d)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.h == nil || o.h.TotalCount() == 0 {
		return
	}
	h.init()
	h.h.Merge(o.h)
}

// Count is the number of latencies recorded.
func (h *Histogram) Count() int64 {
	if h == nil || h.h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// Percentile is the latency at or below which p (0 to 100) percent of
// those recorded fall, within HistogramPrecision; 0 when empty.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtPercentile(p)) * time.Microsecond
}

// Max is the largest latency recorded, within HistogramPrecision.
func (h *Histogram) Max() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Max()) * time.Microsecond
}

// Mean is the mean latency, within HistogramPrecision.
func (h *Histogram) Mean() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Latency is the histogram's summary.
func (h *Histogram) Latency() Latency {
	return Latency{P50: h.Percentile(50), P90: h.Percentile(90), P99: h.Percentile(99), Max: h.Max(), Mean: h.Mean()}
}

// MarshalJSON writes the V2 compressed encoding, base64; "" when empty.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	if h.Count() == 0 {
		return []byte(`""`), nil
	}
	b, err := h.h.Encode()
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON reads what MarshalJSON wrote; a histogram of another
// range or precision is refused, since it would not merge exactly.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	h.h = nil
	if s == "" {
		return nil
	}
	p, err := hdrhistogram.DecodePacked([]byte(s))
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if p.LowestTrackableValue() != histLowest || p.HighestTrackableValue() != histHighest || p.SignificantFigures() != histDigits {
		return errors.New("histogram: not gwconform load's (microseconds from 1 to 3.6e9, two significant digits)")
	}
	h.h = p
	return nil
}
