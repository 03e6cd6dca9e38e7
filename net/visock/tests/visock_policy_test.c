// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the destination policy matching (visock_policy_match.c):
 * rule checks, prefix and port matching, first match wins, IPv4-mapped
 * IPv6 destinations, the transform pair a rule names.
 */

#include <kunit/test.h>
#include <linux/in.h>
#include <linux/module.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/visock.h>
#include <linux/visock_genl.h>

#include "../visock_policy.h"

#define A4(a, b, c, d)	htonl(((a) << 24) | ((b) << 16) | ((c) << 8) | (d))

static struct visock_policy_rule rule4(__be32 addr, u8 plen, u16 lo, u16 hi,
				       u8 action)
{
	struct visock_policy_rule r = {
		.family = AF_INET, .plen = plen, .port_min = lo,
		.port_max = hi, .action = action,
	};

	r.addr[0] = addr;
	return r;
}

static struct visock_policy_rule rule_any(u16 lo, u16 hi, u8 action)
{
	struct visock_policy_rule r = {
		.port_min = lo, .port_max = hi, .action = action,
	};

	return r;
}

static struct visock_policy_dst dst4(__be32 addr, u16 port)
{
	struct visock_policy_dst d;

	visock_policy_dst_init(&d, AF_INET, &addr, port);
	return d;
}

static struct visock_policy_dst dst6(const char *hex16, u16 port)
{
	struct visock_policy_dst d;
	__be32 a[4];

	memcpy(a, hex16, 16);
	visock_policy_dst_init(&d, AF_INET6, a, port);
	return d;
}

/* 2001:db8::/32 and addresses in and out of it, as bytes. */
#define DB8		"\x20\x01\x0d\xb8"
#define V6_DB8_1	DB8 "\0\0\0\0\0\0\0\0\0\0\0\x01"
#define V6_DB9_1	"\x20\x01\x0d\xb9\0\0\0\0\0\0\0\0\0\0\0\x01"
#define V6_MAPPED_10_1_2_3 "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x01\x02\x03"

static void visock_policy_check_test(struct kunit *test)
{
	struct visock_policy_rule r;
	const char *why = NULL;

	r = rule4(A4(10, 0, 0, 0), 8, 0, 65535, VISOCK_POLICY_DENY);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), 0);
	r = rule4(A4(10, 1, 0, 0), 8, 0, 65535, VISOCK_POLICY_DENY);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	r = rule4(A4(10, 1, 2, 3), 32, 0, 65535, VISOCK_POLICY_ALLOW);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), 0);
	r = rule4(A4(10, 1, 2, 3), 33, 0, 65535, VISOCK_POLICY_ALLOW);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	r = rule4(0, 0, 0, 65535, VISOCK_POLICY_ALLOW);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), 0);
	r = rule4(A4(10, 0, 0, 0), 8, 100, 99, VISOCK_POLICY_DENY);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	r = rule4(A4(10, 0, 0, 0), 8, 1, 2, 2);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	r = rule_any(80, 80, VISOCK_POLICY_DENY);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), 0);
	r.plen = 1;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	r = rule_any(80, 80, VISOCK_POLICY_DENY);
	r.family = AF_UNIX;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);

	/* IPv6: /32 with a bit in the third word set is refused. */
	memset(&r, 0, sizeof(r));
	r.family = AF_INET6;
	r.plen = 32;
	r.port_max = 65535;
	memcpy(r.addr, V6_DB8_1, 16);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	r.plen = 128;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), 0);
	r.plen = 129;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	/* An IPv4 rule has nothing beyond its first word. */
	r = rule4(A4(10, 0, 0, 0), 8, 0, 65535, VISOCK_POLICY_DENY);
	r.addr[1] = htonl(1);
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
}

static void visock_policy_match4_test(struct kunit *test)
{
	struct visock_policy_rule r = rule4(A4(192, 168, 4, 0), 22, 5000, 5010,
					    VISOCK_POLICY_DENY);
	struct visock_policy_dst d;

	d = dst4(A4(192, 168, 7, 255), 5000);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(192, 168, 4, 0), 5010);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(192, 168, 8, 1), 5000);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(192, 168, 3, 255), 5000);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(192, 168, 5, 1), 4999);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(192, 168, 5, 1), 5011);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));

	/* /0 matches every IPv4 address, no IPv6 one. */
	r = rule4(0, 0, 0, 65535, VISOCK_POLICY_DENY);
	d = dst4(A4(255, 255, 255, 255), 1);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
	d = dst6(V6_DB8_1, 1);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));

	/* /32: exactly one address. */
	r = rule4(A4(10, 1, 2, 3), 32, 0, 65535, VISOCK_POLICY_DENY);
	d = dst4(A4(10, 1, 2, 3), 80);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(10, 1, 2, 2), 80);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));
}

