// SPDX-License-Identifier: GPL-2.0
/*
 * visock: debugfs test hooks, /sys/kernel/debug/visock/.
 *
 * Test-only knobs for the selftests; root only, off by default, and
 * without effect on anything but visock sockets created while they are
 * set.
 *
 * raw_handshake (0/1): a connection whose SYN and SYN-ACK both announced
 *	visock skips the in-band handshake on this host and becomes a plain
 *	TCP stream for the application, which can then speak the handshake
 *	protocol itself.  The hostile-peer selftest uses it to send the
 *	other host malformed handshake messages.
 *
 * hs_delay_ms: a client's handshake work first runs this many
 *	milliseconds after its TCP connection is established (unless the
 *	server's bytes wake it earlier), as on a host whose queue pair setup
 *	or workers are that slow.  The handshake tests use it to check
 *	that a client too late for the server's handshake timeout sends
 *	nothing and both ends settle on TCP.
 *
 * mute_end_flags (0/1): connections send no closed or abort flag (the
 *	cursor message goes without it, and a connection that ends without
 *	having sent one does not send one then), like a peer that cannot:
 *	the peer's end of a connection that ended lingers on its QP.  The
 *	link group tests use it to check that lingering connections cannot
 *	fill a link group.
 *
 * swrep_delay_ms: a lazy client handles the switch reply this many
 *	milliseconds after it arrived, as on a host whose workers are that
 *	slow; the peer's messages that follow the reply on the queue pair
 *	arrive first.  The security tests use it to check that such a
 *	message is taken as the start of the new connection, not as a
 *	protocol violation.
 *
 * sw_delay_ms: a lazy connection handles the peer's SWITCH or DECLINE
 *	(the message after the peer's byte L - 1) this many milliseconds
 *	after it first saw it complete in TCP's receive queue, as on a host
 *	whose workers are that slow.  The link group tests use it to make
 *	both sides start their switch at once.
 *
 * cdc_token, cdc_inject, cdc_injected: cursor message injection.  Write
 *	a connection's local token (VISOCK_INFO vi_local_token) to
 *	cdc_token, then a VISOCK_TEST_CDC_* mode to cdc_inject: the
 *	connection's next cursor message is followed by a copy with a
 *	stale (1) or unknown (2) token, or carries an out-of-range
 *	producer cursor (3), consumer cursor (4) or credit count (5).
 *	cdc_inject goes back to 0 and cdc_injected counts up when it has
 *	been done.  The peer must drop the copy and count it
 *	(lgr_stale_dropped), or reset that one connection.
 *
 * stale_write (0/1), stale_done, stale_status, stale_old_rkey,
 *	stale_new_rkey (read only): a late writer.  With stale_write set,
 *	the next RDMA WRITE of a connection on a QP where an earlier
 *	connection ended is preceded by one 8-byte RDMA WRITE to offset 0
 *	of the ring that earlier connection wrote to, with the key it
 *	knew, as a peer would whose WRITE was delayed; stale_write goes
 *	back to 0.  stale_old_rkey and stale_new_rkey are that key and the
 *	key of the writing connection's peer ring; when the WRITE
 *	completes, stale_status is its completion status (enum
 *	ib_wc_status) and stale_done counts up.  The peer's device must
 *	refuse it (IB_WC_REM_ACCESS_ERR, 10): the ring went to another
 *	connection with a new key.
 *
 * rekey_records: records one key of a transformed connection protects
 *	at most, instead of the pair's limit (design.rst, "Key updates"),
 *	for connections set up while it is set (0: the pair's limit).  The
 *	security tests set it low on both hosts so that a stream of a few
 *	MiB changes keys many times.  A connection without key updates (a
 *	peer that did not announce them) ends at that many records.
 *
 * forge_token, forge_write, forge_posted, forge_done, forge_status
 *	(the last three read only): an RDMA WRITE forged into the peer's
 *	ring, as by an attacker on the path who saw the ring's key in the
 *	handshake and a WRITE of the connection on the wire.  Write a
 *	connection's local token (VISOCK_INFO vi_local_token) to
 *	forge_token, then a byte count (1 to VISOCK_TEST_FORGE_MAX) to
 *	forge_write: at the end of that connection's next sendmsg() that
 *	leaves nothing unposted, one RDMA WRITE WITH IMMEDIATE goes
 *	through the connection's queue pair with the peer's ring key and
 *	address to where the connection's next byte would land, its
 *	immediate naming the peer's connection and counting the forged
 *	bytes; the connection's own cursors do not move.  The bytes are
 *	that many of the marker "FORGED!\n" repeated, or, when the
 *	connection has a transform, a record of them: a header with the
 *	next sequence number and an all-zero tag.  forge_write goes back
 *	to 0 and forge_posted counts up once it was posted; when it
 *	completes, forge_status is its completion status (enum
 *	ib_wc_status) and forge_done counts up.  Without a transform the
 *	peer delivers the marker; with one it must reset the connection
 *	(rec_auth_failed).
 *
 * socks (read only): one line per visock sock of every namespace that
 *	still exists, closed or not (visock_diag_show_all()); what holds
 *	the module when rmmod says it is in use.
 *
 * fault/: fault injection points, see visock_fault.c.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "visock_debugfs.h"
#include "visock_diag.h"
#include "visock_fault.h"

u32 visock_test_raw_handshake;
u32 visock_test_hs_delay_ms;
u32 visock_test_mute_end_flags;
u32 visock_test_cdc_inject;
u32 visock_test_cdc_token;
u32 visock_test_cdc_injected;
u32 visock_test_swrep_delay_ms;
u32 visock_test_stale_write;
u32 visock_test_stale_done;
u32 visock_test_stale_status;
u32 visock_test_stale_old_rkey;
u32 visock_test_stale_new_rkey;
u32 visock_test_sw_delay_ms;
u32 visock_test_rekey_records;
u32 visock_test_forge_token;
u32 visock_test_forge_write;
u32 visock_test_forge_posted;
u32 visock_test_forge_done;
u32 visock_test_forge_status;

static struct dentry *visock_debugfs_dir;

static int visock_socks_show(struct seq_file *seq, void *unused)
{
	visock_diag_show_all(seq);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(visock_socks);

/**
 * visock_debugfs_init() - create /sys/kernel/debug/visock
 *
 * Failure is not an error: the hooks are simply absent.
 *
 * Context: module init.
 */
