/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP (TAP version 13 compatible) printing helpers for the
 * visock selftests.
 */
#ifndef VISOCK_SELFTEST_KTAP_H
#define VISOCK_SELFTEST_KTAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compiler.h"

enum ktap_res {
	KTAP_PASS,
	KTAP_SKIP,
	KTAP_FAIL,
};

static inline const char *ktap_res_name(enum ktap_res res)
{
	switch (res) {
	case KTAP_PASS:
		return "pass";
	case KTAP_SKIP:
		return "skip";
	default:
		return "fail";
	}
}

static inline void ktap_header(unsigned int ntests)
{
	printf("TAP version 13\n");
	printf("1..%u\n", ntests);
	fflush(stdout);
}

/* One "# ..." diagnostic line per line of the formatted message. */
static inline void ktap_vdiag(const char *fmt, va_list ap)
{
	char buf[4096];
	char *line, *nl;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	line = buf;
	do {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (*line || !nl)
			printf("# %s\n", line);
		line = nl ? nl + 1 : NULL;
	} while (line && *line);
	fflush(stdout);
}

static inline void __printf(1, 2) ktap_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ktap_vdiag(fmt, ap);
	va_end(ap);
}

/* A failure's reason is not printed: print it as a diagnostic first. */
static inline void ktap_result(unsigned int nr, const char *name,
			       enum ktap_res res, const char *reason)
{
	const char *why = reason && *reason ? reason : "";

	switch (res) {
	case KTAP_PASS:
		printf("ok %u %s\n", nr, name);
		break;
	case KTAP_SKIP:
		printf("ok %u %s # SKIP %s\n", nr, name, why);
		break;
	default:
		printf("not ok %u %s\n", nr, name);
		break;
	}
	fflush(stdout);
}

static inline void ktap_totals(const char *prog, unsigned int pass,
			       unsigned int fail, unsigned int skip)
{
	printf("# %s: %u passed, %u failed, %u skipped\n",
	       prog, pass, fail, skip);
	fflush(stdout);
}

#endif /* VISOCK_SELFTEST_KTAP_H */
