// SPDX-License-Identifier: GPL-2.0
/*
 * visock_redirect - make unmodified programs' TCP sockets visock sockets
 *
 *   visock_redirect load [--comm NAME]... [--uid UID]... [--cgroup PATH]...
 *                        [--exclude-comm NAME]... [--exclude-uid UID]...
 *                        [--exclude-cgroup PATH]...
 *   visock_redirect show
 *   visock_redirect unload
 *
 * Loads visock_redirect.bpf.c (embedded as a libbpf skeleton), fills its
 * selector maps and pins the program's link and maps under
 * /sys/fs/bpf/visock/, so the redirect stays in place after this program
 * exits, until "unload" removes the pins.  See visock_redirect(8).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <mntent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <linux/visock.h>

#include "visock_redirect.h"
#include "visock_redirect.skel.h"

#define BPFFS		"/sys/fs/bpf"
#define PIN_DIR		BPFFS "/visock"
#define PIN_LINK	PIN_DIR "/link"
#define MOD_DIR		"/sys/module/visock"
#define MOD_PROTO	MOD_DIR "/parameters/inet_proto"
#define HOOK		"update_socket_protocol"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

static const char *prog_name = "visock_redirect";

/* Maps pinned next to the link, by their names in the BPF object. */
static const char *const pinned_maps[] = {
	"vr_config", "vr_cgroups", "vr_comms", "vr_uids", "vr_stats",
};

__printf(1, 2)
static void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int silent_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_WARN && getenv("VISOCK_REDIRECT_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG && getenv("VISOCK_REDIRECT_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s load [--comm NAME]... [--uid UID]... [--cgroup PATH]...\n"
		"                       [--exclude-comm NAME]... [--exclude-uid UID]...\n"
		"                       [--exclude-cgroup PATH]...\n"
		"       %s show\n"
		"       %s unload\n"
		"A task's TCP sockets become visock sockets when no exclusion matches\n"
		"it and a redirect entry does (cgroup entries cover the subtree).\n",
		prog_name, prog_name, prog_name);
}

struct selector {
	int kind;		/* 'c' comm, 'u' uid, 'g' cgroup */
	__u8 act;		/* VR_ACT_* */
	const char *arg;
};

/* ---- checks ---- */

static int read_int_file(const char *path, long *val)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*val = strtol(buf, NULL, 10);
	return 0;
}

/* Is socket(@family, SOCK_STREAM, @proto) a visock socket? */
static bool visock_protosw_works(int family, int proto)
{
	socklen_t len = sizeof(int);
	int fd, mode;
	bool ok;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return false;
	ok = !getsockopt(fd, SOL_VISOCK, VISOCK_MODE, &mode, &len);
	close(fd);
	return ok;
}

/*
 * The module must be loaded with its inet protosw registered: otherwise
 * every redirected socket() would fail with EPROTONOSUPPORT.
 */
static int check_module(struct vr_config *cfg)
{
	long proto = 0;
	int ret;

	if (access(MOD_DIR, F_OK)) {
		err("the visock module is not loaded (modprobe visock first)");
		return -1;
	}
	ret = read_int_file(MOD_PROTO, &proto);
	if (ret) {
		err("cannot read %s: %s (visock module too old?)", MOD_PROTO,
		    strerror(-ret));
		return -1;
	}
	if (proto <= 0) {
		err("the visock module was loaded with inet_proto=%ld: it creates no AF_INET sockets to redirect to",
		    proto);
		return -1;
	}
	cfg->protocol = proto;
	cfg->families = 0;
	if (visock_protosw_works(AF_INET, proto))
		cfg->families |= VR_FAMILY_INET;
	if (visock_protosw_works(AF_INET6, proto))
		cfg->families |= VR_FAMILY_INET6;
	if (!cfg->families) {
		err("socket(AF_INET, SOCK_STREAM, %ld) does not create a visock socket: the module did not register protocol %ld (taken by another module? see dmesg)",
		    proto, proto);
		return -1;
	}
	return 0;
}

