/* probes.c - loads, attaches and reads the BPF programs and maps */
#include "probes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "btf_compat.h"
#include "hist_math.h"
#include "rq_logic.h"
#include "iopulse.skel.h"
#include "iopulse-noatomics.skel.h"
#include "log.h"

#define TRACEFS "/sys/kernel/tracing"

/*
 * Spare programs after the first on block_rq_issue, block_bio_queue and block_split where
 * tracepoint programs run preemptible (compat.bpf.h 10). With one spare, an event is lost
 * when two tasks on a CPU are preempted inside the two programs at once; with two, three.
 * The completion program with records has spares on every kernel: an interrupt that
 * completes a request while it runs on that CPU comes in between there (rq_logic.h
 * iop_spare_completes). The completion-only mode has none: it has no record to tell a
 * completion done by, and its counts are held to /proc/diskstats instead.
 */
#define PROBES_SPARES 2
/*
 * The dispatch chain has four: with two, 7.3 under qemu still lost 38 dispatches in a round
 * of 12,388 IOs of five disks with scheduler none (their IOs counted, not timed), where the
 * bio and completion chains, with two, lost none.
 */
#define PROBES_RQ_SPARES 4
#define PROBES_MAX_SPARES PROBES_RQ_SPARES

/* The chains of programs with spares: dispatch, bio submission, split, completion. */
enum {
	PROBES_CHAIN_RQ, PROBES_CHAIN_BIO, PROBES_CHAIN_SPLIT, PROBES_CHAIN_COMPLETE, PROBES_CHAINS
};

struct probes {
	struct iopulse_bpf *skel;
	struct btf_compat compat;
	bool raw_tp;
	bool io_done_off;         /* the block_io_done program did not load here */
	bool completion_only;     /* histogram.mode: completion */
	bool sync_on;             /* sync tracking loaded (asked for and possible here) */
	char sync_off[512];       /* why it is off although asked for, or "" */
	unsigned int k, nb;
	size_t slot_u64s;
	size_t slot_stride;       /* bytes between slots in the mmap */
	uint32_t max_devices;
	size_t sync_value_size;
	uint64_t *data;           /* mmap of dev_data */
	size_t data_len;
	struct iop_rq_rec *rq_recs;   /* mmap of rq_recs */
	size_t rq_recs_len;
	size_t rq_recs_n;
	int stats_fd;
	uint8_t *draining;        /* per slot: 0, or 1/2 = released, recycled at the 2nd call */
	unsigned int rq_spares;   /* spare programs after the first (compat.bpf.h 10), loaded */
	unsigned int bio_spares;
	unsigned int compl_spares; /* after the completion program (rq_logic.h) */
	uint64_t lost[PROBES_CHAINS]; /* events each chain lost, as last reported */
};

/* libbpf's messages: kept for the error report, printed at debug level. */
static char libbpf_last[4096];
/* the end of the latest verifier log libbpf passed on */
static char verifier_last[4096];
_Static_assert(sizeof(verifier_last) == sizeof(libbpf_last), "libbpf_print copies one into the other");

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static char msg[1 << 16];   /* a verifier log arrives as one message */
	const char *tail;
	size_t used, len;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level == LIBBPF_DEBUG && log_get_level() < IOP_LOG_DEBUG)
		return 0;
	len = strlen(msg);
	/* keep the end: that is where the verifier says why it refused */
	tail = len >= sizeof(libbpf_last) ? msg + len - (sizeof(libbpf_last) - 1) : msg;
	if (strstr(tail, "-- END PROG LOAD LOG --"))   /* tail fits: both buffers are one size */
		memcpy(verifier_last, tail, strlen(tail) + 1);
	len = strlen(tail);
	used = strlen(libbpf_last);
	if (used + len + 1 >= sizeof(libbpf_last))
		used = 0;
	memcpy(libbpf_last + used, tail, len + 1);
	if (log_get_level() >= IOP_LOG_DEBUG)
		fprintf(stderr, "libbpf: %s", msg);
	return 0;
}

/*
 * The verifier's reason for refusing a program: the line before "processed N insns" in the
 * kept libbpf output, or "" when there is none.
 */
static void verifier_reason(char *out, size_t len)
{
	const char *p = strstr(verifier_last, "\nprocessed "), *start;

	out[0] = '\0';
	if (!p || p == verifier_last)
		return;
	start = p - 1;
	while (start > verifier_last && start[-1] != '\n')
		start--;
	snprintf(out, len, "%.*s", (int)(p - start), start);
}