static void visock_policy_match6_test(struct kunit *test)
{
	struct visock_policy_rule r = { .family = AF_INET6, .plen = 32,
				     .port_max = 65535,
				     .action = VISOCK_POLICY_DENY };
	struct visock_policy_dst d;

	memcpy(r.addr, DB8 "\0\0\0\0\0\0\0\0\0\0\0\0", 16);
	d = dst6(V6_DB8_1, 443);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
	d = dst6(V6_DB9_1, 443);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));
	d = dst4(A4(32, 1, 13, 184), 443);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));

	/* A prefix ending inside the second word: 2001:db8:8000::/33. */
	memcpy(r.addr, DB8 "\x80\0\0\0\0\0\0\0\0\0\0\0", 16);
	r.plen = 33;
	d = dst6(V6_DB8_1, 443);
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_match(&r, &d));
	d = dst6(DB8 "\xff\xff\0\0\0\0\0\0\0\0\0\x01", 443);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
}

static void visock_policy_mapped_test(struct kunit *test)
{
	struct visock_policy_rule r = rule4(A4(10, 0, 0, 0), 8, 0, 65535,
					    VISOCK_POLICY_DENY);
	struct visock_policy_dst d = dst6(V6_MAPPED_10_1_2_3, 22);

	KUNIT_EXPECT_EQ(test, d.family, AF_INET);
	KUNIT_EXPECT_EQ(test, d.addr[0], A4(10, 1, 2, 3));
	KUNIT_EXPECT_EQ(test, d.port, 22);
	KUNIT_EXPECT_TRUE(test, visock_policy_rule_match(&r, &d));
	d = dst6(V6_DB8_1, 22);
	KUNIT_EXPECT_EQ(test, d.family, AF_INET6);
}

static void visock_policy_order_test(struct kunit *test)
{
	struct visock_policy_rule rules[3];
	struct visock_policy_dst d;

	/* Allow 10.1/16 port 80, deny 10/8, deny any port 22. */
	rules[0] = rule4(A4(10, 1, 0, 0), 16, 80, 80, VISOCK_POLICY_ALLOW);
	rules[1] = rule4(A4(10, 0, 0, 0), 8, 0, 65535, VISOCK_POLICY_DENY);
	rules[2] = rule_any(22, 22, VISOCK_POLICY_DENY);

	d = dst4(A4(10, 1, 0, 5), 80);
	KUNIT_EXPECT_EQ(test,
			visock_policy_lookup(rules, 3, VISOCK_POLICY_ALLOW, &d),
			VISOCK_POLICY_ALLOW);
	d = dst4(A4(10, 1, 0, 5), 81);
	KUNIT_EXPECT_EQ(test,
			visock_policy_lookup(rules, 3, VISOCK_POLICY_ALLOW, &d),
			VISOCK_POLICY_DENY);
	d = dst4(A4(11, 0, 0, 1), 22);
	KUNIT_EXPECT_EQ(test,
			visock_policy_lookup(rules, 3, VISOCK_POLICY_ALLOW, &d),
			VISOCK_POLICY_DENY);
	d = dst6(V6_DB8_1, 22);
	KUNIT_EXPECT_EQ(test,
			visock_policy_lookup(rules, 3, VISOCK_POLICY_ALLOW, &d),
			VISOCK_POLICY_DENY);
	/* No match: the default, either way. */
	d = dst4(A4(11, 0, 0, 1), 23);
	KUNIT_EXPECT_EQ(test,
			visock_policy_lookup(rules, 3, VISOCK_POLICY_ALLOW, &d),
			VISOCK_POLICY_ALLOW);
	KUNIT_EXPECT_EQ(test, visock_policy_lookup(rules, 3, VISOCK_POLICY_DENY,
						   &d), VISOCK_POLICY_DENY);
	/* Empty table. */
	KUNIT_EXPECT_EQ(test, visock_policy_lookup(rules, 0, VISOCK_POLICY_DENY,
						   &d), VISOCK_POLICY_DENY);
	/* Rule order matters: the deny first hides the allow. */
	swap(rules[0], rules[1]);
	d = dst4(A4(10, 1, 0, 5), 80);
	KUNIT_EXPECT_EQ(test,
			visock_policy_lookup(rules, 3, VISOCK_POLICY_ALLOW, &d),
			VISOCK_POLICY_DENY);
}

static void visock_policy_equal_test(struct kunit *test)
{
	struct visock_policy_rule a = rule4(A4(10, 0, 0, 0), 8, 1, 2,
					    VISOCK_POLICY_DENY);
	struct visock_policy_rule b = a;

	KUNIT_EXPECT_TRUE(test, visock_policy_rule_equal(&a, &b));
	b.action = VISOCK_POLICY_ALLOW;
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_equal(&a, &b));
	b = a;
	b.port_max = 3;
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_equal(&a, &b));
	b = a;
	b.plen = 9;
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_equal(&a, &b));
}

