// SPDX-License-Identifier: GPL-2.0
/*
 * smc_setup - the two SMC-R settings the benchmark needs on Soft-RoCE,
 * over generic netlink, without smc-tools (not packaged in Debian 12):
 *
 *   smc_setup pnet PNETID ETHDEV IBDEV IBPORT   (like smc_pnet -a)
 *   smc_setup ueid EID                          (like smcr ueid add)
 *
 * rxe has RoCEv2 GIDs only, so SMC-R works on it only as SMC-Rv2, and on
 * machines other than s390 SMC-Rv2 needs the same user-defined EID on
 * both hosts; the pnet entry ties eth0 to rxe0.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/smc.h>

#define EID_LEN		32	/* SMC_MAX_EID_LEN */
#define BUF_SIZE	4096

struct nlreq {
	struct nlmsghdr nh;
	struct genlmsghdr gh;
	char attrs[1024];
};

static int nl_fd;
static uint32_t nl_seq;

static void add_attr(struct nlreq *r, uint16_t type, const void *data,
		     uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)r +
					     NLMSG_ALIGN(r->nh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void init_req(struct nlreq *r, uint16_t family, uint8_t cmd,
		     uint8_t version)
{
	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->nh.nlmsg_type = family;
	r->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	r->nh.nlmsg_seq = ++nl_seq;
	r->gh.cmd = cmd;
	r->gh.version = version;
}

/*
 * Send R and wait for its answer.  Returns 0 or a negative errno; for a
 * CTRL_CMD_GETFAMILY request *family_id receives the family's id.
 */
static int transact(struct nlreq *r, uint16_t *family_id)
{
	static char buf[BUF_SIZE];
	struct nlmsghdr *nh;
	ssize_t len;

	if (send(nl_fd, r, r->nh.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		len = recv(nl_fd, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len);
		     nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_seq != r->nh.nlmsg_seq)
				continue;
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(nh);

				return e->error;
			}
			if (family_id && nh->nlmsg_type == GENL_ID_CTRL) {
				struct nlattr *a;
				int alen;

				a = (struct nlattr *)((char *)NLMSG_DATA(nh) +
						      GENL_HDRLEN);
				alen = nh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
				while (alen >= NLA_HDRLEN &&
				       a->nla_len >= NLA_HDRLEN &&
				       a->nla_len <= alen) {
					if (a->nla_type == CTRL_ATTR_FAMILY_ID)
						memcpy(family_id,
						       (char *)a + NLA_HDRLEN,
						       sizeof(*family_id));
					alen -= NLA_ALIGN(a->nla_len);
					a = (struct nlattr *)((char *)a +
							NLA_ALIGN(a->nla_len));
				}
			}
		}
	}
}

static uint16_t genl_family_id(const char *name)
{
	uint16_t id = 0;
	struct nlreq r;
	int err;

	init_req(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	add_attr(&r, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	err = transact(&r, &id);
	if (err || !id) {
		fprintf(stderr,
			"smc_setup: generic netlink family %s: %s (smc module loaded?)\n",
			name, strerror(err ? -err : ENOENT));
		exit(1);
	}
	return id;
}

static void check(int err, const char *what)
{
	if (err == -EEXIST) {
		printf("smc_setup: %s: already set\n", what);
		return;
	}
	if (err) {
		fprintf(stderr, "smc_setup: %s: %s\n", what, strerror(-err));
		exit(1);
	}
	printf("smc_setup: %s: ok\n", what);
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: smc_setup pnet PNETID ETHDEV IBDEV IBPORT\n"
		"       smc_setup ueid EID\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlreq r;

	if (argc < 2)
		print_usage();
	nl_fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
	if (nl_fd < 0 || bind(nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("smc_setup: netlink socket");
		return 1;
	}

	if (!strcmp(argv[1], "pnet") && argc == 6) {
		uint8_t port = atoi(argv[5]);

		init_req(&r, genl_family_id(SMCR_GENL_FAMILY_NAME), SMC_PNETID_ADD,
			 SMCR_GENL_FAMILY_VERSION);
		add_attr(&r, SMC_PNETID_NAME, argv[2], strlen(argv[2]) + 1);
		add_attr(&r, SMC_PNETID_ETHNAME, argv[3], strlen(argv[3]) + 1);
		add_attr(&r, SMC_PNETID_IBNAME, argv[4], strlen(argv[4]) + 1);
		add_attr(&r, SMC_PNETID_IBPORT, &port, sizeof(port));
		check(transact(&r, NULL), "pnet entry");
	} else if (!strcmp(argv[1], "ueid") && argc == 3) {
		char eid[EID_LEN + 1];
		size_t len = strlen(argv[2]);

		if (!len || len > EID_LEN) {
			fprintf(stderr, "smc_setup: EID must be 1..%d characters\n",
				EID_LEN);
			return 2;
		}
		/* The kernel wants 32 characters, blank padded, plus NUL. */
		memset(eid, ' ', EID_LEN);
		memcpy(eid, argv[2], len);
		eid[EID_LEN] = '\0';
		init_req(&r, genl_family_id(SMC_GENL_FAMILY_NAME), SMC_NETLINK_ADD_UEID,
			 SMC_GENL_FAMILY_VERSION);
		add_attr(&r, SMC_NLA_EID_TABLE_ENTRY, eid, sizeof(eid));
		check(transact(&r, NULL), "user EID");
	} else {
		print_usage();
	}
	close(nl_fd);
	return 0;
}
