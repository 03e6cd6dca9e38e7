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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>

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

int hu_read_int(const char *path, int *val)
{
	long long v = hu_read_ll(path);

	if (v < 0)
		return -1;
	*val = (int)v;
	return 0;
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

/*
 * The number after @name in @path, a file of "name number" lines, into
 * *@val (-1 if no line has it).  Returns -1 with errno set if @path
 * cannot be opened, else 0.
 */
static int kv_find(const char *path, const char *name, long long *val)
{
	char line[256], key[128];
	long long v;
	FILE *f;

	*val = -1;
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lld", key, &v) == 2 &&
		    !strcmp(key, name)) {
			*val = v;
			break;
		}
	}
	fclose(f);
	return 0;
}

long long hu_proc_get(const char *name)
{
	long long val;

	kv_find(HU_PROC_PATH, name, &val);
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
	"link_busy", "link_gone", "qp_limit", "auth", "auth_missing",
	"xform_required", "xform_mem",
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

const char *hu_fb_name(unsigned int r)
{
	return r < HU_NFB ? hu_fb_names[r] : "?";
}

void hu_sysctls_save(struct hu_saved_sysctl *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		s[i].val = hu_sysctl(s[i].name);
}

void hu_sysctls_restore(const struct hu_saved_sysctl *s, size_t n)
{
	char path[128];
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i].val < 0 || hu_sysctl(s[i].name) == s[i].val)
			continue;
		snprintf(path, sizeof(path), HU_SYSCTL_DIR "%s", s[i].name);
		if (hu_write_ll(path, s[i].val))
			fprintf(stderr, "# restoring %s failed\n", path);
	}
}

long long hu_sysctl(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), HU_SYSCTL_DIR "%s", name);
	return hu_read_ll(path);
}

void hu_sysctl_set(const char *name, long long val)
{
	char path[128];

	snprintf(path, sizeof(path), HU_SYSCTL_DIR "%s", name);
	hu_set_ll(path, val);
}

/* Write @text to @path: 0, or -1 with errno set. */
static int write_text(const char *path, const char *text)
{
	ssize_t len = (ssize_t)strlen(text), n = -1;
	int fd, err;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	err = errno;
	close(fd);
	errno = err;
	return n == len ? 0 : -1;
}

bool hu_fault_ready(void)
{
	return hu_debugfs_ready("fault/point");
}

long long hu_fault_injected(const char *point)
{
	long long val;

	vt_assert(!kv_find(HU_FAULT_DIR "injected", point, &val), "%s: %s",
		  HU_FAULT_DIR "injected", strerror(errno));
	vt_assert(val >= 0, "no fault point %s in %s", point,
		  HU_FAULT_DIR "injected");
	return val;
}

void hu_fault_arm(const char *point, int times)
{
	char buf[64];

	vt_assert(hu_fault_ready(), "no fault injection in debugfs (%s)",
		  HU_FAULT_DIR);
	hu_set_ll(HU_FAULT_DIR "skip", 0);
	hu_set_ll(HU_FAULT_DIR "times", times);
	snprintf(buf, sizeof(buf), "%s\n", point);
	vt_assert(!write_text(HU_FAULT_DIR "point", buf), "arming %s: %s",
		  point, strerror(errno));
}

void hu_fault_disarm(void)
{
	vt_assert(!write_text(HU_FAULT_DIR "point", "none\n"),
		  "disarming: %s", strerror(errno));
	hu_set_ll(HU_FAULT_DIR "times", 0);
}

const char *hu_rdma_missing(const struct vt_ctx *c)
{
	if (c->family != VT_FAMILY_VISOCK)
		return "family inet: needs AF_VISOCK";
	if (c->loopback)
		return "both halves on one host: loopback connections do not use RDMA";
	if (hu_read_ll(HU_ENABLE_PATH) < 0)
		return "visock is not loaded";
	if (hu_read_ll(HU_ENABLE_PATH) != 1)
		return "net.visock.enable is not 1";
	if (hu_proc_get("rdma_devices") <= 0)
		return "no RDMA device";
	return "";
}

void hu_need_rdma(struct vt_ctx *c)
{
	const char *why = hu_rdma_missing(c);

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

bool hu_on_rdma(int fd, uint32_t *qpn)
{
	struct visock_info vi;
	socklen_t len = sizeof(vi);

	memset(&vi, 0, sizeof(vi));
	if (getsockopt(fd, SOL_VISOCK, VISOCK_INFO, &vi, &len))
		return false;
	if (qpn)
		*qpn = vi.vi_local_qpn;
	return vi.vi_mode == VISOCK_MODE_RDMA;
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

const char *hu_visockctl_path(void)
{
	static char path[512];
	const char *env = getenv("VISOCKCTL");
	const char *src = getenv("VISOCK_SRC");

	if (env && *env)
		return env;
	if (src && *src) {
		snprintf(path, sizeof(path), "%s/tools/visock/visockctl", src);
		if (!access(path, X_OK))
			return path;
	}
	return "visockctl";
}

unsigned long hu_sock_ino(int fd)
{
	struct stat st;

	vt_try(fstat(fd, &st), "fstat");
	return (unsigned long)st.st_ino;
}

static void write_result_file(const char *dir, const char *file,
			      const char *text, size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, len) != (ssize_t)len)
		perror(path);
	fsync(fd);
	close(fd);
}

void hu_power_off(const char *who)
{
	const char *res = getenv("VISOCK_RESULTS");
	static char log[1 << 20];
	ssize_t n = 0, r;
	int fd;

	if (res) {
		fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		while (fd >= 0 && n < (ssize_t)sizeof(log) - 1 &&
		       (r = read(fd, log + n, sizeof(log) - 1 - n)) > 0)
			n += r;
		if (fd >= 0)
			close(fd);
		write_result_file(res, "dmesg.txt", log, n);
		write_result_file(res, "rc", "0\n", 2);
	}
	printf("# %s: powering off now\n", who);
	fflush(stdout);
	sync();
	fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "o", 1) != 1)
		perror("/proc/sysrq-trigger");
	for (;;)
		pause();
}

int hu_visock_socket(void)
{
	return socket(AF_VISOCK, SOCK_STREAM | SOCK_CLOEXEC, VISOCKPROTO_TCP4);
}

int hu_connect_retry(const char *host, int port, int wait_ms, int every_ms)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	long long end = ctl_now_ms() + wait_ms;
	int fd;

	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return -1;
	for (;;) {
		fd = hu_visock_socket();
		if (fd < 0)
			return -1;
		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
		close(fd);
		if (ctl_now_ms() > end)
			return -1;
		usleep(every_ms * 1000);
	}
}
