/* update_pb.c - builds, filters and merges iopulse.v1.Update messages (protobuf-c) */
#include "update_pb.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "devices.h"

bool update_filter_empty(const struct update_filter *f)
{
	return !f || (!f->ndevices && !f->nthreads);
}

static bool device_wanted(const struct update_filter *f, const char *name)
{
	size_t i;

	if (!f || !f->ndevices)
		return true;
	for (i = 0; i < f->ndevices; i++)
		if (strcmp(f->devices[i], name) == 0)
			return true;
	return false;
}

static bool thread_wanted(const struct update_filter *f, const char *comm)
{
	size_t i;

	if (!f || !f->nthreads)
		return true;
	for (i = 0; i < f->nthreads; i++)
		if (fnmatch(f->threads[i], comm, 0) == 0)
			return true;
	return false;
}

char **pb_split_list(const char *s, size_t *n)
{
	char **v = NULL, *copy, *tok, *save = NULL;

	*n = 0;
	if (!s || !*s)
		return NULL;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **g = realloc(v, (*n + 1) * sizeof(*v));

		if (!g)
			break;
		v = g;
		v[*n] = strdup(tok);
		if (v[*n])
			(*n)++;
	}
	free(copy);
	return v;
}

uint8_t *pb_pack_alloc(const ProtobufCMessage *m, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return NULL;
	*len = protobuf_c_message_pack(m, buf);
	return buf;
}

/* Deep copy of any message (pack, unpack: every part malloc'd on its own). */
static void *pb_dup(const ProtobufCMessage *m)
{
	size_t len;
	uint8_t *buf = pb_pack_alloc(m, &len);
	ProtobufCMessage *c;

	if (!buf)
		return NULL;
	c = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return c;
}

void update_free(pb_update *u)
{
	if (u)
		iopulse__v1__update__free_unpacked(u, NULL);
}

/* ------------------------------------------------------------ from interval -- */

static char *dupn(const char *s, size_t max)
{
	return strndup(s ? s : "", max);
}

static Iopulse__V1__Histogram *hist_from_view(const struct iop_hist_view *v)
{
	Iopulse__V1__Histogram *h;
	size_t n = 0, i;

	if (v->counts) {
		for (i = 0; i < v->nbuckets; i++)
			n += v->counts[i] != 0;
	} else {
		n = v->nsparse;
	}
	if (!n)
		return NULL;   /* empty histograms travel as absent */
	h = malloc(sizeof(*h));
	if (!h)
		return NULL;
	iopulse__v1__histogram__init(h);
	h->precision = v->k;
	h->index = malloc(n * sizeof(*h->index));
	h->count = malloc(n * sizeof(*h->count));
	if (!h->index || !h->count) {
		iopulse__v1__histogram__free_unpacked(h, NULL);
		return NULL;
	}
	h->n_index = h->n_count = n;
	if (v->counts) {
		for (i = 0, n = 0; i < v->nbuckets; i++) {
			if (v->counts[i]) {
				h->index[n] = (uint32_t)i;
				h->count[n++] = v->counts[i];
			}
		}
	} else {
		memcpy(h->index, v->idx, n * sizeof(*h->index));
		memcpy(h->count, v->cnt, n * sizeof(*h->count));
	}
	return h;
}

static bool view_empty(const struct iop_hist_view *v)
{
	size_t i;

	if (!v->counts)
		return v->nsparse == 0;
	for (i = 0; i < v->nbuckets; i++)
		if (v->counts[i])
			return false;
	return true;
}

/* A histogram that should be there but could not be allocated: -ENOMEM. */
static int set_hist(Iopulse__V1__Histogram **dst, const struct iop_hist_view *v)
{
	*dst = hist_from_view(v);
	return (!*dst && !view_empty(v)) ? -ENOMEM : 0;
}

