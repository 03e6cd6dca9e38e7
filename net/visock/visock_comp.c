// SPDX-License-Identifier: GPL-2.0
/*
 * visock: compression of record payloads.
 *
 * A compressing transform pair (visock_xform.c) compresses each record's
 * payload before the AEAD seals it, and only when that makes it shorter:
 * the output room given to visock_comp_compress() is one byte less than
 * the input, so data that does not shrink fails to compress and goes
 * stored.  The receiver decompresses into a buffer of the record's
 * largest payload: input that would expand beyond it (or is no valid
 * stream at all) is an error of the decompressor, which the acomp
 * implementations of LZ4 and Zstandard check without writing past the
 * room they are given.
 *
 * Which implementation runs is the crypto API's choice (the generic C
 * code through its synchronous wrapper, or an offload driver).  The
 * transform and its request are allocated in process context; the
 * request is the only memory of ours the crypto API allocates with the
 * caller's flags.
 *
 * None of it is charged to a memory cgroup: crypto_alloc_acomp() and
 * acomp_request_alloc() take no allocation flags, and the generic
 * implementations allocate their workspaces (with the request, through
 * the synchronous wrapper) with plain GFP_KERNEL.  What a compressor
 * takes is therefore estimated up front (visock_comp_mem()) for the
 * namespace's memory budget: the workspaces the library needs for the
 * crypto API's default level, which is what its implementation
 * allocates, and an allowance for the transform and request objects.
 */

#include <crypto/acompress.h>
#include <linux/err.h>
#include <linux/kconfig.h>
#include <linux/lz4.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <linux/zstd.h>

#include "visock_comp.h"

/**
 * visock_comp_has() - does the crypto API provide an algorithm
 * @alg: acomp algorithm name, e.g. "lz4"
 *
 * Context: process context, may sleep (may load a crypto module).
 * Return: true if crypto_alloc_acomp() of @alg can succeed.
 */
bool visock_comp_has(const char *alg)
{
	return crypto_has_acomp(alg, 0, 0) > 0;
}

/* The level the crypto API's zstd compresses at (its default). */
#define VISOCK_COMP_ZSTD_LEVEL	3
/*
 * The acomp transform and its request, and for an unknown algorithm its
 * context: an allowance, the crypto API does not tell their sizes.
 */
#define VISOCK_COMP_OBJS	SZ_4K

/* Compression and decompression workspaces of a zstd compressor. */
static size_t visock_comp_zstd_ws(void)
{
/*
 * Only a library built into the kernel is asked: calling one built as a
 * module would make this module need it loaded first, even on hosts
 * that never compress.
 */
#if IS_BUILTIN(CONFIG_ZSTD_COMPRESS) && IS_BUILTIN(CONFIG_ZSTD_DECOMPRESS)
	zstd_parameters p = zstd_get_params(VISOCK_COMP_ZSTD_LEVEL, 0);

	return zstd_cctx_workspace_bound(&p.cParams) +
	       zstd_dctx_workspace_bound();
#else
	return VISOCK_COMP_ZSTD_WS;
#endif
}

/**
 * visock_comp_mem() - memory one compressor of an algorithm takes
 * @alg: acomp algorithm name, e.g. "zstd"
 *
 * An estimate made before the compressor is set up: its workspaces as
 * the library bounds them (LZ4's compression state; zstd's compression
 * and decompression workspaces at the crypto API's default level, or
 * VISOCK_COMP_ZSTD_WS where the zstd library is a module), plus an
 * allowance for the transform and request objects.  An algorithm of
 * unknown needs gets the larger of the two workspaces.
 *
 * Context: any context.
 * Return: bytes, never 0.
 */
size_t visock_comp_mem(const char *alg)
{
	if (!strcmp(alg, "lz4"))
		return LZ4_MEM_COMPRESS + VISOCK_COMP_OBJS;
	if (!strcmp(alg, "zstd"))
		return visock_comp_zstd_ws() + VISOCK_COMP_OBJS;
	return max_t(size_t, visock_comp_zstd_ws(), LZ4_MEM_COMPRESS) +
	       VISOCK_COMP_OBJS;
}

