/* maps.bpf.h - small map helpers for the BPF programs */
#ifndef IOPULSE_MAPS_BPF_H
#define IOPULSE_MAPS_BPF_H

#include <bpf/bpf_helpers.h>

/* Look up key; if absent insert init (BPF_NOEXIST, a racing insert wins) and look up again. */
static __always_inline void *iop_lookup_or_init(void *map, const void *key, const void *init)
{
	void *val = bpf_map_lookup_elem(map, key);

	if (val)
		return val;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

#endif