static Iopulse__V1__OpStats *op_from_interval(const struct iop_dev_interval *d, int op)
{
	Iopulse__V1__OpStats *o = malloc(sizeof(*o));
	int r = 0;

	if (!o)
		return NULL;
	iopulse__v1__op_stats__init(o);
	o->ios = d->cnt[IOP_C_IOS + op];
	o->bytes = d->cnt[IOP_C_BYTES + op];
	o->errors = d->cnt[IOP_C_ERRORS + op];
	o->untimed = d->cnt[IOP_C_UNTIMED + op];
	o->no_queue_ts = d->cnt[IOP_C_NOQUEUE + op];
	o->completion_unseen = d->cnt[IOP_C_UNSEEN + op];
	r = r ?: set_hist(&o->queue_wait_ns, &d->hist[IOP_H_QUEUE + op]);
	r = r ?: set_hist(&o->service_ns, &d->hist[IOP_H_SERVICE + op]);
	r = r ?: set_hist(&o->total_ns, &d->hist[IOP_H_TOTAL + op]);
	r = r ?: set_hist(&o->size_bytes, &d->hist[IOP_H_SIZE + op]);
	if (r) {
		iopulse__v1__op_stats__free_unpacked(o, NULL);
		return NULL;
	}
	return o;
}

static Iopulse__V1__DeviceStats *dev_from_interval(const struct iop_dev_interval *d)
{
	Iopulse__V1__DeviceStats *s = malloc(sizeof(*s));
	const struct iop_device *in = d->info;
	int r = 0;

	if (!s)
		return NULL;
	iopulse__v1__device_stats__init(s);
	s->name = dupn(in->name, sizeof(in->name));
	s->osd_role = dupn(in->osd_id >= 0 ? in->osd_role : "", sizeof(in->osd_role));
	s->major = major(in->dev);
	s->minor = minor(in->dev);
	s->osd_id = in->osd_id;
	s->holders = pb_split_list(in->holders, &s->n_holders);
	s->read = op_from_interval(d, IOP_OP_READ);
	s->write = op_from_interval(d, IOP_OP_WRITE);
	s->flush = op_from_interval(d, IOP_OP_FLUSH);
	s->discard = op_from_interval(d, IOP_OP_DISCARD);
	s->seek_sequential = d->cnt[IOP_C_SEQ];
	s->seek_forward = d->cnt[IOP_C_FWD];
	s->seek_backward = d->cnt[IOP_C_BWD];
	s->preflush = d->cnt[IOP_C_PREFLUSH];
	s->fua = d->cnt[IOP_C_FUA];
	s->requeues = d->cnt[IOP_C_REQUEUE];
	r = r ?: set_hist(&s->seek_distance_sectors, &d->hist[IOP_H_SEEK]);
	r = r ?: set_hist(&s->preflush_latency_ns, &d->hist[IOP_H_PREFLUSH_LAT]);
	r = r ?: set_hist(&s->fua_latency_ns, &d->hist[IOP_H_FUA_LAT]);
	if (r || !s->name || !s->osd_role || !s->read || !s->write || !s->flush || !s->discard) {
		iopulse__v1__device_stats__free_unpacked(s, NULL);
		return NULL;
	}
	return s;
}

static Iopulse__V1__SyncLatency *sync_latency(uint64_t sum_ns, const struct iop_hist_view *v)
{
	Iopulse__V1__SyncLatency *l = malloc(sizeof(*l));

	if (!l)
		return NULL;
	iopulse__v1__sync_latency__init(l);
	l->sum_ns = sum_ns;
	if (set_hist(&l->histogram_ns, v)) {
		free(l);
		return NULL;
	}
	return l;
}