/**
 * visock_comp_driver() - the implementation the crypto API picks
 * @alg: acomp algorithm name
 * @driver: output, the implementation's driver name
 * @len: room in @driver
 *
 * Context: process context, may sleep.
 * Return: 0, or the error of crypto_alloc_acomp() (-ENOENT: none here).
 */
int visock_comp_driver(const char *alg, char *driver, size_t len)
{
	struct crypto_acomp *tfm = crypto_alloc_acomp(alg, 0, 0);

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	strscpy(driver, crypto_tfm_alg_driver_name(crypto_acomp_tfm(tfm)),
		len);
	crypto_free_acomp(tfm);
	return 0;
}

/**
 * visock_comp_init() - set up a connection's compressor
 * @c: zeroed or destroyed before
 * @alg: acomp algorithm name
 *
 * Context: process context, may sleep.
 * Return: 0, -ENOMEM, or an error of the crypto API (-ENOENT: no
 * implementation); on error @c holds nothing.
 */
int visock_comp_init(struct visock_comp *c, const char *alg)
{
	memset(c, 0, sizeof(*c));
	c->tfm = crypto_alloc_acomp(alg, 0, 0);
	if (IS_ERR(c->tfm)) {
		int err = PTR_ERR(c->tfm);

		c->tfm = NULL;
		return err;
	}
	c->req = acomp_request_alloc(c->tfm);
	if (!c->req) {
		visock_comp_destroy(c);
		return -ENOMEM;
	}
	return 0;
}

/**
 * visock_comp_destroy() - free what visock_comp_init() took
 * @c: the compressor; may be half set up or destroyed already
 *
 * Context: process context.
 */
void visock_comp_destroy(struct visock_comp *c)
{
	if (c->req)
		acomp_request_free(c->req);
	if (c->tfm)
		crypto_free_acomp(c->tfm);
	c->req = NULL;
	c->tfm = NULL;
}

/* Run one request from @src to @dst, waiting for an asynchronous one. */
static int visock_comp_run(struct visock_comp *c, bool comp,
			   const void *src, unsigned int slen, void *dst,
			   unsigned int room)
{
	struct scatterlist in, out;
	DECLARE_CRYPTO_WAIT(wait);
	int err;

	if (!slen || !room)
		return -EINVAL;
	sg_init_one(&in, src, slen);
	sg_init_one(&out, dst, room);
	acomp_request_set_callback(c->req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				   CRYPTO_TFM_REQ_MAY_SLEEP,
				   crypto_req_done, &wait);
	acomp_request_set_params(c->req, &in, &out, slen, room);
	err = comp ? crypto_acomp_compress(c->req) :
		     crypto_acomp_decompress(c->req);
	err = crypto_wait_req(err, &wait);
	if (err)
		return err;
	/* Never trust an implementation to have stayed within @room. */
	if (!c->req->dlen || c->req->dlen > room)
		return -EOVERFLOW;
	return c->req->dlen;
}

/**
 * visock_comp_compress() - compress a payload if it shrinks
 * @c: the compressor
 * @src: the payload
 * @slen: its length, not 0
 * @dst: output buffer
 * @room: bytes at @dst; the caller passes less than @slen to compress
 *	only what shrinks
 *
 * Context: process context, may sleep.
 * Return: the compressed length (1..@room), or a negative error: the
 * output does not fit (the data does not shrink enough) or the
 * compressor failed; either way the caller sends @src stored.
 */
int visock_comp_compress(struct visock_comp *c, const void *src,
			 unsigned int slen, void *dst, unsigned int room)
{
	return visock_comp_run(c, true, src, slen, dst, room);
}

/**
 * visock_comp_decompress() - decompress a received payload
 * @c: the compressor
 * @src: the compressed payload (untrusted, though authenticated when the
 *	pair seals records)
 * @slen: its length
 * @dst: output buffer
 * @room: bytes at @dst: the record's largest payload
 *
 * Context: process context, may sleep.
 * Return: the payload's length (1..@room), or a negative error: not a
 * valid compressed stream, one that would expand beyond @room, or one
 * that expands to nothing.  The bytes at @dst are then not a payload.
 */
int visock_comp_decompress(struct visock_comp *c, const void *src,
			   unsigned int slen, void *dst, unsigned int room)
{
	return visock_comp_run(c, false, src, slen, dst, room);
}
