/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Socket and payload helpers for the visock stream tests.  Every helper
 * fails the running test (vt_fail()) instead of returning an error.
 */
#ifndef VISOCK_SELFTEST_SOCKUTIL_H
#define VISOCK_SELFTEST_SOCKUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "harness.h"

#define SU_WAIT_MS	10000	/* waiting for an event the peer caused */

/* Stream socket of family @fam (AF_VISOCK or plain TCP), IPv4 or IPv6. */
int su_socket(enum vt_family fam, bool v6, int flags);
/*
 * Listening socket (socket flags @flags) bound to the wildcard address
 * and an ephemeral port.
 */
int su_listen(enum vt_family fam, bool v6, int backlog, int flags);
int su_port(int fd);
/* Address of the peer host (client side) at @port. */
socklen_t su_peer_addr(const struct vt_ctx *c, bool v6, int port,
		       struct sockaddr_storage *ss);
/* Wait (bounded) for a connection and accept4() it with @flags. */
int su_accept(int lfd, int flags);
/* Blocking connect of a new socket of family @fam to the peer's @port. */
int su_connect(const struct vt_ctx *c, enum vt_family fam, bool v6,
	       int port);
/*
 * Connected pair, one end per half: the server listens and sends the
 * port over the control channel, the client connects; each half gets
 * its end.
 */
int su_pair_fam(struct vt_ctx *c, enum vt_family fam, bool v6);
/* su_pair_fam() with the family under test over IPv4. */
int su_pair(struct vt_ctx *c);
/* Server: announce a listener's port; client: receive it. */
void su_send_port(struct vt_ctx *c, int lfd);
int su_recv_port(struct vt_ctx *c);

void su_write_all(int fd, const void *buf, size_t len);
void su_read_all(int fd, void *buf, size_t len);
/* Close @fd with SO_LINGER {1, 0}: the connection is reset. */
void su_reset(int fd);
/* Next read must report end of stream. */
void su_expect_eof(int fd);
/*
 * Read @len bytes within @timeout_ms: the count read (short on EOF), or
 * -1 with errno set on an error or, with ETIMEDOUT, when time is up.
 * Does not fail the test.
 */
ssize_t su_read_within(int fd, void *buf, size_t len, int timeout_ms);

/* Current revents for @events (timeout 0 unless given). */
short su_poll(int fd, short events, int timeout_ms);
/* Wait up to SU_WAIT_MS for one of @events; fails the test otherwise. */
short su_wait(int fd, short events, const char *what);
/* Wait until FIONREAD reports at least @bytes. */
void su_wait_bytes(int fd, int bytes);

/* int socket options; messages name the option (@name stringified). */
#define su_getint(fd, level, name) su_getint_at(fd, level, name, #name)
#define su_setint(fd, level, name, val)				\
	su_setint_at(fd, level, name, #name, val)
int su_getint_at(int fd, int level, int name, const char *what);
void su_setint_at(int fd, int level, int name, const char *what, int val);
void su_nonblock(int fd, bool on);
const char *su_addr_str(const struct sockaddr *sa, char *buf, size_t size);
const char *su_revents_str(short revents, char *buf, size_t size);

/*
 * Self-describing payload stream: a 24 byte header (magic, seed, payload
 * length), pseudo-random payload derived from the seed, and an 8 byte
 * FNV-1a checksum of the payload.  The receiver regenerates the payload
 * and checks every byte, the length and the checksum.
 */
#define PL_HDR_LEN	24
#define PL_TRAILER_LEN	8

struct pl_tx {
	uint64_t seed;
	uint64_t len;		/* payload bytes */
	uint64_t pos;		/* stream bytes produced */
	uint64_t sum;
};

struct pl_rx {
	uint8_t hdr[PL_HDR_LEN];
	uint8_t trailer[PL_TRAILER_LEN];
	uint64_t seed;
	uint64_t len;
	uint64_t want_len;	/* UINT64_MAX: any */
	uint64_t pos;		/* stream bytes consumed */
	uint64_t sum;
	char err[160];
};

void pl_tx_init(struct pl_tx *tx, uint64_t len);
uint64_t pl_total(uint64_t len);
size_t pl_tx_fill(struct pl_tx *tx, uint8_t *buf, size_t size);
bool pl_tx_done(const struct pl_tx *tx);
void pl_rx_init(struct pl_rx *rx, uint64_t want_len);
/* 0, or -1 with the reason in rx->err. */
int pl_rx_feed(struct pl_rx *rx, const uint8_t *buf, size_t len);
bool pl_rx_done(const struct pl_rx *rx);

/* Blocking: send a whole stream of @len payload bytes. */
void pl_send(int fd, uint64_t len);
/* Blocking: receive and check a whole stream, then expect EOF. */
void pl_recv(int fd, uint64_t len);
/* Check a stream read from @fd by a custom reader: feed + fail. */
void pl_check(struct pl_rx *rx, const void *buf, size_t len);

/*
 * Non-blocking transfer over @n sockets at once: each sends its own
 * stream of @len bytes, then shuts down writing, and receives and checks
 * the peer's stream up to EOF.
 */
void su_xfer(const int *fds, int n, uint64_t len, int timeout_ms);

#endif /* VISOCK_SELFTEST_SOCKUTIL_H */
