/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Line based control channel used to coordinate the two halves of a
 * visock test (running on two hosts, or on one host in two processes).
 *
 * Every message is one line of text terminated by '\n'.  Reads are done
 * one byte at a time so that no data is ever buffered in user space:
 * a descriptor can be handed to a child process at any point.
 */
#ifndef VISOCK_SELFTEST_CTL_H
#define VISOCK_SELFTEST_CTL_H

#include <stddef.h>

#include "compiler.h"

#define CTL_LINE_MAX		1024
#define CTL_PORT_DEFAULT	7790

/*
 * Listen for control connections on @port (0: any free port).  @addr may
 * be NULL (all addresses, IPv6 dual stack when available) or a numeric
 * address.  Returns the listening descriptor or -1 with errno set.
 */
int ctl_listen(const char *addr, int port);

/* Port a listening or connected control socket is bound to, or -1. */
int ctl_local_port(int fd);

/* Wait up to @timeout_ms for a connection; -1 with errno ETIMEDOUT. */
int ctl_accept(int lfd, int timeout_ms);

/*
 * Connect to @host:@port, retrying (connection refused, unreachable,
 * name not resolvable yet...) until @timeout_ms have passed.
 */
int ctl_connect(const char *host, int port, int timeout_ms);

/* Send one formatted line; the text must not contain a newline. */
__printf(2, 3) int ctl_writeln(int fd, const char *fmt, ...);

/*
 * Read one line (without its newline) into @buf.  Returns its length, or
 * -1 with errno ETIMEDOUT (nothing within @timeout_ms), ECONNABORTED
 * (peer closed the connection), EMSGSIZE (line too long) or the error of
 * the failed system call.
 */
int ctl_readln(int fd, char *buf, size_t size, int timeout_ms);

/*
 * Read one line and check that it is exactly @want; -1 with errno EPROTO
 * if it is not (ctl_last_line() then tells what was received).
 */
int ctl_expectln(int fd, const char *want, int timeout_ms);

/* Both sides call this with the same @tag; returns when both got there. */
int ctl_barrier(int fd, const char *tag, int timeout_ms);

/* The last line received by ctl_readln()/ctl_expectln(). */
const char *ctl_last_line(void);

/* Milliseconds of CLOCK_MONOTONIC. */
long long ctl_now_ms(void);

#endif /* VISOCK_SELFTEST_CTL_H */
