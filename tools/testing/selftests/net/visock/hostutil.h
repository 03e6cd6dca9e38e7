/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host state for the visock tests that need the data path: sysctls and
 * debugfs files, the module's counters in /proc/net/visock, and a
 * socket's VISOCK_INFO.
 */
#ifndef VISOCK_SELFTEST_HOSTUTIL_H
#define VISOCK_SELFTEST_HOSTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/visock.h>

#include "harness.h"

#define HU_ENABLE_PATH	"/proc/sys/net/visock/enable"
#define HU_SYSCTL_DIR	"/proc/sys/net/visock/"
#define HU_PROC_PATH	"/proc/net/visock"
#define HU_DEBUGFS_DIR	"/sys/kernel/debug/visock/"

/* Contents of @path without trailing blanks; -1 if it cannot be read. */
int hu_read_text(const char *path, char *buf, size_t size);
/* Number in @path, -1 if it cannot be read. */
long long hu_read_ll(const char *path);
/* Number in @path into *@val: 0, or -1 if it cannot be read. */
int hu_read_int(const char *path, int *val);
/* Write @val to @path: 0, or -1 with errno set. */
int hu_write_ll(const char *path, long long val);
/* Same, failing the test if it cannot. */
void hu_set_ll(const char *path, long long val);

/*
 * The module's debugfs file @name can be written (mounting debugfs on
 * /sys/kernel/debug if it is not yet).
 */
bool hu_debugfs_ready(const char *name);

/* Counter @name of /proc/net/visock, -1 if absent. */
long long hu_proc_get(const char *name);
/* Same, failing the test if absent. */
long long hu_proc(const char *name);
/* Wait up to @ms for counter @name to be @want; returns its value. */
long long hu_proc_wait(const char *name, long long want, int ms);
/* Wait up to @ms for counter @name to reach @want; returns its value. */
long long hu_proc_wait_ge(const char *name, long long want, int ms);

/* Fallback reasons by value, as in /proc/net/visock (fallback_<name>). */
extern const char *const hu_fb_names[];
#define HU_NFB	23
/* The fallback counters, v[1..HU_NFB-1] (fails the test if absent). */
void hu_fb_snap(long long *v);

/*
 * net.visock sysctls a program changes: read when it starts
 * (hu_sysctls_save()), put back by its cleanup hook
 * (hu_sysctls_restore()) after every test half, however it ended.
 */
struct hu_saved_sysctl {
	const char *name;	/* below /proc/sys/net/visock/ */
	long long val;		/* -1: could not be read, left alone */
};

void hu_sysctls_save(struct hu_saved_sysctl *s, size_t n);
/* Only writes what differs; never fails the test (cleanup hooks). */
void hu_sysctls_restore(const struct hu_saved_sysctl *s, size_t n);
/* net.visock.@name, -1 if it cannot be read. */
long long hu_sysctl(const char *name);
/* Set net.visock.@name, failing the test if it cannot. */
void hu_sysctl_set(const char *name, long long val);

/* The module's fault points (debugfs visock/fault/). */
#define HU_FAULT_DIR	HU_DEBUGFS_DIR "fault/"
/* The fault points are there (mounting debugfs if needed). */
bool hu_fault_ready(void);
/* Faults injected at @point since the module was loaded. */
long long hu_fault_injected(const char *point);
/* Arm @point for its next @times calls; fails the test if it cannot. */
void hu_fault_arm(const char *point, int times);
void hu_fault_disarm(void);

/*
 * Why both hosts cannot run an RDMA data path test ("" if they can),
 * for programs that add checks of their own before vt_agree().
 */
const char *hu_rdma_missing(const struct vt_ctx *c);
/* Both halves: skip unless both hosts can run an RDMA data path test. */
void hu_need_rdma(struct vt_ctx *c);
/* VISOCK_INFO of @fd (the whole structure). */
void hu_get_info(int fd, struct visock_info *vi);
/*
 * @fd is in RDMA mode (false if VISOCK_INFO fails too; never fails the
 * test, for programs outside the test harness).  @qpn, if not NULL, gets
 * its local QP number.
 */
bool hu_on_rdma(int fd, uint32_t *qpn);
/* @fd must be in RDMA mode with rings on both ends; @vi may be NULL. */
void hu_expect_rdma(int fd, const char *what, struct visock_info *vi);
/* Name of fallback reason @r, "?" if unknown. */
const char *hu_fb_name(unsigned int r);

/* visockctl: $VISOCKCTL, the source tree's ($VISOCK_SRC), or PATH's. */
const char *hu_visockctl_path(void);
/* Inode number of socket @fd, as visockctl lists it. */
unsigned long hu_sock_ino(int fd);

/* A blocking AF_VISOCK stream socket (IPv4), close-on-exec; -1 on error. */
int hu_visock_socket(void);
/*
 * A visock connection to @host:@port (IPv4), tried every @every_ms until
 * one succeeds or @wait_ms passed: its fd, or -1.
 */
int hu_connect_retry(const char *host, int port, int wait_ms, int every_ms);

/*
 * A test bed guest that dies on purpose: leave the result files its job
 * would have written ($VISOCK_RESULTS: dmesg.txt, rc 0), say so as @who,
 * then power off at once (sysrq "o").  Does not return.
 */
__noreturn void hu_power_off(const char *who);

#endif /* VISOCK_SELFTEST_HOSTUTIL_H */