static Iopulse__V1__ThreadSync *thread_from_interval(const struct iop_thread_interval *t)
{
	Iopulse__V1__ThreadSync *s = malloc(sizeof(*s));

	if (!s)
		return NULL;
	iopulse__v1__thread_sync__init(s);
	s->pid = t->tgid;
	s->tid = t->tid;
	s->comm = dupn(t->comm, sizeof(t->comm));
	s->process = dupn(t->process, sizeof(t->process));
	s->device = t->device ? dupn(t->device->name, sizeof(t->device->name)) : strdup("");
	s->disks = t->device ? pb_split_list(t->device->disks, &s->n_disks) : NULL;
	s->osd_id = t->osd_id;
	s->dev_major = major(t->dev);
	s->dev_minor = minor(t->dev);
	s->fsync = t->calls[IOP_SYNC_FSYNC];
	s->fdatasync = t->calls[IOP_SYNC_FDATASYNC];
	s->sync_file_range = t->calls[IOP_SYNC_RANGE];
	s->flush_bios = t->flush_bios;
	s->latency_sum_ns = t->lat_sum_ns;
	s->fsync_latency = sync_latency(t->kind_lat_sum_ns[IOP_SYNC_FSYNC],
					&t->kind_lat[IOP_SYNC_FSYNC]);
	s->fdatasync_latency = sync_latency(t->kind_lat_sum_ns[IOP_SYNC_FDATASYNC],
					    &t->kind_lat[IOP_SYNC_FDATASYNC]);
	s->sync_file_range_latency = sync_latency(t->kind_lat_sum_ns[IOP_SYNC_RANGE],
						  &t->kind_lat[IOP_SYNC_RANGE]);
	if (set_hist(&s->latency_ns, &t->lat) || !s->comm || !s->process || !s->device ||
	    !s->fsync_latency || !s->fdatasync_latency || !s->sync_file_range_latency) {
		iopulse__v1__thread_sync__free_unpacked(s, NULL);
		return NULL;
	}
	return s;
}

pb_update *update_from_interval(const struct iop_interval *iv)
{
	pb_update *u = malloc(sizeof(*u));
	size_t i;

	if (!u)
		return NULL;
	iopulse__v1__update__init(u);
	u->seq = u->first_seq = iv->seq;
	u->merged = 1;
	u->precision = iv->hist_k;
	u->start_realtime_ns = iv->start_realtime_ns;
	u->end_realtime_ns = iv->end_realtime_ns;
	u->start_monotonic_ns = iv->start_mono_ns;
	u->end_monotonic_ns = iv->end_mono_ns;
	u->drops = malloc(sizeof(*u->drops));
	u->devices = calloc(iv->ndevs ? iv->ndevs : 1, sizeof(*u->devices));
	u->threads = calloc(iv->nthreads ? iv->nthreads : 1, sizeof(*u->threads));
	if (!u->drops || !u->devices || !u->threads)
		goto fail;
	iopulse__v1__drops__init(u->drops);
	u->drops->no_slot = iv->global[IOP_G_NO_SLOT];
	u->drops->inflight_full = iv->global[IOP_G_INFLIGHT_FULL];
	u->drops->sync_full = iv->global[IOP_G_SYNC_FULL];
	u->drops->sync_evicted = iv->sync_evictions;
	u->drops->no_bio_ts = iv->global[IOP_G_NO_BIO_TS];
	u->drops->bio_evicted = iv->global[IOP_G_BIO_EVICT];
	u->drops->completed_at_accounting = iv->global[IOP_G_AT_ACCOUNTING];
	for (i = 0; i < iv->nprogs; i++)
		u->drops->program_skips += iv->progs[i].missed;
	for (i = 0; i < iv->ndevs; i++) {
		u->devices[i] = dev_from_interval(&iv->devs[i]);
		if (!u->devices[i])
			goto fail;
		u->n_devices++;
	}
	for (i = 0; i < iv->nthreads; i++) {
		u->threads[i] = thread_from_interval(&iv->threads[i]);
		if (!u->threads[i])
			goto fail;
		u->n_threads++;
	}
	return u;
fail:
	update_free(u);
	return NULL;
}

/* ------------------------------------------------------------------- merging -- */

