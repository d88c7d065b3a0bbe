/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the app framework pieces that run without reactors: option
 * parsing, --json configuration replay (on a hand-polled thread) and
 * save_config.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gga/app.h"
#include "gga/log.h"
#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga_ut.h"
#include "lib/app/app_internal.h"

/* ---- Option parsing ---- */

static int g_app_opt_seen;
static const char *g_app_opt_arg;

static int
parse_app_opt(int ch, const char *arg)
{
	if (ch == 'q' || ch == 0x1000) {
		g_app_opt_seen = ch;
		g_app_opt_arg = arg;
		return 0;
	}
	return -EINVAL;
}

static const struct option g_app_long[] = {
	{ "depth", required_argument, NULL, 0x1000 },
	{ NULL, 0, NULL, 0 },
};

/* Parse a space-separated command line. */
static int
parse(struct app_opts *opts, const char *line)
{
	static char buf[512];
	char *argv[32];
	int argc = 0;
	char *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", line);
	argv[argc++] = "app_ut";
	for (tok = strtok_r(buf, " ", &save); tok != NULL && argc < 31;
	     tok = strtok_r(NULL, " ", &save)) {
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	app_opts_init(opts, "app_ut");
	g_app_opt_seen = 0;
	g_app_opt_arg = NULL;
	return app_parse_args(argc, argv, opts, "q:", g_app_long, parse_app_opt, NULL);
}

/* ---- Signals: the first stops in order, the second forces the exit ---- */

static void
test_signal_action(void)
{
	UT_ASSERT_EQ(app_signal_action(0, false), APP_SIGNAL_STOP);
	/* Shutdown already under way (app_stop, RPC): the first signal only notes it. */
	UT_ASSERT_EQ(app_signal_action(0, true), APP_SIGNAL_NOTE);
	UT_ASSERT_EQ(app_signal_action(1, true), APP_SIGNAL_FORCE_EXIT);
	UT_ASSERT_EQ(app_signal_action(1, false), APP_SIGNAL_FORCE_EXIT);
	UT_ASSERT_EQ(app_signal_action(7, true), APP_SIGNAL_FORCE_EXIT);
}

static void
test_parse_args(void)
{
	struct app_opts opts;

	UT_ASSERT_EQ(parse(&opts, ""), 0);
	UT_ASSERT_EQ(opts.core_mask, 0x1);
	CU_ASSERT(opts.rpc_addr == NULL);
	UT_ASSERT_EQ(opts.poll_mode, REACTOR_POLL_EVENT);
	UT_ASSERT_EQ(opts.idle_spell_us, REACTOR_DEFAULT_IDLE_SPELL_US);

	UT_ASSERT_EQ(parse(&opts, "--idle-spell 0"), 0);
	UT_ASSERT_EQ(opts.idle_spell_us, 0);
	UT_ASSERT_EQ(opts.stall_warn_ms, REACTOR_DEFAULT_STALL_WARN_MS);
	UT_ASSERT_EQ(parse(&opts, "--stall-warn-ms 250"), 0);
	UT_ASSERT_EQ(opts.stall_warn_ms, 250);
	UT_ASSERT_EQ(parse(&opts, "--stall-warn-ms 0"), 0);
	UT_ASSERT_EQ(opts.stall_warn_ms, 0);
	UT_ASSERT_EQ(parse(&opts, "--stall-warn-ms -1"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--stall-warn-ms 1s"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--stall-warn-ms 3600001"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--idle-spell 1000000"), 0);
	UT_ASSERT_EQ(opts.idle_spell_us, 1000000);

	UT_ASSERT_EQ(parse(&opts, "-m 0x3 -r /tmp/s.sock --json c.json --poll-mode busy "
				  "--mem-size 64m --no-huge"),
		     0);
	UT_ASSERT_EQ(opts.core_mask, 0x3);
	UT_ASSERT_STR_EQ(opts.rpc_addr, "/tmp/s.sock");
	UT_ASSERT_STR_EQ(opts.json_config_file, "c.json");
	UT_ASSERT_EQ(opts.poll_mode, REACTOR_POLL_BUSY);
	UT_ASSERT_EQ(opts.arena_size, 64ull << 20);
	CU_ASSERT(opts.no_huge);

	UT_ASSERT_EQ(parse(&opts, "-m c"), 0);
	UT_ASSERT_EQ(opts.core_mask, 0xc);
	UT_ASSERT_EQ(parse(&opts, "--cpu 1 --cpu 3"), 0);
	UT_ASSERT_EQ(opts.core_mask, 0xa);

	UT_ASSERT_EQ(parse(&opts, "-q 16 --depth=8"), 0);
	UT_ASSERT_EQ(g_app_opt_seen, 0x1000);
	UT_ASSERT_STR_EQ(g_app_opt_arg, "8");

	UT_ASSERT_EQ(parse(&opts, "--log-level warn"), 0);
	UT_ASSERT_EQ(log_get_level(), LOG_LEVEL_WARN);
	UT_ASSERT_EQ(parse(&opts, "-L rpc"), 0);
	CU_ASSERT(log_flag_enabled("rpc"));
	log_clear_flag("rpc");
	log_set_level(LOG_LEVEL_NOTICE);

	UT_ASSERT_EQ(parse(&opts, "-h"), 1);

	UT_ASSERT_EQ(parse(&opts, "-m zz"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "-m 0"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--cpu 64"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--cpu x"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "-m 0x1 --cpu 2"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--poll-mode lazy"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--mem-size 12q"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--mem-size 0"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--idle-spell -1"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--idle-spell 1000001"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--idle-spell 5us"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--log-level loud"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "--bogus"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "-x"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "stray"), -EINVAL);
	UT_ASSERT_EQ(parse(&opts, "-m"), -EINVAL);
}

/* ---- Configuration replay ---- */

static struct thread *g_thread;
static char g_dir[32];
static char g_calls[256];
static struct rpc_request *g_held;

static void
method_record(struct rpc_request *req, json_t *params)
{
	const char *tag = json_string_value(json_object_get(params, "tag"));

	/* Record the call order; "fail" answers with an error, "hold" answers later. */
	strncat(g_calls, tag ? tag : "-", sizeof(g_calls) - strlen(g_calls) - 1);
	strncat(g_calls, ",", sizeof(g_calls) - strlen(g_calls) - 1);
	if (tag != NULL && strcmp(tag, "fail") == 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "tag: fail requested");
	} else if (tag != NULL && strcmp(tag, "hold") == 0) {
		g_held = req;
	} else {
		rpc_send_result(req, NULL);
	}
}

struct load_result {
	int calls;
	int rc;
};

static void
load_done(void *ctx, int rc)
{
	struct load_result *r = ctx;

	r->calls++;
	r->rc = rc;
}

static const char *
write_file(const char *name, const char *text)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", g_dir, name);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
	return path;
}

static void
poll_thread(int n)
{
	while (n-- > 0) {
		thread_poll(g_thread, 0, 0);
	}
}

static void
test_load_config(void)
{
	struct load_result r = { 0 };
	const char *path;

	g_calls[0] = '\0';
	path = write_file("ok.json", "{\"subsystems\":[{\"subsystem\":\"bdev\",\"config\":["
				     "{\"method\":\"test_record\",\"params\":{\"tag\":\"a\"}},"
				     "{\"method\":\"test_record\",\"params\":{\"tag\":\"hold\"}},"
				     "{\"method\":\"test_record\"}]},"
				     "{\"subsystem\":\"other\",\"config\":null},"
				     "{\"subsystem\":\"x\",\"config\":[{\"method\":\"test_record\","
				     "\"params\":{\"tag\":\"b\"}}]}]}");
	UT_ASSERT_EQ_FATAL(app_load_config_file(path, load_done, &r), 0);
	poll_thread(10);
	/* The replay waits for the held (asynchronous) answer before going on. */
	UT_ASSERT_STR_EQ(g_calls, "a,hold,");
	UT_ASSERT_EQ(r.calls, 0);
	CU_ASSERT_FATAL(g_held != NULL);
	rpc_send_result(g_held, NULL);
	g_held = NULL;
	poll_thread(10);
	UT_ASSERT_STR_EQ(g_calls, "a,hold,-,b,");
	UT_ASSERT_EQ(r.calls, 1);
	UT_ASSERT_EQ(r.rc, 0);
}

static void
test_load_config_errors(void)
{
	struct load_result r = { 0 };
	const char *path;

	/* A failing call stops the replay: later calls are not made. */
	g_calls[0] = '\0';
	path = write_file("fail.json",
			  "{\"subsystems\":[{\"subsystem\":\"bdev\",\"config\":["
			  "{\"method\":\"test_record\",\"params\":{\"tag\":\"a\"}},"
			  "{\"method\":\"test_record\",\"params\":{\"tag\":\"fail\"}},"
			  "{\"method\":\"test_record\",\"params\":{\"tag\":\"c\"}}]}]}");
	UT_ASSERT_EQ_FATAL(app_load_config_file(path, load_done, &r), 0);
	poll_thread(10);
	UT_ASSERT_EQ(r.calls, 1);
	UT_ASSERT_EQ(r.rc, -EINVAL);
	UT_ASSERT_STR_EQ(g_calls, "a,fail,");

	/* An unknown method fails too. */
	r.calls = 0;
	path = write_file("unknown.json", "{\"subsystems\":[{\"subsystem\":\"bdev\",\"config\":["
					  "{\"method\":\"no_such_method\"}]}]}");
	UT_ASSERT_EQ_FATAL(app_load_config_file(path, load_done, &r), 0);
	poll_thread(10);
	UT_ASSERT_EQ(r.calls, 1);
	UT_ASSERT_EQ(r.rc, -EINVAL);

	/* Structural problems are found before anything runs, and done is not called. */
	g_calls[0] = '\0';
	r.calls = 0;
	UT_ASSERT_EQ(app_load_config_file(write_file("b1.json", "{\"subsystems\": ["), load_done,
					  &r),
		     -EINVAL);
	UT_ASSERT_EQ(app_load_config_file(write_file("b2.json", "{\"subsystems\": {}}"), load_done,
					  &r),
		     -EINVAL);
	UT_ASSERT_EQ(app_load_config_file(write_file("b3.json", "[1]"), load_done, &r), -EINVAL);
	UT_ASSERT_EQ(app_load_config_file(write_file("b4.json",
						     "{\"subsystems\":[{\"subsystem\":\"bdev\","
						     "\"config\":[{\"method\":\"test_record\"},"
						     "{\"params\":{}}]}]}"),
					  load_done, &r),
		     -EINVAL);
	UT_ASSERT_EQ(app_load_config_file(write_file("b5.json",
						     "{\"subsystems\":[{\"config\":[]}]}"),
					  load_done, &r),
		     -EINVAL);
	UT_ASSERT_EQ(app_load_config_file(write_file("b6.json",
						     "{\"subsystems\":[{\"subsystem\":\"bdev\","
						     "\"config\":[{\"method\":\"test_record\","
						     "\"params\":7}]}]}"),
					  load_done, &r),
		     -EINVAL);
	UT_ASSERT_EQ(app_load_config_file("/nonexistent/gga.json", load_done, &r), -ENOENT);
	poll_thread(10);
	UT_ASSERT_EQ(r.calls, 0);
	UT_ASSERT_STR_EQ(g_calls, "");
}

static void
sub_write_config(json_t *config)
{
	json_array_append_new(config, json_pack("{s:s}", "method", "test_record"));
}

static struct app_subsystem g_sub = {
	.name = "testsub",
	.write_config_json = sub_write_config,
};

static void
test_save_config(void)
{
	json_t *cfg, *subs;

	app_subsystem_register(&g_sub);
	/* A second registration is ignored. */
	app_subsystem_register(&g_sub);
	cfg = app_save_config();
	CU_ASSERT_FATAL(cfg != NULL);
	subs = json_object_get(cfg, "subsystems");
	/* The built-in keyring and bdev come first, in that order, then the registered ones. */
	UT_ASSERT_EQ_FATAL(json_array_size(subs), 3);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(subs, 0), "subsystem")),
			 "keyring");
	UT_ASSERT_EQ(json_array_size(json_object_get(json_array_get(subs, 0), "config")), 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(subs, 1), "subsystem")),
			 "bdev");
	CU_ASSERT(json_is_array(json_object_get(json_array_get(subs, 1), "config")));
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(subs, 2), "subsystem")),
			 "testsub");
	UT_ASSERT_EQ(json_array_size(json_object_get(json_array_get(subs, 2), "config")), 1);
	json_decref(cfg);
}

static int
suite_init(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/app_ut.XXXXXX");
	if (mkdtemp(g_dir) == NULL || thread_lib_init() != 0) {
		return 1;
	}
	g_thread = thread_create("app_ut");
	if (g_thread == NULL) {
		return 1;
	}
	thread_set_current(g_thread);
	rpc_register_method("test_record", method_record, RPC_STATE_ANY);
	return 0;
}

static int
suite_fini(void)
{
	static const char *const files[] = {
		"ok.json", "fail.json", "unknown.json", "b1.json", "b2.json",
		"b3.json", "b4.json",   "b5.json",      "b6.json",
	};
	char path[64];
	size_t i;

	rpc_unregister_all();
	poll_thread(4);
	thread_set_current(NULL);
	thread_destroy(g_thread);
	thread_lib_fini();
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", g_dir, files[i]);
		unlink(path);
	}
	rmdir(g_dir);
	return 0;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_parse_args),  UT_TEST(test_signal_action),
		UT_TEST(test_load_config), UT_TEST(test_load_config_errors),
		UT_TEST(test_save_config),
	};

	return ut_run("app", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
