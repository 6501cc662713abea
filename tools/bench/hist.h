/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A log-linear latency histogram in the style of HdrHistogram, shared by
 * krpc-bench (userspace) and the krpc_bench module (kernel): values in
 * nanoseconds, 32 linear sub-buckets per power of two, so every recorded
 * value is known to within 1/32 (3.1 %) whatever its magnitude, in a fixed
 * 10 KiB of counters instead of one entry per sample.
 *
 * Bucket of v: shift = max(0, msb(v) - 5); index = shift * 32 + (v >> shift).
 * Indexes 0..63 hold 0..63 ns exactly; above, each power of two [2^e,
 * 2^(e+1)) is split into 32 equal buckets.  Values of 2^40 ns (18 min) and
 * more land in the last bucket.
 */
#ifndef KRPC_BENCH_HIST_H
#define KRPC_BENCH_HIST_H

#define KB_HIST_SUB_BITS	5
#define KB_HIST_SUB		(1U << KB_HIST_SUB_BITS)
#define KB_HIST_MAX_SHIFT	35
#define KB_HIST_BUCKETS		((KB_HIST_MAX_SHIFT + 2) * KB_HIST_SUB)

static inline unsigned int kb_hist_index(unsigned long long v)
{
	unsigned int msb, shift;

	if (v < 2 * KB_HIST_SUB)
		return (unsigned int)v;
	msb = 63 - __builtin_clzll(v);
	shift = msb - KB_HIST_SUB_BITS;
	if (shift > KB_HIST_MAX_SHIFT)
		return KB_HIST_BUCKETS - 1;
	return shift * KB_HIST_SUB + (unsigned int)(v >> shift);
}

/* Lowest value of bucket @idx. */
static inline unsigned long long kb_hist_low(unsigned int idx)
{
	unsigned int shift = idx < 2 * KB_HIST_SUB ? 0 : idx / KB_HIST_SUB - 1;

	return (unsigned long long)(idx - shift * KB_HIST_SUB) << shift;
}

/* Width of bucket @idx (1 for the exact ones). */
static inline unsigned long long kb_hist_width(unsigned int idx)
{
	return 1ULL << (idx < 2 * KB_HIST_SUB ? 0 : idx / KB_HIST_SUB - 1);
}

#endif /* KRPC_BENCH_HIST_H */
