/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: test hooks in /sys/kernel/debug/visock/ (visock_debugfs.c).
 *
 * Test only: each is off (0) by default.  The fault injection points
 * that live in the same directory are in visock_fault.h.
 */
#ifndef _NET_VISOCK_DEBUGFS_H
#define _NET_VISOCK_DEBUGFS_H

#include <linux/types.h>

/* Test hook: connections skip the in-band handshake (debugfs) */
extern u32 visock_test_raw_handshake;
/* Test hook: a client starts its handshake this many ms late (debugfs) */
extern u32 visock_test_hs_delay_ms;
/* Test hook: no closed or abort flag is sent (debugfs) */
extern u32 visock_test_mute_end_flags;
/* Test hook: a lazy client handles the switch reply this many ms late */
extern u32 visock_test_swrep_delay_ms;
/* Test hook: one RDMA WRITE with the key of an ended connection's ring */
extern u32 visock_test_stale_write;
extern u32 visock_test_stale_done;
extern u32 visock_test_stale_status;
extern u32 visock_test_stale_old_rkey;
extern u32 visock_test_stale_new_rkey;
/* Test hook: a lazy connection handles the peer's SWITCH this many ms late */
extern u32 visock_test_sw_delay_ms;
/* Test hook: records per key of new transformed connections (0: pair's) */
extern u32 visock_test_rekey_records;

/*
 * Cursor message injection (debugfs cdc_inject, test only): the next
 * cursor message of the connection whose local token is
 * visock_test_cdc_token is followed by a copy for a wrong connection
 * (STALE: same slot index, other random part; UNKNOWN: an index no
 * connection should have) or itself carries an impossible value.
 */
enum {
	VISOCK_TEST_CDC_OFF,
	VISOCK_TEST_CDC_STALE,
	VISOCK_TEST_CDC_UNKNOWN,
	VISOCK_TEST_CDC_BAD_PROD,
	VISOCK_TEST_CDC_BAD_CONS,
	VISOCK_TEST_CDC_BAD_CREDITS,
	VISOCK_TEST_CDC_MAX = VISOCK_TEST_CDC_BAD_CREDITS,
};

/*
 * Forged RDMA WRITE (debugfs forge_write, test only): the connection
 * whose local token is visock_test_forge_token writes that many bytes of
 * VISOCK_TEST_FORGE_MARKER (a record of them with a transform) into the
 * peer's ring behind its own cursors.
 */
#define VISOCK_TEST_FORGE_MAX		1024
#define VISOCK_TEST_FORGE_MARKER	"FORGED!\n"

extern u32 visock_test_forge_token;
extern u32 visock_test_forge_write;
extern u32 visock_test_forge_posted;
extern u32 visock_test_forge_done;
extern u32 visock_test_forge_status;

extern u32 visock_test_cdc_inject;
extern u32 visock_test_cdc_token;
extern u32 visock_test_cdc_injected;
void visock_debugfs_init(void);
void visock_debugfs_exit(void);

#endif /* _NET_VISOCK_DEBUGFS_H */
