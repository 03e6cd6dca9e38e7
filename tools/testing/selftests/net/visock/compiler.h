/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel-style helper macros for the visock selftests (user space). */
#ifndef VISOCK_SELFTEST_COMPILER_H
#define VISOCK_SELFTEST_COMPILER_H

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
/* printf-like argument checking, as the kernel's __printf(). */
#ifndef __printf
#define __printf(fmt, args)						\
	__attribute__((							\
		__format__(__printf__, fmt, args)))
#endif
#ifndef __noreturn
#define __noreturn _Noreturn
#endif

#endif /* VISOCK_SELFTEST_COMPILER_H */