static int ensure_tracefs(char *err, size_t errlen)
{
	struct stat st;
	int e = stat(TRACEFS "/events/syscalls", &st) ? errno : 0;

	if (!e || stat("/sys/kernel/debug/tracing/events/syscalls", &st) == 0)
		return 0;
	if (e == EACCES) {
		snprintf(err, errlen, "its syscall tracepoints are in tracefs (" TRACEFS "), which uid "
			 "%u may not search: it needs CAP_DAC_READ_SEARCH (the packaged unit grants it)",
			 (unsigned)geteuid());
		return -EACCES;
	}
	if (stat(TRACEFS "/events", &st) != 0) {
		if (mount("nodev", TRACEFS, "tracefs", 0, NULL) != 0) {
			e = errno;
			snprintf(err, errlen, "its syscall tracepoints need tracefs, which is not "
				 "mounted and could not be mounted at " TRACEFS " (%s); mount it "
				 "(mount -t tracefs nodev " TRACEFS ")", strerror(e));
			return -e;
		}
		log_info("mounted tracefs at " TRACEFS " for the syscall tracepoints");
	}
	if (stat(TRACEFS "/events/syscalls", &st) != 0) {
		snprintf(err, errlen, "this kernel has no syscall tracepoints (" TRACEFS
			 "/events/syscalls missing, CONFIG_FTRACE_SYSCALLS off)");
		return -ENOENT;
	}
	return 0;
}

/* Which programs load. */
struct prog_choice {
	bool raw_tp;     /* raw_tp block programs instead of tp_btf */
	bool bio;        /* the bio program */
	bool bio_records; /* bio records for queue wait: the split program too */
	bool full;       /* dispatch and completion with records; else the completion-only one */
	bool sync;       /* sync tracking */
	bool cast;       /* the sync entries built on bpf_rdonly_cast */
	unsigned int rq_spares;  /* spare dispatch programs (compat.bpf.h 10) */
	unsigned int bio_spares; /* spare bio and split programs */
	unsigned int compl_spares; /* spare completion programs (rq_logic.h) */
	bool io_done;    /* the program on block_io_done (iopulse.bpf.c on_io_done) */
};

/*
 * The bio program times bios for queue wait and counts flush bios inside sync calls: it is
 * left out when neither is wanted; the split program passes a bio's time on to its parts
 * wherever bios are timed. The completion-only mode loads its one completion program
 * instead of the dispatch and completion programs; the requeue program, which runs only when
 * a driver requeues, counts requeues in either mode. Where tracepoint programs run preemptible
 * spare programs follow the first dispatch, bio and split programs (compat.bpf.h 10); they
 * are declared after it, so attach_in_order attaches them later and the tracepoint calls them
 * in that order.
 */
static void select_programs(struct iopulse_bpf *s, const struct prog_choice *c)
{
	struct bpf_program *btf_progs[] = {
		s->progs.iop_bio_queue, s->progs.iop_rq_issue, s->progs.iop_rq_complete,
		s->progs.iop_rq_requeue, s->progs.iop_compl, s->progs.iop_bio_split,
		s->progs.iop_rq_issue_spare, s->progs.iop_rq_issue_spare2,
		s->progs.iop_bio_queue_spare, s->progs.iop_bio_queue_spare2,
		s->progs.iop_bio_split_spare, s->progs.iop_bio_split_spare2,
		s->progs.iop_rq_complete_spare, s->progs.iop_rq_complete_spare2,
		s->progs.iop_rq_issue_spare3, s->progs.iop_rq_issue_spare4,
	};
	struct bpf_program *raw_progs[] = {
		s->progs.iop_bio_queue_raw, s->progs.iop_rq_issue_raw, s->progs.iop_rq_complete_raw,
		s->progs.iop_rq_requeue_raw, s->progs.iop_compl_raw, s->progs.iop_bio_split_raw,
		s->progs.iop_rq_issue_spare_raw, s->progs.iop_rq_issue_spare2_raw,
		s->progs.iop_bio_queue_spare_raw, s->progs.iop_bio_queue_spare2_raw,
		s->progs.iop_bio_split_spare_raw, s->progs.iop_bio_split_spare2_raw,
		s->progs.iop_rq_complete_spare_raw, s->progs.iop_rq_complete_spare2_raw,
		s->progs.iop_rq_issue_spare3_raw, s->progs.iop_rq_issue_spare4_raw,
	};
	bool wanted[] = { c->bio, c->full, c->full, true, !c->full, c->bio_records,
			  c->full && c->rq_spares >= 1, c->full && c->rq_spares >= 2,
			  c->bio && c->bio_spares >= 1, c->bio && c->bio_spares >= 2,
			  c->bio_records && c->bio_spares >= 1, c->bio_records && c->bio_spares >= 2,
			  c->full && c->compl_spares >= 1, c->full && c->compl_spares >= 2,
			  c->full && c->rq_spares >= 3, c->full && c->rq_spares >= 4 };
	struct bpf_program *enter_cast[] = {
		s->progs.iop_enter_fsync, s->progs.iop_enter_fdatasync,
		s->progs.iop_enter_sync_file_range,
	};
	struct bpf_program *enter_read[] = {
		s->progs.iop_enter_fsync_read, s->progs.iop_enter_fdatasync_read,
		s->progs.iop_enter_sync_file_range_read,
	};
	struct bpf_program *sync_exit[] = {
		s->progs.iop_exit_fsync, s->progs.iop_exit_fdatasync,
		s->progs.iop_exit_sync_file_range,
	};
	struct bpf_map *sync_maps[] = { s->maps.sync_start, s->maps.sync_table, s->maps.sync_zero };
	size_t i;

	_Static_assert(sizeof(wanted) / sizeof(wanted[0]) == sizeof(btf_progs) / sizeof(btf_progs[0]),
		       "one choice per block program");
	for (i = 0; i < sizeof(btf_progs) / sizeof(btf_progs[0]); i++) {
		bpf_program__set_autoload(btf_progs[i], wanted[i] && !c->raw_tp);
		bpf_program__set_autoload(raw_progs[i], wanted[i] && c->raw_tp);
	}
	for (i = 0; i < 3; i++) {
		bpf_program__set_autoload(enter_cast[i], c->sync && c->cast);
		bpf_program__set_autoload(enter_read[i], c->sync && !c->cast);
		bpf_program__set_autoload(sync_exit[i], c->sync);
		/* not created without sync: the bio program's use of sync_start is then dead code */
		bpf_map__set_autocreate(sync_maps[i], c->sync);
	}
	bpf_map__set_autocreate(s->maps.sync_watch, c->sync);
	bpf_program__set_autoload(s->progs.iop_io_done, c->io_done);
	/* not created without bio spares: the first bio and split programs' marks are dead code */
	bpf_map__set_autocreate(s->maps.spare_marks, c->bio && c->bio_spares);
}