/* acc += src, both sparse with rising indexes. */
static int hist_add(Iopulse__V1__Histogram **accp, const Iopulse__V1__Histogram *src)
{
	Iopulse__V1__Histogram *acc = *accp;
	size_t i = 0, j = 0, n = 0, cap;
	uint32_t *idx;
	uint64_t *cnt;

	if (!src || !src->n_index)
		return 0;
	if (!acc) {
		*accp = pb_dup(&src->base);
		return *accp ? 0 : -ENOMEM;
	}
	cap = acc->n_index + src->n_index;
	idx = malloc(cap * sizeof(*idx));
	cnt = malloc(cap * sizeof(*cnt));
	if (!idx || !cnt) {
		free(idx);
		free(cnt);
		return -ENOMEM;
	}
	while (i < acc->n_index || j < src->n_index) {
		if (j >= src->n_index || (i < acc->n_index && acc->index[i] < src->index[j])) {
			idx[n] = acc->index[i];
			cnt[n++] = acc->count[i++];
		} else if (i >= acc->n_index || src->index[j] < acc->index[i]) {
			idx[n] = src->index[j];
			cnt[n++] = src->count[j++];
		} else {
			idx[n] = acc->index[i];
			cnt[n++] = acc->count[i++] + src->count[j++];
		}
	}
	free(acc->index);
	free(acc->count);
	acc->index = idx;
	acc->count = cnt;
	acc->n_index = acc->n_count = n;
	return 0;
}

static int op_add(Iopulse__V1__OpStats **accp, const Iopulse__V1__OpStats *s)
{
	Iopulse__V1__OpStats *a = *accp;
	int r = 0;

	if (!s)
		return 0;
	if (!a) {
		*accp = pb_dup(&s->base);
		return *accp ? 0 : -ENOMEM;
	}
	a->ios += s->ios;
	a->bytes += s->bytes;
	a->errors += s->errors;
	a->untimed += s->untimed;
	a->no_queue_ts += s->no_queue_ts;
	a->completion_unseen += s->completion_unseen;
	r = r ?: hist_add(&a->queue_wait_ns, s->queue_wait_ns);
	r = r ?: hist_add(&a->service_ns, s->service_ns);
	r = r ?: hist_add(&a->total_ns, s->total_ns);
	r = r ?: hist_add(&a->size_bytes, s->size_bytes);
	return r;
}

static int dev_add(Iopulse__V1__DeviceStats *a, const Iopulse__V1__DeviceStats *s)
{
	int r = 0;

	r = r ?: op_add(&a->read, s->read);
	r = r ?: op_add(&a->write, s->write);
	r = r ?: op_add(&a->flush, s->flush);
	r = r ?: op_add(&a->discard, s->discard);
	a->seek_sequential += s->seek_sequential;
	a->seek_forward += s->seek_forward;
	a->seek_backward += s->seek_backward;
	a->preflush += s->preflush;
	a->fua += s->fua;
	a->requeues += s->requeues;
	r = r ?: hist_add(&a->seek_distance_sectors, s->seek_distance_sectors);
	r = r ?: hist_add(&a->preflush_latency_ns, s->preflush_latency_ns);
	r = r ?: hist_add(&a->fua_latency_ns, s->fua_latency_ns);
	/* labels follow the latest interval (an OSD can be created while we run) */
	a->osd_id = s->osd_id;
	return r;
}

/* Both come from this daemon's own updates, which always set them. */
static int sync_latency_add(Iopulse__V1__SyncLatency *a, const Iopulse__V1__SyncLatency *s)
{
	if (!a || !s)
		return 0;
	a->sum_ns += s->sum_ns;
	return hist_add(&a->histogram_ns, s->histogram_ns);
}

int update_thread_add(Iopulse__V1__ThreadSync *a, const Iopulse__V1__ThreadSync *s)
{
	a->fsync += s->fsync;
	a->fdatasync += s->fdatasync;
	a->sync_file_range += s->sync_file_range;
	a->flush_bios += s->flush_bios;
	a->latency_sum_ns += s->latency_sum_ns;
	a->osd_id = s->osd_id;
	return hist_add(&a->latency_ns, s->latency_ns) ?:
	       sync_latency_add(a->fsync_latency, s->fsync_latency) ?:
	       sync_latency_add(a->fdatasync_latency, s->fdatasync_latency) ?:
	       sync_latency_add(a->sync_file_range_latency, s->sync_file_range_latency);
}