static int check_kernel(void)
{
	int id;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		err("the kernel has no BTF (/sys/kernel/btf/vmlinux): fmod_ret programs need CONFIG_DEBUG_INFO_BTF");
		return -1;
	}
	id = libbpf_find_vmlinux_btf_id(HOOK, BPF_MODIFY_RETURN);
	if (id < 0) {
		err("this kernel has no %s() hook (Linux 6.6 or later needed); use visock_run(8) instead",
		    HOOK);
		return -1;
	}
	return 0;
}

/* Make sure PIN_DIR exists on a BPF file system. */
static int prepare_bpffs(void)
{
	struct statfs st;

	if (statfs(BPFFS, &st) || st.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", BPFFS, "bpf", 0, NULL)) {
			err("no BPF file system at %s and cannot mount one: %s",
			    BPFFS, strerror(errno));
			return -1;
		}
	}
	if (mkdir(PIN_DIR, 0700) && errno != EEXIST) {
		err("mkdir %s: %s", PIN_DIR, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- selectors ---- */

/* cgroup v2 id of @path: the kernfs node id, as a file handle gives it. */
static int cgroup_id(const char *path, __u64 *id)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	struct statfs st;
	int mount_id;

	if (statfs(path, &st)) {
		err("cgroup %s: %s", path, strerror(errno));
		return -1;
	}
	if (st.f_type != CGROUP2_SUPER_MAGIC) {
		err("%s is not a cgroup v2 directory", path);
		return -1;
	}
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0)) {
		err("cgroup %s: %s", path, strerror(errno));
		return -1;
	}
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

static int parse_uid(const char *s, __u32 *uid)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > 0xfffffffeUL) {
		err("bad uid '%s'", s);
		return -1;
	}
	*uid = v;
	return 0;
}