/* IOPULSE_TEST_SKIP_COMPLETIONS=N: the tests' way to lose about one completion in N in
 * every completion program (iopulse.bpf.c test_skip_completions), 0 or unset: none. */
static unsigned int test_skip_completions(void)
{
	const char *v = getenv("IOPULSE_TEST_SKIP_COMPLETIONS");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;

	if (n)
		log_warn("IOPULSE_TEST_SKIP_COMPLETIONS=%lu: about one completion in %lu is "
			 "hidden from the completion programs (a test setting)", n, n);
	return n > 1000000 ? 1000000 : (unsigned int)n;
}

static int configure(struct probes *p, const struct probes_opts *o)
{
	struct iopulse_bpf *s = p->skel;
	size_t sync_u64s = sizeof(struct iop_sync_val) / 8 + IOP_SYNC_MAX * p->nb;
	struct prog_choice pc = {
		.raw_tp = p->raw_tp, .full = !p->completion_only, .sync = p->sync_on,
		.bio = (o->queue_from_bio && !p->completion_only) || p->sync_on,
		.bio_records = o->queue_from_bio && !p->completion_only,
		.cast = p->compat.have_rdonly_cast,
	};
	uint32_t sets = 1;
	int err = 0;

	/* the bio chains' marks live in task storage (rq_logic.h iop_mark_done) */
	p->rq_spares = p->compat.tp_preemptible && pc.full ? PROBES_RQ_SPARES : 0;
	p->bio_spares = p->compat.tp_preemptible && pc.bio && p->compat.have_task_storage ?
			PROBES_SPARES : 0;
	p->compl_spares = pc.full ? PROBES_SPARES : 0;
	pc.rq_spares = p->rq_spares;
	pc.bio_spares = p->bio_spares;
	pc.compl_spares = p->compl_spares;
	/* tp_btf only: a raw_tp twin would read the request without BTF for a rare event */
	pc.io_done = pc.full && !p->raw_tp && p->compat.have_io_done && !p->io_done_off;
	s->rodata->rq_spares = p->rq_spares;
	s->rodata->test_skip_completions = test_skip_completions();
	s->rodata->bio_spares = p->bio_spares;
	/* the completion-only mode keeps no records: one set of each, never used */
	while (!p->completion_only && sets * IOP_WAYS < o->max_inflight)
		sets <<= 1;
	s->rodata->rec_set_mask = sets - 1;

	s->rodata->hist_k = p->k;
	s->rodata->hist_nb = p->nb;
	s->rodata->slot_u64s = (unsigned int)p->slot_u64s;
	s->rodata->sync_u64s = (unsigned int)sync_u64s;
	s->rodata->rollup_partitions = o->rollup_partitions;
	s->rodata->rq_issue_arg = p->compat.rq_issue_arg;
	s->rodata->bio_queue_arg = p->compat.bio_queue_arg;
	s->rodata->split_arg = p->compat.split_arg;
	s->rodata->rqf_flush_seq_mask = p->compat.rqf_flush_seq;
	s->rodata->rqf_io_stat_mask = p->compat.rqf_io_stat;
	p->sync_value_size = sync_u64s * 8;

	err = err ?: bpf_map__set_value_size(s->maps.dev_data, (uint32_t)(p->slot_u64s * 8));
	err = err ?: bpf_map__set_max_entries(s->maps.dev_data, o->max_devices);
	err = err ?: bpf_map__set_max_entries(s->maps.dev_slots, o->max_devices);
	err = err ?: bpf_map__set_max_entries(s->maps.free_slots, o->max_devices);
	err = err ?: bpf_map__set_max_entries(s->maps.bio_recs, sets);
	err = err ?: bpf_map__set_max_entries(s->maps.rq_recs, sets);
	err = err ?: bpf_map__set_value_size(s->maps.sync_table, (uint32_t)p->sync_value_size);
	err = err ?: bpf_map__set_max_entries(s->maps.sync_table, o->max_threads);
	err = err ?: bpf_map__set_value_size(s->maps.sync_zero, (uint32_t)p->sync_value_size);
	s->rodata->bio_records = o->queue_from_bio && !p->completion_only;
	s->rodata->rq_records = !p->completion_only;
	s->rodata->sync_on = p->sync_on;
	select_programs(s, &pc);
	return err;
}

