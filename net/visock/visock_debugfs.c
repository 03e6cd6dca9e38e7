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
 * fault/: fault injection points, see visock_fault.c.
 */
#include <linux/debugfs.h>

#include "visock.h"
#include "visock_fault.h"

u32 visock_test_raw_handshake;

static struct dentry *visock_debugfs_dir;

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