static int add_selector(struct visock_redirect_bpf *skel,
			const struct selector *s)
{
	char comm[VR_COMM_LEN] = {};
	__u64 cg;
	__u32 uid;
	int fd;
	void *key;

	switch (s->kind) {
	case 'c':
		if (strlen(s->arg) >= VR_COMM_LEN) {
			err("comm '%s' is longer than %d characters: the kernel only keeps the first %d",
			    s->arg, VR_COMM_LEN - 1, VR_COMM_LEN - 1);
			return -1;
		}
		memcpy(comm, s->arg, strlen(s->arg));
		fd = bpf_map__fd(skel->maps.vr_comms);
		key = comm;
		break;
	case 'u':
		if (parse_uid(s->arg, &uid))
			return -1;
		fd = bpf_map__fd(skel->maps.vr_uids);
		key = &uid;
		break;
	default:
		if (cgroup_id(s->arg, &cg))
			return -1;
		fd = bpf_map__fd(skel->maps.vr_cgroups);
		key = &cg;
		break;
	}
	if (bpf_map_update_elem(fd, key, &s->act, BPF_ANY)) {
		err("adding '%s': %s", s->arg, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- commands ---- */

static void unpin_all(void)
{
	char path[PATH_MAX];
	size_t i;

	unlink(PIN_LINK);
	for (i = 0; i < ARRAY_SIZE(pinned_maps); i++) {
		snprintf(path, sizeof(path), "%s/%s", PIN_DIR, pinned_maps[i]);
		unlink(path);
	}
	rmdir(PIN_DIR);
}

static int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "comm", required_argument, NULL, 'c' },
		{ "uid", required_argument, NULL, 'u' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ "exclude-comm", required_argument, NULL, 'C' },
		{ "exclude-uid", required_argument, NULL, 'U' },
		{ "exclude-cgroup", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct visock_redirect_bpf *skel = NULL;
	struct selector *sel;
	struct vr_config cfg;
	struct bpf_link *link;
	char path[PATH_MAX];
	int nsel = 0, c, i, ret = 1;
	size_t m;
	__u32 zero = 0;

	sel = calloc(argc, sizeof(*sel));
	if (!sel) {
		err("out of memory");
		return 1;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': case 'u': case 'g':
			sel[nsel++] = (struct selector){ c, VR_ACT_REDIRECT,
							 optarg };
			break;
		case 'C': case 'U': case 'G':
			sel[nsel++] = (struct selector){ c - 'A' + 'a',
							 VR_ACT_EXCLUDE, optarg };
			break;
		case 'h':
			usage(stdout);
			free(sel);
			return 0;
		default:
			usage(stderr);
			free(sel);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		free(sel);
		return 2;
	}

	if (!access(PIN_LINK, F_OK)) {
		err("already loaded (%s exists); run '%s unload' first",
		    PIN_LINK, prog_name);
		goto out;
	}
	if (check_kernel() || check_module(&cfg))
		goto out;

	skel = visock_redirect_bpf__open();
	if (!skel) {
		err("cannot open the BPF object: %s", strerror(errno));
		goto out;
	}
	ret = visock_redirect_bpf__load(skel);
	if (ret) {
		if (ret == -EPERM)
			err("loading the BPF program: permission denied (needs root, or CAP_BPF and CAP_PERFMON)");
		else if (ret == -ENOSYS)
			err("loading the BPF program: the kernel has no BPF system call");
		else
			err("loading the BPF program: %s (VISOCK_REDIRECT_DEBUG=1 shows libbpf's log)",
			    strerror(-ret));
		ret = 1;
		goto out;
	}
	ret = 1;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.vr_config), &zero, &cfg,
				BPF_ANY)) {
		err("writing the configuration: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < nsel; i++)
		if (add_selector(skel, &sel[i]))
			goto out;

	if (prepare_bpffs())
		goto out;
	for (m = 0; m < ARRAY_SIZE(pinned_maps); m++) {
		struct bpf_map *map;

		map = bpf_object__find_map_by_name(skel->obj, pinned_maps[m]);
		snprintf(path, sizeof(path), "%s/%s", PIN_DIR, pinned_maps[m]);
		if (!map || bpf_map__pin(map, path)) {
			err("pinning %s: %s", path, strerror(errno));
			goto out_unpin;
		}
	}
	link = bpf_program__attach_trace(skel->progs.visock_redirect);
	if (!link) {
		err("attaching to %s(): %s", HOOK, strerror(errno));
		goto out_unpin;
	}
	skel->links.visock_redirect = link;
	if (bpf_link__pin(link, PIN_LINK)) {
		err("pinning %s: %s", PIN_LINK, strerror(errno));
		goto out_unpin;
	}
	printf("visock_redirect: loaded; socket(%s%s%s, SOCK_STREAM, 0|IPPROTO_TCP) of selected tasks -> protocol %u\n",
	       cfg.families & VR_FAMILY_INET ? "AF_INET" : "",
	       cfg.families == (VR_FAMILY_INET | VR_FAMILY_INET6) ? "/" : "",
	       cfg.families & VR_FAMILY_INET6 ? "AF_INET6" : "",
	       cfg.protocol);
	if (!nsel)
		printf("visock_redirect: no selectors given: nothing is redirected\n");
	ret = 0;
	goto out;

out_unpin:
	unpin_all();
out:
	/* The pins keep the link and maps alive. */
	visock_redirect_bpf__destroy(skel);
	free(sel);
	return ret;
}

static __u64 show_cg_want;
static char show_cg_path[PATH_MAX];

static int find_cgroup(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	__u64 id;
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	int mount_id;

	(void)st;
	(void)ftw;
	if (type != FTW_D)
		return 0;
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return 0;
	memcpy(&id, h.fh.f_handle, sizeof(id));
	if (id != show_cg_want)
		return 0;
	snprintf(show_cg_path, sizeof(show_cg_path), "%s", path);
	return 1;
}

/* Path of the cgroup with id @id under any cgroup v2 mount, or NULL. */
static const char *cgroup_path(__u64 id)
{
	struct mntent *m;
	FILE *f;

	show_cg_want = id;
	show_cg_path[0] = '\0';
	f = setmntent("/proc/self/mounts", "re");
	if (!f)
		return NULL;
	while (!show_cg_path[0] && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2"))
			nftw(m->mnt_dir, find_cgroup, 16, FTW_PHYS | FTW_MOUNT);
	endmntent(f);
	return show_cg_path[0] ? show_cg_path : NULL;
}

static const char *act_name(__u8 act)
{
	return act == VR_ACT_EXCLUDE ? "exclude" : "redirect";
}

static void show_map(const char *name, int kind)
{
	char path[PATH_MAX], key[VR_COMM_LEN], next[VR_COMM_LEN];
	void *prev = NULL;
	__u8 act;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", PIN_DIR, name);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		printf("  %s: cannot open %s: %s\n", name, path, strerror(errno));
		return;
	}
	memset(key, 0, sizeof(key));
	memset(next, 0, sizeof(next));
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, sizeof(key));
		prev = key;
		if (bpf_map_lookup_elem(fd, key, &act))
			continue;
		switch (kind) {
		case 'c':
			printf("  %-8s comm %.*s\n", act_name(act), VR_COMM_LEN,
			       key);
			break;
		case 'u':
			printf("  %-8s uid %u\n", act_name(act), *(__u32 *)key);
			break;
		default: {
			const char *cg;
			__u64 id;

			memcpy(&id, key, sizeof(id));
			cg = cgroup_path(id);
			printf("  %-8s cgroup %s (id %llu)\n", act_name(act),
			       cg ? cg : "<gone>", (unsigned long long)id);
			break;
		}
		}
	}
	close(fd);
}

