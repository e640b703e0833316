/* iopulse.h - types and constants shared by the BPF programs and the daemon (no logic) */
#ifndef IOPULSE_BPF_SHARED_H
#define IOPULSE_BPF_SHARED_H

/* Op groups, as /proc/diskstats groups them (block/blk-core.c op_stat_group). */
enum iop_op {
	IOP_OP_READ = 0,
	IOP_OP_WRITE = 1,
	IOP_OP_FLUSH = 2,
	IOP_OP_DISCARD = 3,
	IOP_OP_MAX = 4,
};

/*
 * Histograms kept per device slot. Latencies in ns, sizes in bytes, seek distance in
 * 512-byte sectors. Queue/service/total are indexed by IOP_H_QUEUE + op etc.
 */
enum iop_hist_id {
	IOP_H_QUEUE = 0,          /* 0..3: bio submitted (Q) -> dispatched to driver (D) */
	IOP_H_SERVICE = 4,        /* 4..7: dispatched (D) -> completed (C) */
	IOP_H_TOTAL = 8,          /* 8..11: Q -> C */
	IOP_H_SIZE = 12,          /* 12..15: request bytes at completion */
	IOP_H_SEEK = 16,          /* |start - end of previous dispatched request|, sectors */
	IOP_H_PREFLUSH_LAT = 17,  /* bios carrying REQ_PREFLUSH: Q -> C as the submitter sees it */
	IOP_H_FUA_LAT = 18,       /* bios carrying REQ_FUA: Q -> C */
	IOP_H_MAX = 19,
};

/* u64 counters kept per device slot, before its histograms. Cumulative. */
enum iop_cnt_id {
	IOP_C_IOS = 0,            /* 0..3: requests completed, by op */
	IOP_C_BYTES = 4,          /* 4..7: bytes completed, by op */
	IOP_C_ERRORS = 8,         /* 8..11: completions with an error status, by op */
	IOP_C_UNTIMED = 12,       /* 12..15: completions with no dispatch record (issued before attach) */
	IOP_C_NOQUEUE = 16,       /* 16..19: completions whose submission time was unknown */
	IOP_C_SEQ = 20,           /* dispatched data requests starting where the previous ended */
	IOP_C_FWD = 21,
	IOP_C_BWD = 22,
	IOP_C_PREFLUSH = 23,      /* completed requests that carried REQ_PREFLUSH */
	IOP_C_FUA = 24,           /* completed requests that carried REQ_FUA */
	IOP_C_REQUEUE = 25,
	IOP_C_PREV_END = 26,      /* not a counter: end sector of the last dispatch (seek state) */
	IOP_C_UNSEEN = 27,        /* 27..30: completions the completion tracepoint never reported,
	                           * counted in IOP_C_IOS/BYTES once found (inflight.c, on_rq_issue) */
	IOP_C_NO_DISPATCH_TS = 31, /* completion-only mode: completions with a set-up time whose
	                            * dispatch was not stamped (blk-stat off), all ops (stamps.c) */
	IOP_C_MAX = 32,           /* padded to a whole cache line pair */
};

/* Global counters (one array map value). */
enum iop_global_id {
	IOP_G_NO_SLOT = 0,        /* events for a device when every slot was taken */
	IOP_G_INFLIGHT_FULL = 1,  /* dispatches that found their record set full (not timed) */
	IOP_G_SYNC_NEW = 2,       /* sync-table entries created (also each entry's generation) */
	IOP_G_SYNC_FULL = 3,      /* sync calls not recorded: no room for their thread in the sync
	                           * table (full, or its unwatched share full, or the thread's idle
	                           * entry being removed at that moment) */
	IOP_G_NO_BIO_TS = 4,      /* dispatches whose first bio had no submission record */
	IOP_G_BIO_EVICT = 5,      /* bio records taken over (mostly bios merged into a request) */
	/*
	 * Events the first program of a chain missed and a spare handled, where spares run
	 * (compat.bpf.h 10): dispatches, bio submissions, splits. What was lost is the first
	 * program's recursion_misses less these (probes.c, rq_logic.h iop_chain_lost).
	 */
	IOP_G_SPARE_RQ = 6,
	IOP_G_SPARE_BIO = 7,
	IOP_G_SPARE_SPLIT = 8,
	IOP_G_SPARE_COMPLETE = 9, /* completions a spare handled (rq_logic.h iop_spare_completes) */
	IOP_G_AT_ACCOUNTING = 10, /* IOs closed and timed at block_io_done: no completion program
	                           * closed their record (iopulse.bpf.c on_io_done) */
	IOP_G_MAX = 16,
};

enum iop_sync_kind {
	IOP_SYNC_FSYNC = 0,
	IOP_SYNC_FDATASYNC = 1,
	IOP_SYNC_RANGE = 2,       /* sync_file_range */
	IOP_SYNC_MAX = 3,
};

/*
 * In-flight records live in set-associative arrays (IOP_WAYS records per set), indexed by a
 * hash of the kernel pointer that identifies them: cheaper than a hash map (no locks, the
 * lookup is inlined) and bounded. key 0 is a free record. A full set keeps what it holds (the
 * oldest records are the slow IOs that make the tail) and the newcomer goes without one,
 * counted in IOP_G_INFLIGHT_FULL.
 */
#define IOP_WAYS 4

/*
 * A submitted bio, keyed by its address (block_bio_queue -> block_rq_issue). 16 bytes, so a set
 * of IOP_WAYS is one 64-byte cache line in the page-aligned map: q_flags holds the submission
 * time in its low 62 bits and REQ_PREFLUSH/REQ_FUA as the submitter asked in its top two
 * (rq_logic.h iop_bio_pack).
 */
