package load

import (
	"math/bits"
	"time"
)

// histogram counts latencies in log-linear buckets: exact below 128 ns,
// then 64 buckets per power of two, so any percentile it reports is within
// 1.6% of the true value. It is fixed-size (about 19 KB) however long the
// run, and each worker keeps its own, merged at the end, so recording is a
// few instructions and no lock.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

const (
	histSub     = 64 // buckets per power of two above 128 ns
	histBuckets = 2 * histSub * 19
)

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 7 // v>>shift is in [64, 128)
	i := shift*histSub + int(v>>shift)
	return min(i, histBuckets-1)
}

// bucketMid is the middle of a bucket's range.
func bucketMid(i int) time.Duration {
	if i < 2*histSub {
		return time.Duration(i)
	}
	shift := i/histSub - 1
	lo := uint64(i-shift*histSub) << shift
	return time.Duration(lo + (uint64(1)<<shift)/2)
}

func (h *histogram) record(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// percentile is the latency below which p (0 to 100) percent of the
// recorded ones fall; never above the maximum seen.
func (h *histogram) percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(p / 100 * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return min(bucketMid(i), h.max)
		}
	}
	return h.max
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}