static int cmd_show(void)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info), zero = 0, idx;
	struct vr_config cfg;
	int fd, ncpu, c;
	__u64 *vals, sum[VR_STAT_MAX] = {};
	char path[PATH_MAX];

	fd = bpf_obj_get(PIN_LINK);
	if (fd < 0) {
		if (errno == ENOENT) {
			printf("visock_redirect: not loaded\n");
			return 0;
		}
		err("%s: %s", PIN_LINK, strerror(errno));
		return 1;
	}
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		printf("visock_redirect: loaded (link %u, program %u, pinned at %s)\n",
		       info.id, info.prog_id, PIN_LINK);
	close(fd);

	snprintf(path, sizeof(path), "%s/vr_config", PIN_DIR);
	fd = bpf_obj_get(path);
	if (fd >= 0 && !bpf_map_lookup_elem(fd, &zero, &cfg))
		printf("  protocol %u for%s%s\n", cfg.protocol,
		       cfg.families & VR_FAMILY_INET ? " AF_INET" : "",
		       cfg.families & VR_FAMILY_INET6 ? " AF_INET6" : "");
	if (fd >= 0)
		close(fd);
	show_map("vr_cgroups", 'g');
	show_map("vr_comms", 'c');
	show_map("vr_uids", 'u');

	snprintf(path, sizeof(path), "%s/vr_stats", PIN_DIR);
	fd = bpf_obj_get(path);
	ncpu = libbpf_num_possible_cpus();
	if (fd >= 0 && ncpu > 0) {
		vals = calloc(ncpu, sizeof(*vals));
		for (idx = 0; vals && idx < VR_STAT_MAX; idx++) {
			if (bpf_map_lookup_elem(fd, &idx, vals))
				continue;
			for (c = 0; c < ncpu; c++)
				sum[idx] += vals[c];
		}
		free(vals);
		printf("  sockets: %llu seen, %llu redirected, %llu excluded\n",
		       (unsigned long long)sum[VR_STAT_SEEN],
		       (unsigned long long)sum[VR_STAT_REDIRECTED],
		       (unsigned long long)sum[VR_STAT_EXCLUDED]);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int cmd_unload(void)
{
	if (access(PIN_LINK, F_OK) && access(PIN_DIR, F_OK)) {
		printf("visock_redirect: not loaded\n");
		return 0;
	}
	/* The link goes (and the program detaches) with its last pin. */
	unpin_all();
	if (!access(PIN_LINK, F_OK)) {
		err("cannot remove %s: %s", PIN_LINK, strerror(errno));
		return 1;
	}
	printf("visock_redirect: unloaded\n");
	return 0;
}

int main(int argc, char **argv)
{
	libbpf_set_print(silent_print);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "load"))
		return cmd_load(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show") && argc == 2)
		return cmd_show();
	if (!strcmp(argv[1], "unload") && argc == 2)
		return cmd_unload();
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
