// SPDX-License-Identifier: GPL-2.0
/*
 * Cross-host checks for visock: both hosts must run the same visock
 * build with the same user API, and RDMA must be usable on both.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/visock.h>

#include "harness.h"

#define SRCVERSION_PATH "/sys/module/visock/srcversion"
#define IB_CLASS "/sys/class/infiniband"

static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	char *nl;

	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		errno = EIO;
		return -1;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

/* Exchange one line with the peer: send @mine, return the peer's. */
static void swap_line(struct vt_ctx *c, const char *key, const char *mine,
		      char *peer, size_t size)
{
	char buf[CTL_LINE_MAX];
	size_t klen = strlen(key);

	vt_send(c, "%s %s", key, mine);
	vt_recv(c, buf, sizeof(buf));
	if (strncmp(buf, key, klen) || buf[klen] != ' ')
		vt_fail("control channel: expected \"%s ...\", got \"%s\"", key,
			buf);
	snprintf(peer, size, "%s", buf + klen + 1);
}

static void same_srcversion(struct vt_ctx *c)
{
	char mine[128], peer[128];
	bool found = read_line(SRCVERSION_PATH, mine, sizeof(mine)) == 0;

	if (!found)
		snprintf(mine, sizeof(mine), "-");
	swap_line(c, "SRCVERSION", mine, peer, sizeof(peer));
	vt_diag("srcversion here %s, peer %s", mine, peer);
	/*
	 * modpost only records a srcversion for modules with a
	 * MODULE_VERSION() (unless CONFIG_MODULE_SRCVERSION_ALL=y).
	 */
	vt_assert(found || access("/sys/module/visock", F_OK) == 0,
		  "visock is not loaded here");
	vt_assert(found,
		  "no %s here: visock has no MODULE_VERSION() and the kernel no CONFIG_MODULE_SRCVERSION_ALL",
		  SRCVERSION_PATH);
	vt_assert(strcmp(peer, "-"), "no visock srcversion on the peer");
	vt_assert(!strcmp(mine, peer),
		  "different visock builds: srcversion %s here, %s on the peer",
		  mine, peer);
}

static void same_uapi(struct vt_ctx *c)
{
	char mine[256], peer[256];

	snprintf(mine, sizeof(mine),
		 "AF=%d TCP4=%d TCP6=%d PROTOMAX=%d SOL=%d MODE=%d FBOPT=%d INFO=%d/%zu modes=%d,%d,%d,%d fb=%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d max=%d",
		 AF_VISOCK, VISOCKPROTO_TCP4, VISOCKPROTO_TCP6,
		 VISOCKPROTO_MAX, SOL_VISOCK, VISOCK_MODE,
		 VISOCK_FALLBACK_REASON, VISOCK_INFO,
		 sizeof(struct visock_info), VISOCK_MODE_INIT,
		 VISOCK_MODE_HANDSHAKE, VISOCK_MODE_RDMA, VISOCK_MODE_TCP,
		 VISOCK_FB_NONE, VISOCK_FB_DISABLED, VISOCK_FB_PEER_NO_VISOCK,
		 VISOCK_FB_NO_DEVICE, VISOCK_FB_PEER_NO_DEVICE,
		 VISOCK_FB_VERSION, VISOCK_FB_BAD_MSG, VISOCK_FB_TIMEOUT,
		 VISOCK_FB_NOMEM, VISOCK_FB_PEER_DECLINE, VISOCK_FB_QP_SETUP,
		 VISOCK_FB_BUF_EXHAUSTED, VISOCK_FB_DEVICE_GONE,
		 VISOCK_FB_SYNCOOKIE, VISOCK_FB_IO, VISOCK_FB_POLICY,
		 VISOCK_FB_MAX);
	swap_line(c, "UAPI", mine, peer, sizeof(peer));
	vt_assert(!strcmp(mine, peer),
		  "user API constants differ:\n here: %s\n peer: %s", mine,
		  peer);
}

/*
 * Describe the RDMA ports of this host ("mlx5_0/1=ACTIVE ...") and count
 * the ACTIVE ones.
 */
static int rdma_ports(char *buf, size_t size, int *nports)
{
	struct dirent *dev, *port;
	DIR *ddir, *pdir;
	char path[1024], state[64];
	size_t off = 0;
	int active = 0;

	*nports = 0;
	buf[0] = '\0';
	ddir = opendir(IB_CLASS);
	if (!ddir)
		return 0;
	while ((dev = readdir(ddir))) {
		if (dev->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), IB_CLASS "/%s/ports", dev->d_name);
		pdir = opendir(path);
		if (!pdir)
			continue;
		while ((port = readdir(pdir))) {
			if (port->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), IB_CLASS "/%s/ports/%s/state",
				 dev->d_name, port->d_name);
			if (read_line(path, state, sizeof(state)))
				continue;
			(*nports)++;
			/* The file reads like "4: ACTIVE". */
			if (strstr(state, "ACTIVE"))
				active++;
			if (off < size)
				off += snprintf(buf + off, size - off, "%s%s/%s=%s",
						off ? " " : "", dev->d_name,
						port->d_name, state);
		}
		closedir(pdir);
	}
	closedir(ddir);
	return active;
}

static void rdma_port_active(struct vt_ctx *c)
{
	char mine[600], peer[600], reason[128];
	int nports, active;

	active = rdma_ports(mine, sizeof(mine), &nports);
	vt_diag("RDMA ports here: %s", nports ? mine : "none");
	if (!nports)
		snprintf(reason, sizeof(reason), "no RDMA device");
	else
		snprintf(reason, sizeof(reason),
			 "no RDMA device with an ACTIVE port (%d ports)",
			 nports);
	swap_line(c, "RDMA", nports ? mine : "none", peer, sizeof(peer));
	vt_diag("RDMA ports on the peer: %s", peer);
	vt_agree(c, active > 0, reason);
}

static const struct vt_test tests[] = {
	{ "srcversion", same_srcversion, same_srcversion, 0,
	  "both hosts run the same visock build" },
	{ "uapi_constants", same_uapi, same_uapi, 0,
	  "both hosts' tests were built with the same user API" },
	{ "rdma_device", rdma_port_active, rdma_port_active, 0,
	  "an ACTIVE RDMA port on both hosts" },
};

int main(int argc, char **argv)
{
	return vt_main(argc, argv, "visock_test", tests,
		       ARRAY_SIZE(tests));
}