/* A destination, the default action and the verdict the rules give. */
struct xform_case {
	const char *what;
	__be32 addr;		/* unless @v6: ::ffff:10.1.2.3 */
	bool v6;
	u16 port;
	u8 dflt;
	u8 action;
	u8 xform;
	bool require;
};

/* Rules naming a transform pair: checks and the verdict they give. */
static void visock_policy_xform_test(struct kunit *test)
{
	const struct xform_case cases[] = {
		{ "required pair", A4(10, 1, 2, 3), false, 80,
		  VISOCK_POLICY_ALLOW, VISOCK_POLICY_ALLOW,
		  VISOCK_XFORM_AES256_GCM, true },
		/* The first match decides, also for the pair. */
		{ "first match", A4(10, 1, 2, 3), false, 5432,
		  VISOCK_POLICY_ALLOW, VISOCK_POLICY_ALLOW,
		  VISOCK_XFORM_AES256_GCM, true },
		{ "preferred pair", A4(10, 2, 0, 1), false, 80,
		  VISOCK_POLICY_ALLOW, VISOCK_POLICY_ALLOW,
		  VISOCK_XFORM_CHACHA20_POLY1305, false },
		{ "deny rule", A4(11, 0, 0, 1), false, 5432,
		  VISOCK_POLICY_ALLOW, VISOCK_POLICY_DENY,
		  VISOCK_XFORM_NONE, false },
		/* No match: the default, without a pair. */
		{ "no match", A4(11, 0, 0, 1), false, 80,
		  VISOCK_POLICY_DENY, VISOCK_POLICY_DENY,
		  VISOCK_XFORM_NONE, false },
		/* An IPv4-mapped destination gets the IPv4 rule's pair. */
		{ "mapped", 0, true, 80,
		  VISOCK_POLICY_ALLOW, VISOCK_POLICY_ALLOW,
		  VISOCK_XFORM_AES256_GCM, true },
	};
	struct visock_policy_rule rules[3], r;
	struct visock_policy_verdict v;
	struct visock_policy_dst d;
	const char *why = NULL;
	unsigned int i;

	r = rule_any(0, 65535, VISOCK_POLICY_ALLOW);
	r.xform = VISOCK_XFORM_AES256_GCM;
	r.xform_require = true;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), 0);
	r.xform = VISOCK_XFORM_MAX + 1;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	/* require without a pair */
	r.xform = VISOCK_XFORM_NONE;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);
	/* a pair on a deny rule */
	r = rule_any(0, 65535, VISOCK_POLICY_DENY);
	r.xform = VISOCK_XFORM_AES128_GCM;
	KUNIT_EXPECT_EQ(test, visock_policy_rule_check(&r, &why), -EINVAL);

	/* Equal only with the same pair and the same require. */
	r = rule_any(0, 65535, VISOCK_POLICY_ALLOW);
	rules[0] = r;
	rules[0].xform = VISOCK_XFORM_AES128_GCM;
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_equal(&r, &rules[0]));
	r = rules[0];
	r.xform_require = true;
	KUNIT_EXPECT_FALSE(test, visock_policy_rule_equal(&r, &rules[0]));

	rules[0] = rule4(A4(10, 1, 0, 0), 16, 0, 65535, VISOCK_POLICY_ALLOW);
	rules[0].xform = VISOCK_XFORM_AES256_GCM;
	rules[0].xform_require = true;
	rules[1] = rule4(A4(10, 0, 0, 0), 8, 0, 65535, VISOCK_POLICY_ALLOW);
	rules[1].xform = VISOCK_XFORM_CHACHA20_POLY1305;
	rules[2] = rule_any(5432, 5432, VISOCK_POLICY_DENY);

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct xform_case *t = &cases[i];

		d = t->v6 ? dst6(V6_MAPPED_10_1_2_3, t->port) :
			    dst4(t->addr, t->port);
		visock_policy_decide(rules, 3, t->dflt, &d, &v);
		KUNIT_EXPECT_EQ_MSG(test, v.action, t->action, "%s", t->what);
		KUNIT_EXPECT_EQ_MSG(test, v.xform, t->xform, "%s", t->what);
		KUNIT_EXPECT_EQ_MSG(test, v.xform_require, t->require, "%s",
				    t->what);
	}
}

static struct kunit_case visock_policy_test_cases[] = {
	KUNIT_CASE(visock_policy_check_test),
	KUNIT_CASE(visock_policy_match4_test),
	KUNIT_CASE(visock_policy_match6_test),
	KUNIT_CASE(visock_policy_mapped_test),
	KUNIT_CASE(visock_policy_order_test),
	KUNIT_CASE(visock_policy_equal_test),
	KUNIT_CASE(visock_policy_xform_test),
	{}
};

static struct kunit_suite visock_policy_test_suite = {
	.name = "visock_policy",
	.test_cases = visock_policy_test_cases,
};

kunit_test_suite(visock_policy_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the visock destination policy matching");
