/* SPDX-License-Identifier: GPL-2.0 */
/*
 * visock: compression of record payloads (visock_comp.c).
 *
 * A thin layer over the acomp interface of the kernel crypto API: one
 * compressor per connection, used for both directions (sendmsg() and
 * recvmsg() serialise on the socket lock), on linear buffers.
 */
#ifndef _NET_VISOCK_COMP_H
#define _NET_VISOCK_COMP_H

#include <linux/crypto.h>
#include <linux/types.h>

/*
 * Both workspaces of a zstd compressor at the crypto API's default level
 * when the library is not built into the kernel and cannot be asked:
 * more than its bound (about 1.3 MiB).
 */
#define VISOCK_COMP_ZSTD_WS	(3U << 19)

struct crypto_acomp;
struct acomp_req;

/**
 * struct visock_comp - a connection's compressor
 * @tfm: the acomp transform of the algorithm
 * @req: the one request compress and decompress run
 */
struct visock_comp {
	struct crypto_acomp *tfm;
	struct acomp_req *req;
};

bool visock_comp_has(const char *alg);
size_t visock_comp_mem(const char *alg);
int visock_comp_driver(const char *alg, char *driver, size_t len);
int visock_comp_init(struct visock_comp *c, const char *alg);
void visock_comp_destroy(struct visock_comp *c);
int visock_comp_compress(struct visock_comp *c, const void *src,
			 unsigned int slen, void *dst, unsigned int room);
int visock_comp_decompress(struct visock_comp *c, const void *src,
			   unsigned int slen, void *dst, unsigned int room);

#endif /* _NET_VISOCK_COMP_H */
