// SPDX-License-Identifier: GPL-2.0
/*
 * visock: a visock socket and the kernel socket it forwards to.
 *
 * A visock stream socket owns an internal TCP socket (visock_tcp.c), a
 * datagram socket an internal UDP socket (visock_dgram.c), and each
 * forwards the application's calls to that inner socket.  Two things
 * the application sees on the visock socket have to follow the inner
 * one; this file does both, for either kind.
 *
 * Errors.  getsockopt(SO_ERROR) and poll() read the visock socket's
 * sk_err, so an error the inner socket reports is copied there and
 * remembered in the owner's mirror field (visock_inner_set_err()).  A
 * forwarded call that returns that error consumes the copy
 * (visock_inner_consume_err()); the inner protocol consumed its
 * original when it returned it.  When getsockopt(SO_ERROR) consumed the
 * copy instead, the inner socket's original is consumed before the
 * next forwarded call (visock_inner_sync_opts()).  Each error is
 * reported once, as by the inner protocol.
 *
 * Socket-level options.  Before the socket layer lets a family see
 * setsockopt(SOL_SOCKET) calls (VISOCK_HAVE_CUSTOM_SOCKOPT), they land
 * on the visock socket only.  visock_inner_sync_opts() copies those
 * that every inner protocol acts on before each call that depends on
 * them; the owner then copies its protocol's own ones.
 * Only what differs is written.
 *
 * Locks: none.  The inner protocol may report an error at any time, so
 * errors are cleared with cmpxchg() only where they still hold the value
 * copied.
 */
#include <net/sock.h>

#include "visock_compat.h"
#include "visock_inner.h"

/**
 * visock_inner_set_err() - copy an error the inner socket reported
 * @sk: the visock socket
 * @mirror: its record of the copied error
 * @err: the inner socket's sk_err, not 0
 *
 * The caller then wakes the visock socket's waiters (sk_error_report).
 *
 * Context: the inner socket's sk_error_report callback, any context.
 */
void visock_inner_set_err(struct sock *sk, int *mirror, int err)
{
	WRITE_ONCE(*mirror, err);
	WRITE_ONCE(sk->sk_err, err);
}

/**
 * visock_inner_consume_err() - note that a forwarded call returned @ret
 * @sk: the visock socket
 * @mirror: its record of the copied error
 * @ret: return value of the call forwarded to the inner socket
 *
 * If @ret is the copied error, the call reported it: the copy goes.
 *
 * Context: any.
 */
void visock_inner_consume_err(struct sock *sk, int *mirror, long ret)
{
	if (ret < 0 && ret > -MAX_ERRNO &&
	    cmpxchg(&sk->sk_err, (int)-ret, 0) == (int)-ret)
		WRITE_ONCE(*mirror, 0);
}

/*
 * getsockopt(SO_ERROR) read the copied error, which clears only the
 * visock socket's copy: consume the inner socket's original too, so that
 * the next call does not report the same error again.
 */
static void visock_inner_sync_err(struct sock *sk, struct sock *isk,
				  int *mirror)
{
	int err = READ_ONCE(*mirror);

	if (err && !READ_ONCE(sk->sk_err)) {
		cmpxchg(&isk->sk_err, err, 0);
		WRITE_ONCE(*mirror, 0);
	}
}

/**
 * visock_inner_sync_opts() - bring the inner socket up to date
 * @sk: the visock socket
 * @isk: the inner socket it forwards to
 * @mirror: @sk's record of the error copied from @isk
 * @reuse: copy SO_REUSEADDR and SO_REUSEPORT too; the owner says whether
 *	they can still matter to @isk (before it bound, connected or
 *	listened, as its protocol goes)
 *
 * Consumes on @isk an error that getsockopt(SO_ERROR) consumed on @sk.
 * Where the socket layer does not let visock see setsockopt(SOL_SOCKET)
 * (!VISOCK_HAVE_CUSTOM_SOCKOPT), also copies the options of @sk that
 * every inner protocol acts on: the timeouts, SO_RCVLOWAT, SO_MARK,
 * SO_PRIORITY, the buffer sizes the application set (and that it set
 * them) and, with @reuse, the reuse flags.  The caller copies its
 * protocol's own options after this.
 *
 * Context: process context, before a call forwarded to @isk.
 */
void visock_inner_sync_opts(struct sock *sk, struct sock *isk, int *mirror,
			    bool reuse)
{
	u8 locks;

	visock_inner_sync_err(sk, isk, mirror);
	if (VISOCK_HAVE_CUSTOM_SOCKOPT)
		return;

#define VISOCK_SYNC(field) do {						\
		if (READ_ONCE(isk->field) != READ_ONCE(sk->field))	\
			WRITE_ONCE(isk->field, READ_ONCE(sk->field));	\
	} while (0)

	locks = sk->sk_userlocks;	/* a bit field in older kernels */
	VISOCK_SYNC(sk_rcvtimeo);
	VISOCK_SYNC(sk_sndtimeo);
	VISOCK_SYNC(sk_rcvlowat);
	VISOCK_SYNC(sk_mark);
	VISOCK_SYNC(sk_priority);
	if (locks & SOCK_RCVBUF_LOCK)
		VISOCK_SYNC(sk_rcvbuf);
	if (locks & SOCK_SNDBUF_LOCK)
		VISOCK_SYNC(sk_sndbuf);
#undef VISOCK_SYNC
	if (reuse) {
		if (isk->sk_reuse != sk->sk_reuse)
			isk->sk_reuse = sk->sk_reuse;
		if (isk->sk_reuseport != sk->sk_reuseport)
			isk->sk_reuseport = sk->sk_reuseport;
	}
	if ((locks & (SOCK_RCVBUF_LOCK | SOCK_SNDBUF_LOCK)) &
	    ~isk->sk_userlocks)
		isk->sk_userlocks |= locks &
				     (SOCK_RCVBUF_LOCK | SOCK_SNDBUF_LOCK);
}
