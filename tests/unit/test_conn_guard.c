/* test_conn_guard.c - which connections a listener keeps: caps, eviction, settling, deadlines */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "check_main.h"
#include "conn_guard.h"

static void v4(uint8_t a[16], const char *s)
{
	memset(a, 0, 10);
	a[10] = a[11] = 0xff;
	ck_assert_int_eq(inet_pton(AF_INET, s, a + 12), 1);
}

static int admit(struct conn_guard *g, int fd, const uint8_t *a, uint64_t t, int ev[2],
		 unsigned int *n)
{
	return conn_guard_admit(g, fd, 1000 + fd, a, (uint16_t)(40000 + fd), t, ev, n);
}

START_TEST(one_address_gets_its_oldest_unsettled_connection_shut)
{
	struct conn_guard *g;
	uint8_t a[16], b[16];
	int ev[2], fd;
	unsigned int n;

	v4(a, "10.0.0.1");
	v4(b, "10.0.0.2");
	ck_assert_int_eq(conn_guard_new(&g, 8, 3), 0);
	for (fd = 10; fd < 13; fd++) {
		ck_assert_int_eq(admit(g, fd, a, fd, ev, &n), 0);
		ck_assert_uint_eq(n, 0);
	}
	/* fd 10 made a call: the fourth from a shuts 11, the oldest still unsettled */
	ck_assert_int_eq(conn_guard_settle_peer(g, a, 40010), 0);
	ck_assert_int_eq(admit(g, 13, a, 13, ev, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(ev[0], 11);
	ck_assert_uint_eq(conn_guard_count(g, a), 3);
	/* another address is not touched */
	ck_assert_int_eq(admit(g, 20, b, 20, ev, &n), 0);
	ck_assert_uint_eq(n, 0);
	/* all of a's settled: a new one from a is refused, nothing shut */
	ck_assert_int_eq(conn_guard_settle_peer(g, a, 40012), 0);
	ck_assert_int_eq(conn_guard_settle_peer(g, a, 40013), 0);
	ck_assert_int_eq(admit(g, 14, a, 14, ev, &n), -EBUSY);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(conn_guard_count(g, NULL), 4);
	conn_guard_free(g);
}
END_TEST

START_TEST(a_full_table_shuts_the_busiest_address_oldest)
{
	struct conn_guard *g;
	uint8_t a[16], b[16], c[16];
	int ev[2];
	unsigned int n;

	v4(a, "10.0.0.1");
	v4(b, "10.0.0.2");
	v4(c, "10.0.0.3");
	ck_assert_int_eq(conn_guard_new(&g, 4, 4), 0);
	ck_assert_int_eq(admit(g, 1, b, 1, ev, &n), 0);     /* b's: older than a's */
	ck_assert_int_eq(admit(g, 2, a, 2, ev, &n), 0);
	ck_assert_int_eq(admit(g, 3, a, 3, ev, &n), 0);
	ck_assert_int_eq(admit(g, 4, a, 4, ev, &n), 0);
	ck_assert_int_eq(admit(g, 5, c, 5, ev, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(ev[0], 2);                          /* a holds the most */
	ck_assert_uint_eq(conn_guard_count(g, b), 1);
	conn_guard_free(g);
}
END_TEST

START_TEST(http_connections_settle_while_serving_and_expire_when_pending)
{
	struct conn_guard *g;
	uint8_t a[16];
	int ev[2], fds[4];
	unsigned int n;

	v4(a, "127.0.0.1");
	ck_assert_int_eq(conn_guard_new(&g, 8, 8), 0);
	ck_assert_int_eq(admit(g, 5, a, 100, ev, &n), 0);
	ck_assert_int_eq(admit(g, 6, a, 200, ev, &n), 0);
	ck_assert_int_eq(conn_guard_settle_fd(g, 5, true, 300), 0);
	ck_assert_uint_eq(conn_guard_expired(g, 1000, 500, fds, 4), 1);
	ck_assert_int_eq(fds[0], 6);
	ck_assert_uint_eq(conn_guard_expired(g, 2000, 500, fds, 4), 0);   /* handed once */
	/* the request done: pending again from then on */
	ck_assert_int_eq(conn_guard_settle_fd(g, 5, false, 1800), 0);
	ck_assert_uint_eq(conn_guard_expired(g, 2000, 500, fds, 4), 0);
	ck_assert_uint_eq(conn_guard_expired(g, 2400, 500, fds, 4), 1);
	ck_assert_int_eq(fds[0], 5);
	conn_guard_gone(g, 5);
	ck_assert_int_eq(conn_guard_settle_fd(g, 5, true, 2500), -ENOENT);
	ck_assert_uint_eq(conn_guard_count(g, NULL), 1);
	conn_guard_free(g);
}
END_TEST

static bool odd_alive(int fd, uint64_t id, void *ctx)
{
	(void)ctx;
	return fd % 2 && id == (uint64_t)(1000 + fd);
}

START_TEST(closed_sockets_are_pruned_and_numbers_reused)
{
	struct conn_guard *g;
	uint8_t a[16];
	int ev[2], fd;
	unsigned int n;

	v4(a, "127.0.0.1");
	ck_assert_int_eq(conn_guard_new(&g, 8, 8), 0);
	for (fd = 1; fd <= 6; fd++)
		ck_assert_int_eq(admit(g, fd, a, fd, ev, &n), 0);
	conn_guard_prune(g, odd_alive, NULL);
	ck_assert_uint_eq(conn_guard_count(g, a), 3);
	/* fd 3 comes back for a new socket: one entry, not two */
	ck_assert_int_eq(admit(g, 3, a, 9, ev, &n), 0);
	ck_assert_uint_eq(conn_guard_count(g, a), 3);
	conn_guard_free(g);
}
END_TEST

START_TEST(peer_strings_and_socket_addresses_agree)
{
	uint8_t a[16], b[16];
	uint16_t p, q;
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(5000) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(6000) };

	inet_pton(AF_INET, "192.168.1.7", &in.sin_addr);
	ck_assert(conn_guard_addr(&in, sizeof(in), a, &p));
	ck_assert(conn_guard_peer("ipv4:192.168.1.7:5000", b, &q));
	ck_assert_uint_eq(p, q);
	ck_assert_mem_eq(a, b, 16);
	inet_pton(AF_INET6, "fe80::1", &in6.sin6_addr);
	ck_assert(conn_guard_addr(&in6, sizeof(in6), a, &p));
	ck_assert(conn_guard_peer("ipv6:[fe80::1]:6000", b, &q));
	ck_assert_mem_eq(a, b, 16);
	ck_assert(conn_guard_peer("ipv6:%5Bfe80::1%5D:6000", b, &q));
	ck_assert_mem_eq(a, b, 16);
	ck_assert_uint_eq(q, 6000);
	ck_assert(!conn_guard_peer("unix:/run/iopulse.sock", b, &q));
	ck_assert(!conn_guard_peer("fd:7", b, &q));
	ck_assert(!conn_guard_peer("ipv4:1.2.3.4:99999", b, &q));
	ck_assert(!conn_guard_peer("ipv4:1.2.3:80", b, &q));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conn_guard");
	TCase *tc = tcase_create("guard");

	tcase_add_test(tc, one_address_gets_its_oldest_unsettled_connection_shut);
	tcase_add_test(tc, a_full_table_shuts_the_busiest_address_oldest);
	tcase_add_test(tc, http_connections_settle_while_serving_and_expire_when_pending);
	tcase_add_test(tc, closed_sockets_are_pruned_and_numbers_reused);
	tcase_add_test(tc, peer_strings_and_socket_addresses_agree);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