struct iop_bio_rec {
	unsigned long long key;
	unsigned long long q_flags;
};

/* A dispatched request, keyed by its address (block_rq_issue -> block_rq_complete). */
struct iop_rq_rec {
	unsigned long long key;
	unsigned long long q_ns;      /* submission of its first bio, 0 if unknown */
	unsigned long long d_ns;      /* dispatch to the driver */
	unsigned long long seek;      /* absolute seek distance at dispatch, sectors */
	unsigned int bytes;           /* request size at dispatch */
	unsigned int opf;             /* flags of the first bio (or the request) */
	unsigned short slot;          /* device slot + 1 at dispatch, 0 if none */
	unsigned char seek_class;     /* 0 none, 1 seq, 2 fwd, 3 bwd */
	unsigned char timed;          /* queue/service already recorded */
	unsigned char grp;            /* enum iop_op of the request */
	unsigned char requeued;       /* block_rq_requeue seen since the dispatch */
	unsigned char flush_seq;      /* part of a flush sequence: not counted in diskstats' in_flight */
	unsigned char pad0;
	unsigned int kdev;            /* device (kernel dev_t) the request was dispatched to */
	unsigned int start_lo;        /* low 32 bits of the IO's set-up time (rq_logic.h) */
	unsigned long long fp;        /* which IO this is (rq_logic.h iop_rq_fingerprint) */
};

struct iop_bio_set {
	struct iop_bio_rec w[IOP_WAYS];
};

struct iop_rq_set {
	struct iop_rq_rec w[IOP_WAYS];
};

/* Sync-table key: one entry per (process, thread, device). dev uses the kernel's encoding. */
struct iop_sync_key {
	unsigned int tgid;
	unsigned int pid;
	unsigned int dev;
	unsigned int pad;
};

/*
 * Sync-table value header; IOP_SYNC_MAX latency histograms of IOP_HIST_NBUCKETS(k) u64
 * buckets follow it, one per call kind (enum iop_sync_kind order).
 */
struct iop_sync_val {
	char comm[16];
	char process[16];                /* thread group leader's name when the entry was made */
	unsigned long long calls[IOP_SYNC_MAX];
	unsigned long long lat_sum_ns[IOP_SYNC_MAX];
	unsigned long long lat_max_ns;
	unsigned long long flush_bios;   /* REQ_PREFLUSH bios submitted from inside the call */
	unsigned long long last_ns;      /* completion time of the latest call */
	unsigned long long gen;          /* creation number, never 0 once the entry is ready: a
	                                  * re-created entry restarts its counts (no wrapping delta) */
	unsigned int uid;                /* the thread's uid when the entry was made */
	unsigned int watched;            /* made under a watched name (sync_watch): it may take the
	                                  * reserved room */
};

/*
 * sync_watch key: a thread name (IOP_WATCH_THREAD) or a process name (IOP_WATCH_PROCESS, the
 * thread group leader's comm) whose threads get the sync table's reserved room. Filled by the
 * daemon (src/collect/sync_watch.c).
 */
enum iop_watch_kind {
	IOP_WATCH_THREAD = 0,
	IOP_WATCH_PROCESS = 1,
};

struct iop_watch_key {
	char name[16];
	unsigned int kind;
};

#define IOP_SYNC_WATCH_MAX 256

/*
 * Room in the sync table, shared by the programs and the daemon (in the programs' .bss).
 * Entries held = IOP_G_SYNC_NEW - removed. A thread whose name is not watched gets a new entry
 * only while fewer than unwatched_max are held (0: no such bound); a watched one while the
 * table has room. busy[IOP_SYNC_STRIPE(tid)] counts the sync_exit programs of that stripe's
 * threads at work on their entries; the daemon takes a stripe (0 -> IOP_SYNC_LOCKED) to remove
 * an entry of a live thread, so that no call lands in an entry after its last read: a call
 * that finds its stripe taken is counted in IOP_G_SYNC_FULL.
 */
#define IOP_SYNC_STRIPES 1024
#define IOP_SYNC_STRIPE(tid) ((tid) & (IOP_SYNC_STRIPES - 1))
#define IOP_SYNC_LOCKED 0x40000000u

struct iop_sync_ctl {
	unsigned long long removed;      /* entries the daemon removed; only it writes this */
	unsigned long long unwatched_max;
	unsigned int busy[IOP_SYNC_STRIPES];
};

/* dev_cache entry: kdev -> slot1 = slot + 1 (0 while invalid), one word read and written
 * whole (a reader on another CPU never pairs one device's kdev with another's slot).
 * Cleared by the daemon before it hands a slot back. */
#define IOP_DEV_CACHE 256
struct iop_dev_cache {
	unsigned long long word;        /* slot1 << 32 | kdev */
};
#define IOP_DEV_CACHE_KDEV(w) ((unsigned int)(w))
#define IOP_DEV_CACHE_SLOT1(w) ((unsigned int)((w) >> 32))

#define IOP_MAX_DEVICES_DEFAULT 64
#define IOP_MAX_THREADS_DEFAULT 1024
#define IOP_MAX_INFLIGHT_DEFAULT 65536

/* Kernel dev_t encoding (include/linux/kdev_t.h MINORBITS). */
#define IOP_KDEV_MINORBITS 20
#define IOP_KDEV_MAJOR(d) ((unsigned int)((d) >> IOP_KDEV_MINORBITS))
#define IOP_KDEV_MINOR(d) ((unsigned int)((d) & ((1U << IOP_KDEV_MINORBITS) - 1)))

#endif
