// SPDX-License-Identifier: GPL-2.0
/*
 * Host state for the visock data path tests; see hostutil.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mount.h>
#include <sys/socket.h>

#include "ctl.h"
#include "hostutil.h"

int hu_read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

long long hu_read_ll(const char *path)
{
	char buf[64];

	if (hu_read_text(path, buf, sizeof(buf)) || !buf[0])
		return -1;
	return strtoll(buf, NULL, 0);
}

int hu_write_ll(const char *path, long long val)
{
	char buf[32];
	int fd, len, ret = 0, err;

	len = snprintf(buf, sizeof(buf), "%lld\n", val);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != len)
		ret = -1;
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

void hu_set_ll(const char *path, long long val)
{
	vt_assert(!hu_write_ll(path, val), "write %lld to %s: %s", val, path,
		  strerror(errno));
}

bool hu_debugfs_ready(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), HU_DEBUGFS_DIR "%s", name);
	if (access(path, W_OK) == 0)
		return true;
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	return access(path, W_OK) == 0;
}

long long hu_proc_get(const char *name)
{
	char line[256], key[128];
	long long val = -1, v;
	FILE *f;

	f = fopen(HU_PROC_PATH, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lld", key, &v) == 2 &&
		    !strcmp(key, name)) {
			val = v;
			break;
		}
	}
	fclose(f);
	return val;
}

long long hu_proc(const char *name)
{
	long long v = hu_proc_get(name);

	vt_assert(v >= 0, "%s has no counter %s", HU_PROC_PATH, name);
	return v;
}

long long hu_proc_wait(const char *name, long long want, int ms)
{
	long long end = ctl_now_ms() + (long long)ms * vt_time_scale, v;

	while ((v = hu_proc(name)) != want && ctl_now_ms() < end)
		usleep(50 * 1000);
	return v;
}

long long hu_proc_wait_ge(const char *name, long long want, int ms)
{
	long long end = ctl_now_ms() + (long long)ms * vt_time_scale, v;

	while ((v = hu_proc(name)) < want && ctl_now_ms() < end)
		usleep(50 * 1000);
	return v;
}

const char *const hu_fb_names[HU_NFB] = {
	"none", "disabled", "peer_no_visock", "no_device", "peer_no_device",
	"version", "bad_msg", "timeout", "nomem", "peer_decline", "qp_setup",
	"buf_exhausted", "device_gone", "syncookie", "io", "policy",
	"link_busy", "link_gone", "qp_limit",
};

void hu_fb_snap(long long *v)
{
	char name[64];
	unsigned int i;

	for (i = 1; i < HU_NFB; i++) {
		snprintf(name, sizeof(name), "fallback_%s", hu_fb_names[i]);
		v[i] = hu_proc(name);
	}
}

void hu_need_rdma(struct vt_ctx *c)
{
	const char *why = "";

	if (c->family != VT_FAMILY_VISOCK)
		why = "family inet: needs AF_VISOCK";
	else if (c->loopback)
		why = "both halves on one host: loopback connections do not use RDMA";
	else if (hu_read_ll(HU_ENABLE_PATH) < 0)
		why = "visock is not loaded";
	else if (hu_read_ll(HU_ENABLE_PATH) != 1)
		why = "net.visock.enable is not 1";
	else if (hu_proc_get("rdma_devices") <= 0)
		why = "no RDMA device";
	vt_agree(c, !*why, why);
}

void hu_get_info(int fd, struct visock_info *vi)
{
	socklen_t len = sizeof(*vi);

	memset(vi, 0, sizeof(*vi));
	vt_try(getsockopt(fd, SOL_VISOCK, VISOCK_INFO, vi, &len),
	       "getsockopt(VISOCK_INFO)");
	vt_assert(len == sizeof(*vi),
		  "VISOCK_INFO: optlen %u, expected %zu (data path counters)",
		  len, sizeof(*vi));
}

void hu_expect_rdma(int fd, const char *what, struct visock_info *vi)
{
	struct visock_info tmp;

	if (!vi)
		vi = &tmp;
	hu_get_info(fd, vi);
	vt_assert(vi->vi_mode == VISOCK_MODE_RDMA,
		  "%s: mode %u (fallback reason %u), expected RDMA (%u)",
		  what, vi->vi_mode, vi->vi_fallback_reason, VISOCK_MODE_RDMA);
	vt_assert(vi->vi_rbuf_size && vi->vi_peer_rbuf_size,
		  "%s: ring sizes %u/%u", what, vi->vi_rbuf_size,
		  vi->vi_peer_rbuf_size);
}
