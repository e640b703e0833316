/* hist_math.h - log-linear histogram bucket math shared by the BPF programs and the daemon */
#ifndef IOPULSE_HIST_MATH_H
#define IOPULSE_HIST_MATH_H

/*
 * Layout (HdrHistogram-style, precision k):
 *   values v < 2^k          -> bucket v                    (exact)
 *   2^p <= v < 2^(p+1), p>=k -> bucket ((p - k + 1) << k) + ((v >> (p - k)) & (2^k - 1))
 *   values v >= 2^IOP_HIST_RANGE_BITS are clamped into the last bucket.
 * Bucket count: (IOP_HIST_RANGE_BITS - k + 1) << k.
 * Every bucket at or above 2^k is 2^(p-k) wide and starts at >= 2^p, so reporting the
 * bucket midpoint is off by at most 2^-(k+1) of the true value (k=5: 1.5625%).
 *
 * This header is included by C99 user space and by BPF C; it uses no libc and no loops
 * that the verifier could not bound.
 */

#define IOP_HIST_RANGE_BITS 40 /* 2^40 ns = 18.3 min, 2^40 bytes, 2^40 sectors = 512 TiB */
#define IOP_HIST_K_MIN 2
#define IOP_HIST_K_MAX 7
#define IOP_HIST_K_DEFAULT 5

#define IOP_HIST_NBUCKETS(k) (((unsigned int)IOP_HIST_RANGE_BITS - (k) + 1) << (k))
#define IOP_HIST_NBUCKETS_MAX IOP_HIST_NBUCKETS(IOP_HIST_K_MAX)

/* Index of the most significant set bit of a non-zero value (0..63). */
static inline unsigned int iop_msb64(unsigned long long v)
{
	unsigned int r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static inline unsigned int iop_hist_index(unsigned long long v, unsigned int k)
{
	unsigned int p;

	if (v >= (1ULL << IOP_HIST_RANGE_BITS))
		return IOP_HIST_NBUCKETS(k) - 1;
	if (v < (1ULL << k))
		return (unsigned int)v;
	p = iop_msb64(v);
	return ((p - k + 1) << k) + (unsigned int)((v >> (p - k)) & ((1ULL << k) - 1));
}

/* Smallest value that falls into bucket idx. */
static inline unsigned long long iop_hist_lower(unsigned int idx, unsigned int k)
{
	unsigned int group = idx >> k;
	unsigned long long sub = idx & ((1U << k) - 1);

	if (group == 0)
		return sub;
	return ((1ULL << k) | sub) << (group - 1);
}

/* Largest value that falls into bucket idx (the last bucket is open-ended above). */
static inline unsigned long long iop_hist_upper(unsigned int idx, unsigned int k)
{
	unsigned int group = idx >> k;

	if (group == 0)
		return idx;
	return iop_hist_lower(idx, k) + (1ULL << (group - 1)) - 1;
}

#endif