/*
 * Opens the programs: the main object, or where the kernel lacks BPF atomics beyond add the
 * one built without them (compat.bpf.h 7). Both come from one source, so their maps, programs
 * and load-time settings are the same and the main skeleton describes either; only the ELF
 * bytes it opens differ.
 */
static struct iopulse_bpf *open_object(bool atomics)
{
	struct iopulse_bpf *s;
	int err;

	if (atomics)
		return iopulse_bpf__open();
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	err = iopulse_bpf__create_skeleton(s);
	if (!err) {
		s->skeleton->data = iopulse_noatomics_bpf__elf_bytes(&s->skeleton->data_sz);
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	}
	if (err) {
		iopulse_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static int load_once(struct probes *p, const struct probes_opts *o)
{
	int err;

	p->skel = open_object(p->compat.have_atomics);
	if (!p->skel)
		return -errno ?: -ENOMEM;
	err = configure(p, o);
	if (err)
		return err;
	libbpf_last[0] = '\0';
	verifier_last[0] = '\0';
	return iopulse_bpf__load(p->skel);
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool cap_effective(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1U << (cap % 32));
}

/*
 * Loading and attaching tracing programs takes CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN,
 * which implies both): root, or the service user with the unit's ambient capabilities.
 */
int probes_check_caps(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return 0;   /* cannot tell: let the kernel say */
	if (cap_effective(d, CAP_SYS_ADMIN) ||
	    (cap_effective(d, CAP_BPF) && cap_effective(d, CAP_PERFMON)))
		return 0;
	snprintf(err, errlen, "iopulsed loads BPF tracing programs and needs CAP_BPF and "
		 "CAP_PERFMON (uid %u has %s%s%s): run it as root or with those capabilities "
		 "(the packaged systemd unit gives them to the iopulse user)", (unsigned)geteuid(),
		 cap_effective(d, CAP_BPF) ? "CAP_BPF" : "",
		 cap_effective(d, CAP_BPF) && cap_effective(d, CAP_PERFMON) ? ", " : "",
		 cap_effective(d, CAP_PERFMON) ? "CAP_PERFMON" :
		 cap_effective(d, CAP_BPF) ? "" : "neither");
	return -EPERM;
}

/* Turns sync tracking off (it was asked for) with one warning line saying why. */
static void sync_off(struct probes *p, const char *why)
{
	p->sync_on = false;
	snprintf(p->sync_off, sizeof(p->sync_off), "%s", why);
	log_warn("sync tracking (fsync/fdatasync/sync_file_range) is off: %s; the block-layer "
		 "metrics are not affected (sync.enabled: false silences this)", why);
}

/* The program or map libbpf last reported as failing ("prog 'x': ..." or "map 'x': ..."). */
static void failed_object(char *kind, size_t kindlen, char *name, size_t namelen)
{
	const char *prog = NULL, *map = NULL, *q, *at, *end;

	for (q = libbpf_last; (q = strstr(q, "prog '")); q++)
		prog = q;
	for (q = libbpf_last; (q = strstr(q, "map '")); q++)
		map = q;
	at = prog > map ? prog : map;
	kind[0] = name[0] = '\0';
	if (!at)
		return;
	snprintf(kind, kindlen, "%s", at == prog ? "program" : "map");
	at = strchr(at, '\'') + 1;
	end = strchr(at, '\'');
	if (end)
		snprintf(name, namelen, "%.*s", (int)(end - at), at);
}

static bool is_sync_object(const char *name)
{
	return !strncmp(name, "iop_enter_", 10) || !strncmp(name, "iop_exit_", 9) ||
	       !strncmp(name, "sync_", 5);
}

/*
 * Loads the programs; when one fails, turns off only what needs it and tries again: sync
 * tracking when a sync program or map fails, tp_btf (for raw_tp) when a block program does.
 */
static int load_with_fallbacks(struct probes *p, const struct probes_opts *o)
{
	char kind[16], name[64], why[256], line[512];
	int r;

	for (;;) {
		r = load_once(p, o);
		if (!r)
			return 0;
		failed_object(kind, sizeof(kind), name, sizeof(name));
		verifier_reason(why, sizeof(why));
		snprintf(line, sizeof(line), "%s %s did not load: %s%s%s", kind[0] ? kind : "a BPF",
			 name[0] ? name : "object", strerror(-r), why[0] ? "; verifier: " : "", why);
		if (p->sync_on && is_sync_object(name)) {
			sync_off(p, line);
		} else if (!p->io_done_off && !strcmp(name, "iop_io_done")) {
			log_warn("%s; going on without it (a completion no completion program saw is "
				 "then counted when its request comes back, untimed)", line);
			p->io_done_off = true;
		} else if (!p->raw_tp) {
			log_warn("%s; loading the raw_tp block programs instead of tp_btf", line);
			p->raw_tp = true;
		} else {
			return r;
		}
		iopulse_bpf__destroy(p->skel);
		p->skel = NULL;
	}
}

static void explain(int err, const char *what, char *buf, size_t len)
{
	const char *tail = strrchr(libbpf_last, '\n');
	char last[512] = "", why[256];

	verifier_reason(why, sizeof(why));
	if (why[0]) {
		snprintf(last, sizeof(last), " (the verifier refused it: %s)", why);
	} else if (tail) {
		/* last complete libbpf line, for context */
		const char *start = tail;

		while (start > libbpf_last && start[-1] != '\n')
			start--;
		if (start == tail && tail > libbpf_last) {
			start = tail - 1;
			while (start > libbpf_last && start[-1] != '\n')
				start--;
		}
		snprintf(last, sizeof(last), " (libbpf: %.*s)", (int)(tail - start), start);
	}
	if (err == -EPERM || err == -EACCES)
		snprintf(buf, len, "%s: permission denied; iopulsed needs root (CAP_BPF, "
			 "CAP_PERFMON and CAP_SYS_RESOURCE)%s", what, last);
	else
		snprintf(buf, len, "%s: %s%s", what, strerror(-err), last);
}

static int map_data(struct probes *p)
{
	int fd = bpf_map__fd(p->skel->maps.dev_data);
	void *m;

	p->slot_stride = p->slot_u64s * 8;
	p->data_len = p->slot_stride * p->max_devices;
	m = mmap(NULL, p->data_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	p->data = m;
	p->rq_recs_n = (size_t)bpf_map__max_entries(p->skel->maps.rq_recs) * IOP_WAYS;
	p->rq_recs_len = p->rq_recs_n * sizeof(struct iop_rq_rec);
	return 0;
}

static int fill_free_slots(struct probes *p)
{
	int fd = bpf_map__fd(p->skel->maps.free_slots);
	uint32_t i;

	for (i = 0; i < p->max_devices; i++)
		if (bpf_map_update_elem(fd, NULL, &i, BPF_ANY))
			return -errno;
	return 0;
}

/*
 * Where a program's tracepoint stands in an IO's life, latest first: completions are watched
 * before dispatches, dispatches before submissions, sync exits before entries. An IO whose
 * dispatch a program saw then always has its completion seen too, also while a reload's new
 * probes come up beside the old ones (an IO recorded at dispatch but completed before the
 * completion program came would be counted again by the in-flight sweep).
 */
static int attach_rank(const char *sec)
{
	static const char *const order[] = { "block_rq_complete", "block_rq_requeue",
					     "block_rq_issue", "block_bio_queue", "sys_exit_",
					     "sys_enter_" };
	unsigned int i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (strstr(sec, order[i]))
			return (int)i;
	return (int)i;
}

static int attach_in_order(struct iopulse_bpf *skel)
{
	const struct bpf_object_skeleton *s = skel->skeleton;
	int rank, i, r;

	for (rank = 0; rank <= 6; rank++) {
		for (i = 0; i < s->prog_cnt; i++) {
			struct bpf_program *prog = *s->progs[i].prog;

			if (!bpf_program__autoload(prog) ||
			    attach_rank(bpf_program__section_name(prog)) != rank)
				continue;
			*s->progs[i].link = bpf_program__attach(prog);
			r = libbpf_get_error(*s->progs[i].link);
			if (r) {
				*s->progs[i].link = NULL;
				return r < 0 ? r : -r;
			}
		}
	}
	return 0;
}

/* Which spares are attached (compat.bpf.h 10), for the log line, or "". */
static const char *spares_note(const struct probes *p)
{
	static char buf[128];

	if (!p->rq_spares && !p->bio_spares)
		return "";
	snprintf(buf, sizeof(buf), "; tracepoint programs run preemptible: %u spare dispatch "
		 "programs, %u spare bio programs%s", p->rq_spares, p->bio_spares,
		 !p->compat.have_task_storage ? " (no task-local storage for their marks)" : "");
	return buf;
}

int probes_new(struct probes **out, const struct probes_opts *o, char *err, size_t errlen)
{
	struct probes *p;
	int r;

	if (o->hist_k < IOP_HIST_K_MIN || o->hist_k > IOP_HIST_K_MAX) {
		snprintf(err, errlen, "histogram precision %u out of range (%d..%d)", o->hist_k,
			 IOP_HIST_K_MIN, IOP_HIST_K_MAX);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->stats_fd = -1;
	p->k = o->hist_k;
	p->nb = IOP_HIST_NBUCKETS(o->hist_k);
	p->slot_u64s = IOP_C_MAX + (size_t)IOP_H_MAX * p->nb;
	p->max_devices = o->max_devices;
	p->draining = calloc(o->max_devices, 1);
	if (!p->draining) {
		free(p);
		return -ENOMEM;
	}
	libbpf_set_print(libbpf_print);

	r = btf_compat_detect(&p->compat, err, errlen);
	if (r)
		goto fail;
	r = probes_check_caps(err, errlen);
	if (r)
		goto fail;
	p->completion_only = o->completion_only;
	p->sync_on = o->sync_enabled;
	if (p->sync_on && !p->compat.have_task_storage)
		sync_off(p, "this kernel has no task-local storage for BPF programs "
			 "(BPF_MAP_TYPE_TASK_STORAGE and bpf_get_current_task_btf, Linux 5.11)");
	if (p->sync_on) {
		char why[512];

		if (ensure_tracefs(why, sizeof(why)))
			sync_off(p, why);
	}
	p->raw_tp = !p->compat.have_block_tps;
	if (!p->compat.have_atomics)
		log_warn("this kernel's BPF has no atomic exchange or fetch-add (Linux 5.12): loading "
			 "the programs built without them; counts stay exact, a few latency samples "
			 "may be lost to concurrent dispatches (README: kernel support)");
	r = load_with_fallbacks(p, o);
	if (r) {
		explain(r, "loading the BPF programs failed", err, errlen);
		goto fail;
	}
	/* slots are ready before the first event arrives: no IO is dropped for want of one */
	r = map_data(p);
	if (r) {
		snprintf(err, errlen, "mapping the BPF maps failed: %s", strerror(-r));
		goto fail;
	}
	r = fill_free_slots(p);
	if (r) {
		snprintf(err, errlen, "initialising device slots failed: %s", strerror(-r));
		goto fail;
	}
	r = attach_in_order(p->skel);
	if (r) {
		explain(r, "attaching the BPF programs failed", err, errlen);
		goto fail;
	}
	if (o->bpf_stats) {
		p->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (p->stats_fd < 0)
			log_warn("cannot enable BPF run-time statistics: %s%s", strerror(errno),
				 errno == EPERM ? " (it takes CAP_SYS_ADMIN; bpf_stats: false "
				 "silences this)" : "");
	}
	log_info("probes attached (%s%s, histogram precision %u, %u buckets, %zu KiB per device; "
		 "request flags flush_seq 0x%x io_stat 0x%x; %u spare completion programs%s)",
		 p->raw_tp ? "raw_tp" : "tp_btf", p->compat.have_atomics ? "" : " without atomics",
		 p->k, p->nb, p->slot_u64s * 8 / 1024, p->compat.rqf_flush_seq,
		 p->compat.rqf_io_stat, p->compl_spares, spares_note(p));
	if (p->completion_only)
		log_info("histogram mode completion: one program at completion, latencies from the "
			 "kernel's own stamps (README: completion-only mode)%s%s",
			 p->compat.plug_clock ? "; this kernel caches its clock in plugs: a request "
			 "set up and dispatched in one plug has no queue/service split" : "",
			 p->sync_on ? "; the bio program stays to count flush bios inside sync calls "
			 "(sync.enabled: false leaves it out)" : "");
	*out = p;
	return 0;
fail:
	probes_free(p);
	return r;
}

struct probes *probes_free(struct probes *p)
{
	if (!p)
		return NULL;
	if (p->data)
		munmap(p->data, p->data_len);
	probes_rq_recs_unmap(p);
	if (p->stats_fd >= 0)
		close(p->stats_fd);
	iopulse_bpf__destroy(p->skel);
	free(p->draining);
	free(p);
	return NULL;
}

const char *probes_attach_mode(const struct probes *p)
{
	return p->raw_tp ? "raw_tp" : "tp_btf";
}

bool probes_completion_only(const struct probes *p) { return p->completion_only; }
bool probes_sync_on(const struct probes *p) { return p->sync_on; }
const char *probes_sync_off_reason(const struct probes *p) { return p->sync_off; }
unsigned int probes_hist_k(const struct probes *p) { return p->k; }
unsigned int probes_hist_nb(const struct probes *p) { return p->nb; }
size_t probes_slot_u64s(const struct probes *p) { return p->slot_u64s; }
uint32_t probes_max_devices(const struct probes *p) { return p->max_devices; }
int probes_sync_fd(const struct probes *p) { return bpf_map__fd(p->skel->maps.sync_table); }
int probes_sync_watch_fd(const struct probes *p) { return bpf_map__fd(p->skel->maps.sync_watch); }
struct iop_sync_ctl *probes_sync_ctl(struct probes *p) { return &p->skel->bss->sync_ctl; }
size_t probes_sync_value_size(const struct probes *p) { return p->sync_value_size; }
uint32_t probes_sync_capacity(const struct probes *p)
{
	return bpf_map__max_entries(p->skel->maps.sync_table);
}
bool probes_bpf_stats_on(const struct probes *p) { return p->stats_fd >= 0; }

uint64_t *probes_slot_data(struct probes *p, uint32_t slot)
{
	if (slot >= p->max_devices)
		return NULL;
	return (uint64_t *)((char *)p->data + (size_t)slot * p->slot_stride);
}

struct iop_rq_rec *probes_rq_recs_map(struct probes *p, size_t *n)
{
	void *m;

	if (!p->rq_recs) {
		m = mmap(NULL, p->rq_recs_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 bpf_map__fd(p->skel->maps.rq_recs), 0);
		if (m == MAP_FAILED)
			return NULL;
		p->rq_recs = m;
	}
	*n = p->rq_recs_n;
	return p->rq_recs;
}

void probes_rq_recs_unmap(struct probes *p)
{
	if (p->rq_recs)
		munmap(p->rq_recs, p->rq_recs_len);
	p->rq_recs = NULL;
}

const volatile uint64_t *probes_globals(struct probes *p)
{
	return (const volatile uint64_t *)p->skel->bss->globals;
}

int probes_for_each_slot(struct probes *p, int (*fn)(void *ctx, uint32_t kdev, uint32_t slot),
			 void *ctx)
{
	int fd = bpf_map__fd(p->skel->maps.dev_slots);
	uint32_t keys[64], slots[64], batch = 0, got, i;
	bool first = true, done = false;
	int r;

	/* batched: a couple of syscalls per interval instead of two per device */
	while (!done) {
		got = 64;
		r = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys, slots, &got, NULL);
		if (r && errno != ENOENT)
			return -errno;
		done = r != 0;
		first = false;
		for (i = 0; i < got; i++) {
			r = fn(ctx, keys[i], slots[i]);
			if (r)
				return r;
		}
	}
	return 0;
}

static int clear_cache(struct probes *p, uint32_t kdev)
{
	int fd = bpf_map__fd(p->skel->maps.dev_cache);
	struct iop_dev_cache zero = { 0 }, cur;
	uint32_t i;

	for (i = 0; i < IOP_DEV_CACHE; i++) {
		if (bpf_map_lookup_elem(fd, &i, &cur))
			return -errno;
		if (IOP_DEV_CACHE_KDEV(cur.word) == kdev && bpf_map_update_elem(fd, &i, &zero, BPF_ANY))
			return -errno;
	}
	return 0;
}

int probes_release_slot(struct probes *p, uint32_t kdev, uint32_t slot)
{
	int r;

	int fd = bpf_map__fd(p->skel->maps.dev_slots);
	uint64_t *d = probes_slot_data(p, slot);

	if (!d)
		return -EINVAL;
	if (bpf_map_delete_elem(fd, &kdev))
		return -errno;
	r = clear_cache(p, kdev);
	if (r)
		return r;
	p->draining[slot] = 1;
	return 0;
}

int probes_recycle_slots(struct probes *p)
{
	int fd = bpf_map__fd(p->skel->maps.free_slots), r = 0;
	uint32_t s;

	for (s = 0; s < p->max_devices; s++) {
		if (!p->draining[s])
			continue;
		if (p->draining[s]++ < 2)
			continue;
		/* a whole interval since the release: no event still holds the slot */
		memset(probes_slot_data(p, s), 0, p->slot_stride);
		p->draining[s] = 0;
		if (bpf_map_update_elem(fd, NULL, &s, BPF_ANY))
			r = -errno;
	}
	return r;
}

/*
 * The chain prog belongs to (PROBES_CHAIN_*) and its place in it (0 the first, 1.. a spare),
 * or -1 for a program of no chain.
 */
static int chain_of(const struct iopulse_bpf *s, const struct bpf_program *prog, int *pos)
{
	const struct bpf_program *chains[PROBES_CHAINS][2][1 + PROBES_MAX_SPARES] = {
		[PROBES_CHAIN_RQ] = {
			{ s->progs.iop_rq_issue, s->progs.iop_rq_issue_spare,
			  s->progs.iop_rq_issue_spare2, s->progs.iop_rq_issue_spare3,
			  s->progs.iop_rq_issue_spare4 },
			{ s->progs.iop_rq_issue_raw, s->progs.iop_rq_issue_spare_raw,
			  s->progs.iop_rq_issue_spare2_raw, s->progs.iop_rq_issue_spare3_raw,
			  s->progs.iop_rq_issue_spare4_raw } },
		[PROBES_CHAIN_BIO] = {
			{ s->progs.iop_bio_queue, s->progs.iop_bio_queue_spare,
			  s->progs.iop_bio_queue_spare2 },
			{ s->progs.iop_bio_queue_raw, s->progs.iop_bio_queue_spare_raw,
			  s->progs.iop_bio_queue_spare2_raw } },
		[PROBES_CHAIN_SPLIT] = {
			{ s->progs.iop_bio_split, s->progs.iop_bio_split_spare,
			  s->progs.iop_bio_split_spare2 },
			{ s->progs.iop_bio_split_raw, s->progs.iop_bio_split_spare_raw,
			  s->progs.iop_bio_split_spare2_raw } },
		[PROBES_CHAIN_COMPLETE] = {
			{ s->progs.iop_rq_complete, s->progs.iop_rq_complete_spare,
			  s->progs.iop_rq_complete_spare2 },
			{ s->progs.iop_rq_complete_raw, s->progs.iop_rq_complete_spare_raw,
			  s->progs.iop_rq_complete_spare2_raw } },
	};
	int c, k, i;

	for (c = 0; c < PROBES_CHAINS; c++)
		for (k = 0; k < 2; k++)
			for (i = 0; i <= PROBES_MAX_SPARES; i++)
				if (chains[c][k][i] == prog) {
					*pos = i;
					return c;
				}
	return -1;
}

/*
 * Where spares run (compat.bpf.h 10), the first program of a chain reports the events the
 * chain lost (rq_logic.h iop_chain_lost: its skips less those a spare made good) and a spare
 * none: a spare skipped while another program handled the event lost nothing. Everything
 * else reports the kernel's recursion_misses. drops.missed_events, their sum, is then what
 * was lost.
 */
int probes_prog_stats(struct probes *p, struct iop_bpf_prog_stat *out, size_t max)
{
	static const unsigned int made_good[PROBES_CHAINS] = {
		[PROBES_CHAIN_RQ] = IOP_G_SPARE_RQ, [PROBES_CHAIN_BIO] = IOP_G_SPARE_BIO,
		[PROBES_CHAIN_SPLIT] = IOP_G_SPARE_SPLIT, [PROBES_CHAIN_COMPLETE] = IOP_G_SPARE_COMPLETE,
	};
	const unsigned int spares[PROBES_CHAINS] = {
		[PROBES_CHAIN_RQ] = p->rq_spares, [PROBES_CHAIN_BIO] = p->bio_spares,
		[PROBES_CHAIN_SPLIT] = p->bio_spares, [PROBES_CHAIN_COMPLETE] = p->compl_spares,
	};
	const volatile uint64_t *g = probes_globals(p);
	int first[PROBES_CHAINS];
	struct bpf_program *prog;
	size_t n = 0;
	int c, pos;

	for (c = 0; c < PROBES_CHAINS; c++)
		first[c] = -1;
	bpf_object__for_each_program(prog, p->skel->obj) {
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || n >= max)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			return -errno;
		snprintf(out[n].name, sizeof(out[n].name), "%s", bpf_program__name(prog));
		out[n].run_cnt = info.run_cnt;
		out[n].run_time_ns = info.run_time_ns;
		out[n].missed = info.recursion_misses;
		c = chain_of(p->skel, prog, &pos);
		if (c >= 0 && spares[c]) {
			if (pos == 0)
				first[c] = (int)n;
			else
				out[n].missed = 0;
		}
		n++;
	}
	/* the misses above first, made_good after (iop_chain_lost) */
	for (c = 0; c < PROBES_CHAINS; c++) {
		if (first[c] < 0)
			continue;
		p->lost[c] = iop_chain_lost(p->lost[c], out[first[c]].missed, g[made_good[c]]);
		out[first[c]].missed = p->lost[c];
	}
	return (int)n;
}
