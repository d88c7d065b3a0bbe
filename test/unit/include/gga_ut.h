/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers for CUnit tests: comparison asserts that print both sides, and a
 * main() helper that runs one suite and returns the failure count.
 */
#ifndef GGA_UT_H
#define GGA_UT_H

#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#define UT_ASSERT_EQ(a, b)                                                                  \
	do {                                                                                \
		long long _ua = (long long)(a), _ub = (long long)(b);                       \
		if (_ua != _ub) {                                                           \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
				__LINE__, #a, #b, _ua, _ub);                                \
		}                                                                           \
		CU_ASSERT(_ua == _ub);                                                      \
	} while (0)

#define UT_ASSERT_EQ_FATAL(a, b)                                                            \
	do {                                                                                \
		long long _ua = (long long)(a), _ub = (long long)(b);                       \
		if (_ua != _ub) {                                                           \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
				__LINE__, #a, #b, _ua, _ub);                                \
		}                                                                           \
		CU_ASSERT_FATAL(_ua == _ub);                                                \
	} while (0)

#define UT_ASSERT_STR_EQ(a, b)                                                                  \
	do {                                                                                    \
		const char *_ua = (a), *_ub = (b);                                              \
		int _ueq = _ua != NULL && _ub != NULL && strcmp(_ua, _ub) == 0;                 \
		if (!_ueq) {                                                                    \
			fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, \
				__LINE__, #a, #b, _ua ? _ua : "(null)", _ub ? _ub : "(null)");  \
		}                                                                               \
		CU_ASSERT(_ueq);                                                                \
	} while (0)

struct ut_test {
	const char *name;
	void (*fn)(void);
};

#define UT_TEST(fn)     \
	{               \
#fn, fn \
	}

/*
 * Run one suite; returns 0 if every test passed, 1 otherwise. The CUnit
 * "Run Summary" table is printed; test/unit/run.sh reads its "tests" row.
 */
static inline int
ut_run(const char *suite_name, const struct ut_test *tests, size_t count, int (*init)(void),
       int (*fini)(void))
{
	CU_pSuite suite;
	unsigned int failures;
	size_t i;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		return 1;
	}
	suite = CU_add_suite(suite_name, init, fini);
	if (suite == NULL) {
		CU_cleanup_registry();
		return 1;
	}
	for (i = 0; i < count; i++) {
		if (CU_add_test(suite, tests[i].name, tests[i].fn) == NULL) {
			CU_cleanup_registry();
			return 1;
		}
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	if (CU_get_number_of_suites_failed() > 0) {
		failures++;
	}
	CU_cleanup_registry();
	return failures == 0 ? 0 : 1;
}

#endif /* GGA_UT_H */
