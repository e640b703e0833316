/*
 * lines.c - what one atomic add costs when another CPU wrote the cache line last
 *
 * The per-device counters and histogram buckets in the kernel map are shared by every CPU
 * that completes IO on the device; every completion adds to a few of their cache lines with a
 * locked instruction. This measures, on this machine, one thread per CPU (CPUs 0..n-1) adding
 * to its own line and then all of them adding to one shared line, and prints ns per add and
 * their ratio as JSON. Usage: iopulse-bench-lines [ADDS_PER_THREAD]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

struct line {
	uint64_t v;
	char pad[64 - sizeof(uint64_t)];
} __attribute__((aligned(64)));

static struct line lines[MAX_THREADS];
static struct line shared;
static uint64_t adds;
static pthread_barrier_t start;

struct job {
	int cpu;
	uint64_t *target;
	double ns;
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *run(void *arg)
{
	struct job *j = arg;
	cpu_set_t set;
	double t0;
	uint64_t i;

	CPU_ZERO(&set);
	CPU_SET(j->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity");
	pthread_barrier_wait(&start);
	t0 = now_ns();
	for (i = 0; i < adds; i++)
		__atomic_fetch_add(j->target, 1, __ATOMIC_RELAXED);
	j->ns = (now_ns() - t0) / (double)adds;
	return NULL;
}

/* Mean ns per add over the threads; shared: all add to one line, else each to its own. */
static double round_ns(int n, int shared_line)
{
	pthread_t th[MAX_THREADS];
	struct job jobs[MAX_THREADS];
	double sum = 0;
	int i;

	pthread_barrier_init(&start, NULL, (unsigned int)n);
	for (i = 0; i < n; i++) {
		jobs[i] = (struct job){ .cpu = i, .target = shared_line ? &shared.v : &lines[i].v };
		pthread_create(&th[i], NULL, run, &jobs[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		sum += jobs[i].ns;
	}
	pthread_barrier_destroy(&start);
	return sum / n;
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double own, one, sh;
	int n = ncpu > MAX_THREADS ? MAX_THREADS : (int)ncpu;

	adds = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000ULL;
	if (!adds || n < 1) {
		fprintf(stderr, "usage: %s [ADDS_PER_THREAD > 0]\n", argv[0]);
		return 2;
	}
	one = round_ns(1, 0);
	own = round_ns(n, 0);
	sh = round_ns(n, 1);
	printf("{\"cpus\": %d, \"adds_per_thread\": %llu, \"ns_one_thread\": %.2f, "
	       "\"ns_own_line\": %.2f, \"ns_shared_line\": %.2f, \"shared_vs_own\": %.2f}\n",
	       n, (unsigned long long)adds, one, own, sh, sh / own);
	return 0;
}