/* Appends a copy of m to the malloc'd array *arr of *n pointers. */
static int append_dup(void ***arr, size_t *n, const ProtobufCMessage *m)
{
	void **grown = realloc(*arr, (*n + 1) * sizeof(void *));
	void *c;

	if (!grown)
		return -ENOMEM;
	*arr = grown;
	c = pb_dup(m);
	if (!c)
		return -ENOMEM;
	grown[(*n)++] = c;
	return 0;
}

int update_merge_into(pb_update *acc, const pb_update *src, const struct update_filter *f)
{
	size_t i, j;
	int r;

	if (acc->merged && src->merged && acc->precision != src->precision)
		return -EXDEV;   /* histograms of two layouts do not add up */
	for (i = 0; i < src->n_devices; i++) {
		const Iopulse__V1__DeviceStats *s = src->devices[i];

		if (!device_wanted(f, s->name))
			continue;
		for (j = 0; j < acc->n_devices; j++)
			if (acc->devices[j]->major == s->major && acc->devices[j]->minor == s->minor)
				break;
		r = j < acc->n_devices ? dev_add(acc->devices[j], s) :
			append_dup((void ***)&acc->devices, &acc->n_devices, &s->base);
		if (r)
			return r;
	}
	for (i = 0; i < src->n_threads; i++) {
		const Iopulse__V1__ThreadSync *s = src->threads[i];

		if (!thread_wanted(f, s->comm))
			continue;
		for (j = 0; j < acc->n_threads; j++) {
			const Iopulse__V1__ThreadSync *a = acc->threads[j];

			if (a->pid == s->pid && a->tid == s->tid && a->dev_major == s->dev_major &&
			    a->dev_minor == s->dev_minor)
				break;
		}
		r = j < acc->n_threads ? update_thread_add(acc->threads[j], s) :
			append_dup((void ***)&acc->threads, &acc->n_threads, &s->base);
		if (r)
			return r;
	}
	acc->phase_marks += src->phase_marks;
	for (i = 0; (!f || !f->marks_counted) && i < src->n_phases; i++) {
		r = append_dup((void ***)&acc->phases, &acc->n_phases, &src->phases[i]->base);
		if (r)
			return r;
	}
	if (src->drops) {
		if (!acc->drops) {
			acc->drops = pb_dup(&src->drops->base);
			if (!acc->drops)
				return -ENOMEM;
		} else {
			acc->drops->no_slot += src->drops->no_slot;
			acc->drops->inflight_full += src->drops->inflight_full;
			acc->drops->sync_full += src->drops->sync_full;
			acc->drops->sync_evicted += src->drops->sync_evicted;
			acc->drops->no_bio_ts += src->drops->no_bio_ts;
			acc->drops->bio_evicted += src->drops->bio_evicted;
			acc->drops->completed_at_accounting += src->drops->completed_at_accounting;
			acc->drops->program_skips += src->drops->program_skips;
		}
	}
	if (!acc->merged) {
		acc->first_seq = src->first_seq;
		acc->start_realtime_ns = src->start_realtime_ns;
		acc->start_monotonic_ns = src->start_monotonic_ns;
	}
	acc->merged += src->merged;
	acc->seq = src->seq;
	acc->precision = src->precision;
	acc->end_realtime_ns = src->end_realtime_ns;
	acc->end_monotonic_ns = src->end_monotonic_ns;
	return 0;
}

pb_update *update_copy(const pb_update *m, const struct update_filter *f)
{
	pb_update *u;

	if (update_filter_empty(f))
		return pb_dup(&m->base);
	u = malloc(sizeof(*u));
	if (!u)
		return NULL;
	iopulse__v1__update__init(u);
	if (update_merge_into(u, m, f)) {
		update_free(u);
		return NULL;
	}
	return u;
}
