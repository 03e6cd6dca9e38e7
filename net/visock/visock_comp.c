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
 */

#include <crypto/acompress.h>
#include <linux/err.h>
#include <linux/scatterlist.h>
#include <linux/string.h>

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