void visock_debugfs_init(void)
{
	visock_debugfs_dir = debugfs_create_dir("visock", NULL);
	debugfs_create_u32("raw_handshake", 0600, visock_debugfs_dir,
			   &visock_test_raw_handshake);
	debugfs_create_u32("hs_delay_ms", 0600, visock_debugfs_dir,
			   &visock_test_hs_delay_ms);
	debugfs_create_u32("mute_end_flags", 0600, visock_debugfs_dir,
			   &visock_test_mute_end_flags);
	debugfs_create_u32("cdc_token", 0600, visock_debugfs_dir,
			   &visock_test_cdc_token);
	debugfs_create_u32("cdc_inject", 0600, visock_debugfs_dir,
			   &visock_test_cdc_inject);
	debugfs_create_u32("cdc_injected", 0400, visock_debugfs_dir,
			   &visock_test_cdc_injected);
	debugfs_create_u32("swrep_delay_ms", 0600, visock_debugfs_dir,
			   &visock_test_swrep_delay_ms);
	debugfs_create_u32("stale_write", 0600, visock_debugfs_dir,
			   &visock_test_stale_write);
	debugfs_create_u32("stale_done", 0400, visock_debugfs_dir,
			   &visock_test_stale_done);
	debugfs_create_u32("stale_status", 0400, visock_debugfs_dir,
			   &visock_test_stale_status);
	debugfs_create_u32("stale_old_rkey", 0400, visock_debugfs_dir,
			   &visock_test_stale_old_rkey);
	debugfs_create_u32("stale_new_rkey", 0400, visock_debugfs_dir,
			   &visock_test_stale_new_rkey);
	debugfs_create_u32("sw_delay_ms", 0600, visock_debugfs_dir,
			   &visock_test_sw_delay_ms);
	debugfs_create_u32("rekey_records", 0600, visock_debugfs_dir,
			   &visock_test_rekey_records);
	debugfs_create_u32("forge_token", 0600, visock_debugfs_dir,
			   &visock_test_forge_token);
	debugfs_create_u32("forge_write", 0600, visock_debugfs_dir,
			   &visock_test_forge_write);
	debugfs_create_u32("forge_posted", 0400, visock_debugfs_dir,
			   &visock_test_forge_posted);
	debugfs_create_u32("forge_done", 0400, visock_debugfs_dir,
			   &visock_test_forge_done);
	debugfs_create_u32("forge_status", 0400, visock_debugfs_dir,
			   &visock_test_forge_status);
	debugfs_create_file("socks", 0400, visock_debugfs_dir, NULL,
			    &visock_socks_fops);
	visock_fault_debugfs_init(visock_debugfs_dir);
}

/**
 * visock_debugfs_exit() - remove /sys/kernel/debug/visock
 *
 * Context: module exit.
 */
void visock_debugfs_exit(void)
{
	debugfs_remove_recursive(visock_debugfs_dir);
	visock_debugfs_dir = NULL;
	visock_fault_exit();
}
