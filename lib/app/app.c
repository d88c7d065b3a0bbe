/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application framework: options, start-up, configuration replay and
 * the shutdown sequence shared by gga_tgt and bdevperf.
 *
 * Signals: SIGINT and SIGTERM are blocked in every thread before any
 * reactor thread exists and are taken by the watchdog thread with
 * sigtimedwait(). The first one asks the app thread to shut down (a
 * message), so shutdown runs in order, on the thread that owns RPC and
 * configuration. The second one forces the exit (code 128 + signal): the
 * shutdown may never finish if a reactor is stuck. Between signals the
 * watchdog thread wakes every quarter of --stall-warn-ms and logs any
 * reactor that has not come back to its loop for that long, with what it
 * runs. It sleeps otherwise: an idle daemon does not spin. SIGPIPE is
 * ignored: a vanished peer must be an error return, not the death of the
 * daemon.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gga/app.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/keyring.h"
#include "gga/log.h"
#include "gga/reactor.h"
#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "app_internal.h"

static struct app_subsystem g_bdev_subsystem = {
	.name = "bdev",
	.init = bdev_subsystem_init,
	.fini = bdev_subsystem_fini,
	.write_config_json = bdev_subsystem_config_json,
};

/*
 * The keyring comes first: bdevs (an NVMe controller attached with a key)
 * and nvmf hosts name keys, so its calls must be replayed before theirs, and
 * it stops last, once they have let go of their references.
 */
static struct app_subsystem g_keyring_subsystem = {
	.name = "keyring",
	.init = keyring_subsystem_init,
	.fini = keyring_subsystem_fini,
	.write_config_json = keyring_subsystem_config_json,
	.next = &g_bdev_subsystem,
};

/* Registration order; the built-in keyring and bdev subsystems are always first. */
static struct app_subsystem *g_subsystems = &g_keyring_subsystem;

static struct app_opts *g_opts;
static int g_exit_code;
/* Set once by the first app_stop() (any thread) or start-up failure. */
static bool g_stop_requested;
/* The rest is touched on the app thread only. */
/* --json-ignore-init-errors of the running app: a failed call does not stop the replay. */
static bool g_config_ignore_errors;
static bool g_loading_config;
static bool g_started;
static bool g_shutting_down;
static uint32_t g_num_inited;
/* The watchdog thread: signals and the reactor stall check. */
static pthread_t g_watchdog;
static bool g_watchdog_stop;
static uint32_t g_signals;

void
app_subsystem_register(struct app_subsystem *subsystem)
{
	struct app_subsystem *s = g_subsystems;

	for (;;) {
		if (s == subsystem) {
			WARNLOG("app: subsystem %s registered twice\n", subsystem->name);
			return;
		}
		if (s->next == NULL) {
			break;
		}
		s = s->next;
	}
	subsystem->next = NULL;
	s->next = subsystem;
}

static struct app_subsystem *
subsystem_at(uint32_t index)
{
	struct app_subsystem *s = g_subsystems;

	while (s != NULL && index-- > 0) {
		s = s->next;
	}
	return s;
}

void
app_opts_init(struct app_opts *opts, const char *name)
{
	memset(opts, 0, sizeof(*opts));
	opts->name = name;
	opts->core_mask = 0x1;
	opts->poll_mode = REACTOR_POLL_EVENT;
	opts->idle_spell_us = REACTOR_DEFAULT_IDLE_SPELL_US;
	opts->stall_warn_ms = REACTOR_DEFAULT_STALL_WARN_MS;
}

/* Long-only common options; apps use values >= 0x1000. */
enum {
	OPT_CPU = 0x100,
	OPT_JSON,
	OPT_POLL_MODE,
	OPT_LOG_LEVEL,
	OPT_MEM_SIZE,
	OPT_NO_HUGE,
	OPT_IDLE_SPELL,
	OPT_JSON_IGNORE_INIT_ERRORS,
	OPT_STALL_WARN,
	OPT_SAVE_CONFIG_ON_EXIT,
};

static const struct option g_common_long[] = {
	{ "cpumask", required_argument, NULL, 'm' },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "rpc-socket", required_argument, NULL, 'r' },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "json-ignore-init-errors", no_argument, NULL, OPT_JSON_IGNORE_INIT_ERRORS },
	{ "poll-mode", required_argument, NULL, OPT_POLL_MODE },
	{ "idle-spell", required_argument, NULL, OPT_IDLE_SPELL },
	{ "stall-warn-ms", required_argument, NULL, OPT_STALL_WARN },
	{ "save-config-on-exit", required_argument, NULL, OPT_SAVE_CONFIG_ON_EXIT },
	{ "logflag", required_argument, NULL, 'L' },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "mem-size", required_argument, NULL, OPT_MEM_SIZE },
	{ "no-huge", no_argument, NULL, OPT_NO_HUGE },
	{ "help", no_argument, NULL, 'h' },
};

static void
usage(const struct app_opts *opts, void (*usage_cb)(void))
{
	printf("Usage: %s [options]\n\n", opts->name);
	printf("Common options:\n");
	printf("  -m, --cpumask MASK     cores to run reactors on, hex (default 0x1)\n");
	printf("      --cpu N            run a reactor on core N (repeatable; instead of -m)\n");
	printf("  -r, --rpc-socket PATH  JSON-RPC Unix socket (default %s)\n",
	       opts->rpc_addr ? opts->rpc_addr : "none");
	printf("      --json FILE        replay a configuration (save_config output) at start\n");
	printf("      --json-ignore-init-errors\n"
	       "                         log a call of the --json file that fails and go on\n"
	       "                         (e.g. a remote target still down) instead of exiting\n");
	printf("      --save-config-on-exit FILE\n"
	       "                         on a clean stop (SIGINT/SIGTERM after a good start),\n"
	       "                         write the configuration (save_config) to FILE\n");
	printf("      --poll-mode MODE   event (default: idle reactors sleep) or busy (spin)\n");
	printf("      --idle-spell US    event mode: idle microseconds before a reactor sleeps\n"
	       "                         (default %u; 0 when several daemons share a core)\n",
	       REACTOR_DEFAULT_IDLE_SPELL_US);
	printf("      --stall-warn-ms MS log a reactor stuck in one poller or message for longer\n"
	       "                         (default %u; 0 turns the check off)\n",
	       REACTOR_DEFAULT_STALL_WARN_MS);
	printf("      --mem-size SIZE    I/O buffer arena size, k/m/g suffix (default 256m)\n");
	printf("      --no-huge          do not use hugepages for the arena\n");
	printf("  -L, --logflag FLAG     debug logs of a component (bdev, thread, rpc, all...)\n");
	printf("      --log-level LEVEL  error, warn, notice (default), info or debug\n");
	printf("  -h, --help             print this help and exit\n");
	if (usage_cb != NULL) {
		printf("\n");
		usage_cb();
	}
}

static int
parse_log_level(const char *s, enum log_level *level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} levels[] = {
		{ "error", LOG_LEVEL_ERROR },  { "warn", LOG_LEVEL_WARN },
		{ "warning", LOG_LEVEL_WARN }, { "notice", LOG_LEVEL_NOTICE },
		{ "info", LOG_LEVEL_INFO },    { "debug", LOG_LEVEL_DEBUG },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(levels); i++) {
		if (strcasecmp(s, levels[i].name) == 0) {
			*level = levels[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

static int
parse_cpu(const char *s, uint64_t *mask)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v >= 64) {
		return -EINVAL;
	}
	*mask |= 1ull << v;
	return 0;
}

/* Handle one common option. Returns 0, -EINVAL (message printed), or 1 for -h. */
static int
parse_common(struct app_opts *opts, int ch, const char *arg, uint64_t *cpu_mask, bool *have_mask)
{
	enum log_level level;
	uint64_t v;
	char *end;

	switch (ch) {
	case 'm':
		if (parse_core_mask(arg, &opts->core_mask) != 0) {
			fprintf(stderr, "%s: invalid core mask '%s' (hex, e.g. 0x3)\n", opts->name,
				arg);
			return -EINVAL;
		}
		*have_mask = true;
		return 0;
	case OPT_CPU:
		if (parse_cpu(arg, cpu_mask) != 0) {
			fprintf(stderr, "%s: invalid --cpu '%s' (a core number 0..63)\n",
				opts->name, arg);
			return -EINVAL;
		}
		return 0;
	case 'r':
		opts->rpc_addr = arg;
		return 0;
	case OPT_JSON:
		opts->json_config_file = arg;
		return 0;
	case OPT_JSON_IGNORE_INIT_ERRORS:
		opts->json_ignore_init_errors = true;
		return 0;
	case OPT_SAVE_CONFIG_ON_EXIT:
		opts->save_config_file = arg;
		return 0;
	case OPT_POLL_MODE:
		if (reactor_parse_poll_mode(arg, &opts->poll_mode) != 0) {
			fprintf(stderr, "%s: invalid --poll-mode '%s' (event or busy)\n",
				opts->name, arg);
			return -EINVAL;
		}
		return 0;
	case OPT_IDLE_SPELL:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || v > 1000000) {
			fprintf(stderr,
				"%s: invalid --idle-spell '%s' (microseconds, 0..1000000)\n",
				opts->name, arg);
			return -EINVAL;
		}
		opts->idle_spell_us = (uint32_t)v;
		return 0;
	case OPT_STALL_WARN:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || v > 3600 * 1000) {
			fprintf(stderr,
				"%s: invalid --stall-warn-ms '%s' (milliseconds, 0..3600000)\n",
				opts->name, arg);
			return -EINVAL;
		}
		opts->stall_warn_ms = (uint32_t)v;
		return 0;
	case 'L':
		if (log_set_flag(arg) != 0) {
			fprintf(stderr, "%s: invalid log flag '%s'\n", opts->name, arg);
			return -EINVAL;
		}
		return 0;
	case OPT_LOG_LEVEL:
		if (parse_log_level(arg, &level) != 0) {
			fprintf(stderr,
				"%s: invalid --log-level '%s' "
				"(error, warn, notice, info, debug)\n",
				opts->name, arg);
			return -EINVAL;
		}
		log_set_level(level);
		return 0;
	case OPT_MEM_SIZE:
		if (parse_size(arg, &v) != 0 || v == 0 || v > SIZE_MAX) {
			fprintf(stderr, "%s: invalid --mem-size '%s' (e.g. 512m, 2g)\n", opts->name,
				arg);
			return -EINVAL;
		}
		opts->arena_size = (size_t)v;
		return 0;
	case OPT_NO_HUGE:
		opts->no_huge = true;
		return 0;
	case 'h':
		return 1;
	default:
		return -ENOENT;
	}
}

int
app_parse_args(int argc, char **argv, struct app_opts *opts, const char *app_getopt,
	       const struct option *app_long, int (*parse_cb)(int ch, const char *arg),
	       void (*usage_cb)(void))
{
	size_t n_common = ARRAY_SIZE(g_common_long), n_app = 0;
	struct option *longopts;
	char *shortopts;
	uint64_t cpu_mask = 0;
	bool have_mask = false;
	int ch, rc = 0;

	while (app_long != NULL && app_long[n_app].name != NULL) {
		n_app++;
	}
	longopts = calloc(n_common + n_app + 1, sizeof(*longopts));
	if (asprintf(&shortopts, "m:r:L:h%s", app_getopt ? app_getopt : "") < 0) {
		shortopts = NULL;
	}
	if (longopts == NULL || shortopts == NULL) {
		fprintf(stderr, "%s: out of memory\n", opts->name);
		free(longopts);
		free(shortopts);
		return -ENOMEM;
	}
	memcpy(longopts, g_common_long, sizeof(g_common_long));
	if (n_app > 0) {
		memcpy(longopts + n_common, app_long, n_app * sizeof(*longopts));
	}

	/* Start from scratch: the caller (or a test) may parse more than once. */
	optind = 0;
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (ch == '?' || ch == ':') {
			rc = -EINVAL;
			break;
		}
		rc = parse_common(opts, ch, optarg, &cpu_mask, &have_mask);
		if (rc == -ENOENT) {
			rc = parse_cb != NULL ? parse_cb(ch, optarg) : -EINVAL;
		}
		if (rc != 0) {
			break;
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", opts->name, argv[optind]);
		rc = -EINVAL;
	}
	if (rc == 0 && cpu_mask != 0) {
		if (have_mask) {
			fprintf(stderr, "%s: give either -m or --cpu, not both\n", opts->name);
			rc = -EINVAL;
		} else {
			opts->core_mask = cpu_mask;
		}
	}
	free(longopts);
	free(shortopts);
	if (rc == 1) {
		usage(opts, usage_cb);
		return 1;
	}
	if (rc != 0) {
		fprintf(stderr, "Try '%s -h' for more information.\n", opts->name);
		return -EINVAL;
	}
	return 0;
}

/* Shutdown, last step: every subsystem is down. */
static void
shutdown_done(void)
{
	rpc_unregister_all();
	rpc_set_state(RPC_STATE_STARTUP);
	reactors_stop();
}

static void fini_next(void *arg);

static void
fini_done(void *arg)
{
	/* Continue from a fresh message: fini callbacks may come from deep stacks. */
	if (thread_send_msg(thread_get_app(), fini_next, NULL) != 0) {
		ERRLOG("app: cannot continue shutdown: message queue full\n");
	}
}

/* Stop subsystems in reverse order of start. */
static void
fini_next(void *arg)
{
	struct app_subsystem *s;

	if (g_num_inited == 0) {
		shutdown_done();
		return;
	}
	s = subsystem_at(--g_num_inited);
	DEBUGLOG(app, "stopping subsystem %s\n", s->name);
	if (s->fini != NULL) {
		s->fini(fini_done, NULL);
	} else {
		fini_done(NULL);
	}
}

static void
shutdown_continue_msg(void *arg)
{
	fini_next(NULL);
}

void
app_shutdown_continue(void)
{
	if (thread_send_msg(thread_get_app(), shutdown_continue_msg, NULL) != 0) {
		ERRLOG("app: cannot continue shutdown: message queue full\n");
	}
}

static void
begin_shutdown(void)
{
	if (g_shutting_down) {
		return;
	}
	g_shutting_down = true;
	NOTICELOG("%s: shutting down\n", g_opts->name);
	app_notify("STOPPING=1");
	/*
	 * Only a daemon that started well and stops cleanly saves: a failed
	 * start would overwrite a good file with half a configuration.
	 */
	if (g_started && g_exit_code == 0 && g_opts->save_config_file != NULL) {
		app_save_config_file(g_opts->save_config_file);
	}
	/* No new requests from here on; answers still in flight are dropped. */
	rpc_server_close();
	if (g_started && g_opts->shutdown_fn != NULL) {
		g_opts->shutdown_fn(g_opts->start_ctx);
		return;
	}
	fini_next(NULL);
}

static void
shutdown_msg(void *arg)
{
	/* A config replay in progress finishes its current call first (config_loaded). */
	if (g_loading_config) {
		return;
	}
	begin_shutdown();
}

void
app_stop(int rc)
{
	struct thread *app_thread = thread_get_app();

	if (__atomic_exchange_n(&g_stop_requested, true, __ATOMIC_SEQ_CST)) {
		return;
	}
	g_exit_code = rc;
	if (app_thread == NULL || thread_send_msg(app_thread, shutdown_msg, NULL) != 0) {
		ERRLOG("app: cannot start shutdown: app thread unavailable\n");
	}
}

/* Start-up failed on the app thread: shut down what is up, exit code 1. */
static void
start_failed(void)
{
	__atomic_store_n(&g_stop_requested, true, __ATOMIC_SEQ_CST);
	g_exit_code = 1;
	begin_shutdown();
}

enum app_signal_action
app_signal_action(uint32_t signals_before, bool stop_requested)
{
	if (signals_before >= 1) {
		return APP_SIGNAL_FORCE_EXIT;
	}
	return stop_requested ? APP_SIGNAL_NOTE : APP_SIGNAL_STOP;
}

/* On the watchdog thread. */
static void
handle_signal(int signo)
{
	bool stopping = __atomic_load_n(&g_stop_requested, __ATOMIC_SEQ_CST);

	switch (app_signal_action(g_signals++, stopping)) {
	case APP_SIGNAL_STOP:
		NOTICELOG("%s: %s received\n", g_opts->name, strsignal(signo));
		app_stop(0);
		break;
	case APP_SIGNAL_NOTE:
		NOTICELOG("%s: %s received while shutting down; another one forces the exit\n",
			  g_opts->name, strsignal(signo));
		break;
	case APP_SIGNAL_FORCE_EXIT:
		ERRLOG("%s: second signal (%s): shutdown did not finish; forcing exit with "
		       "code %d\n",
		       g_opts->name, strsignal(signo), 128 + signo);
		fflush(stdout);
		fflush(stderr);
		/* Not exit(): atexit handlers and destructors could wait on the stuck reactor. */
		_exit(128 + signo);
	}
}

/* Sent by app_start() to the watchdog thread so it sees g_watchdog_stop at once. */
#define WATCHDOG_WAKE_SIGNAL SIGRTMIN

static void *
watchdog_main(void *arg)
{
	uint32_t stall_ms = g_opts->stall_warn_ms;
	uint64_t period_ms = stall_ms > 0 ? GGA_MAX(stall_ms / 4, 10u) : 1000;
	struct reactor_stall stall;
	struct timespec ts;
	sigset_t sigs;
	int signo;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, WATCHDOG_WAKE_SIGNAL);
	ts.tv_sec = (time_t)(period_ms / 1000);
	ts.tv_nsec = (long)(period_ms % 1000) * 1000000;
	while (!__atomic_load_n(&g_watchdog_stop, __ATOMIC_SEQ_CST)) {
		signo = sigtimedwait(&sigs, NULL, &ts);
		if (signo == SIGINT || signo == SIGTERM) {
			handle_signal(signo);
		}
		reactors_check_stalls((uint64_t)stall_ms * 1000, &stall, 1);
	}
	return NULL;
}

static void
config_loaded(void *ctx, int rc)
{
	g_loading_config = false;
	if (rc == -ECANCELED && __atomic_load_n(&g_stop_requested, __ATOMIC_SEQ_CST)) {
		/* Interrupted by a signal or app_stop(): a normal shutdown. */
		begin_shutdown();
		return;
	}
	if (rc != 0) {
		ERRLOG("%s: loading %s failed; shutting down\n", g_opts->name,
		       g_opts->json_config_file);
		start_failed();
		return;
	}
	if (__atomic_load_n(&g_stop_requested, __ATOMIC_SEQ_CST)) {
		begin_shutdown();
		return;
	}
	rpc_set_state(RPC_STATE_RUNTIME);
	g_started = true;
	/* Scripts wait for this line. */
	printf("%s: ready\n", g_opts->name);
	fflush(stdout);
	app_notify("READY=1\nSTATUS=configuration loaded, serving");
	if (g_opts->start_fn != NULL) {
		g_opts->start_fn(g_opts->start_ctx);
	}
}

static void
app_start_msg(void *arg)
{
	struct app_subsystem *s;
	int rc;

	for (s = g_subsystems; s != NULL; s = s->next) {
		rc = s->init != NULL ? s->init() : 0;
		if (rc != 0) {
			ERRLOG("%s: subsystem %s failed to start: %s\n", g_opts->name, s->name,
			       strerror(-rc));
			start_failed();
			return;
		}
		g_num_inited++;
	}
	rpc_register_builtin_methods();
	app_rpc_register();
#ifdef GGA_TEST_HOOKS
	/* A notice, not a warning: tools that print JSON (bdevperf) keep warnings on stderr. */
	NOTICELOG("%s: built with test hooks (CONFIG_TEST_HOOKS=y): not for production\n",
		  g_opts->name);
#endif
	if (g_opts->rpc_addr != NULL) {
		rc = rpc_server_listen(g_opts->rpc_addr);
		if (rc != 0) {
			ERRLOG("%s: cannot serve JSON-RPC on %s: %s\n", g_opts->name,
			       g_opts->rpc_addr,
			       rc == -EADDRINUSE ?
				       "another process is listening there (another gga_tgt? stop it, or "
				       "give this one its own socket with -r PATH)" :
				       strerror(-rc));
			start_failed();
			return;
		}
	}
	rpc_set_state(RPC_STATE_STARTUP);
	if (g_opts->json_config_file == NULL) {
		config_loaded(NULL, 0);
		return;
	}
	g_loading_config = true;
	g_config_ignore_errors = g_opts->json_ignore_init_errors;
	rc = app_load_config_file(g_opts->json_config_file, config_loaded, NULL);
	if (rc != 0) {
		g_loading_config = false;
		start_failed();
	}
}

/* Discard signals that arrived after the watchdog stopped taking them. */
static void
drain_signals(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, WATCHDOG_WAKE_SIGNAL);
	while (sigtimedwait(&sigs, NULL, &zero) > 0) {
	}
}

int
app_start(struct app_opts *opts)
{
	struct reactor_opts ropts;
	struct env_opts eopts;
	sigset_t sigs;
	int rc;

	if (opts == NULL || opts->name == NULL) {
		return 1;
	}
	g_opts = opts;
	g_exit_code = 0;
	g_stop_requested = false;
	g_loading_config = false;
	g_started = false;
	g_shutting_down = false;
	g_num_inited = 0;
	g_signals = 0;
	__atomic_store_n(&g_watchdog_stop, false, __ATOMIC_SEQ_CST);

	/*
	 * Block before any thread exists (reactors, or helpers the libraries
	 * start) so that every thread inherits the mask and the signals can only
	 * be taken by the watchdog thread. The mask is left in place when
	 * app_start returns: a late second signal must not kill the process on
	 * its way out.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, WATCHDOG_WAKE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	env_opts_init(&eopts);
	eopts.name = opts->name;
	eopts.arena_size = opts->arena_size;
	eopts.no_huge = opts->no_huge;
	rc = env_init(&eopts);
	if (rc != 0) {
		ERRLOG("%s: cannot set up the memory environment: %s\n", opts->name, strerror(-rc));
		rc = 1;
		goto out_drain_signals;
	}

	reactor_opts_init(&ropts);
	ropts.core_mask = opts->core_mask;
	ropts.poll_mode = opts->poll_mode;
	ropts.idle_spell_us = opts->idle_spell_us;
	rc = reactors_init(&ropts);
	if (rc != 0) {
		ERRLOG("%s: cannot create reactors for core mask 0x%llx: %s\n", opts->name,
		       (unsigned long long)opts->core_mask, strerror(-rc));
		rc = 1;
		goto out_fini_env;
	}
	if (thread_send_msg(thread_get_app(), app_start_msg, NULL) != 0) {
		ERRLOG("%s: cannot start the app thread\n", opts->name);
		rc = 1;
		goto out_fini_reactors;
	}
	rc = pthread_create(&g_watchdog, NULL, watchdog_main, NULL);
	if (rc != 0) {
		ERRLOG("%s: cannot start the watchdog thread: %s\n", opts->name, strerror(rc));
		rc = 1;
		goto out_fini_reactors;
	}
	pthread_setname_np(g_watchdog, "app_watchdog");
	rc = reactors_start();
	if (rc != 0) {
		ERRLOG("%s: reactors failed: %s\n", opts->name, strerror(-rc));
		g_exit_code = 1;
	}
	rc = g_exit_code;
	__atomic_store_n(&g_watchdog_stop, true, __ATOMIC_SEQ_CST);
	pthread_kill(g_watchdog, WATCHDOG_WAKE_SIGNAL);
	pthread_join(g_watchdog, NULL);

out_fini_reactors:
	reactors_fini();
out_fini_env:
	env_fini();
out_drain_signals:
	drain_signals();
	return rc;
}

/* Configuration replay: the calls of every subsystem, one at a time, in file order. */
struct config_load {
	char *path;
	json_t *calls; /* array of {"method", "params"} objects */
	size_t next;
	bool ignore_errors;
	size_t failed;
	void (*done)(void *ctx, int rc);
	void *done_ctx;
};

static void
config_load_finish(struct config_load *load, int rc)
{
	void (*done)(void *ctx, int rc) = load->done;
	void *done_ctx = load->done_ctx;

	json_decref(load->calls);
	free(load->path);
	free(load);
	done(done_ctx, rc);
}

static void config_load_next(void *arg);

static void
config_call_done(void *arg, json_t *response)
{
	struct config_load *load = arg;
	json_t *call = json_array_get(load->calls, load->next);
	const char *method = json_string_value(json_object_get(call, "method"));
	json_t *error = json_object_get(response, "error");
	json_int_t code;

	if (error != NULL) {
		code = json_integer_value(json_object_get(error, "code"));
		ERRLOG("%s: %s (call %zu of %zu) failed: error %lld: %s\n", load->path, method,
		       load->next + 1, json_array_size(load->calls), (long long)code,
		       json_string_value(json_object_get(error, "message")) ?: "(no message)");
		json_decref(response);
		if (!load->ignore_errors) {
			/* A negative errno travels as is; JSON-RPC codes become -EINVAL. */
			config_load_finish(load, code < 0 && code > -4096 ? (int)code : -EINVAL);
			return;
		}
		WARNLOG("%s: going on with the next call (--json-ignore-init-errors)\n",
			load->path);
		load->failed++;
	}
	if (error == NULL) {
		json_decref(response);
	}
	load->next++;
	/* From a fresh message: a handler may have answered inside rpc_call. */
	if (thread_get_current() == NULL ||
	    thread_send_msg(thread_get_current(), config_load_next, load) != 0) {
		config_load_next(load);
	}
}

static void
config_load_next(void *arg)
{
	struct config_load *load = arg;
	json_t *call;
	int rc;

	if (__atomic_load_n(&g_stop_requested, __ATOMIC_SEQ_CST) && g_loading_config) {
		NOTICELOG("%s: loading interrupted by shutdown\n", load->path);
		config_load_finish(load, -ECANCELED);
		return;
	}
	if (load->next == json_array_size(load->calls)) {
		if (load->failed > 0) {
			WARNLOG("%s: %zu of %zu calls failed and were skipped\n", load->path,
				load->failed, json_array_size(load->calls));
		}
		config_load_finish(load, 0);
		return;
	}
	call = json_array_get(load->calls, load->next);
	rc = rpc_call(json_string_value(json_object_get(call, "method")),
		      json_object_get(call, "params"), config_call_done, load);
	if (rc != 0) {
		ERRLOG("%s: cannot call %s: %s\n", load->path,
		       json_string_value(json_object_get(call, "method")), strerror(-rc));
		config_load_finish(load, rc);
	}
}

/* Check the whole file before running any of it; collect the calls in order. */
static int
config_collect_calls(const char *path, json_t *root, json_t *calls)
{
	json_t *subsystems, *entry, *config, *call, *method, *params;
	size_t i, j;

	subsystems = json_object_get(root, "subsystems");
	if (!json_is_object(root) || !json_is_array(subsystems)) {
		ERRLOG("%s: expected an object with a \"subsystems\" array\n", path);
		return -EINVAL;
	}
	json_array_foreach(subsystems, i, entry)
	{
		if (!json_is_object(entry) ||
		    !json_is_string(json_object_get(entry, "subsystem"))) {
			ERRLOG("%s: subsystems[%zu]: expected an object with a "
			       "\"subsystem\" name\n",
			       path, i);
			return -EINVAL;
		}
		config = json_object_get(entry, "config");
		if (config == NULL || json_is_null(config)) {
			continue;
		}
		if (!json_is_array(config)) {
			ERRLOG("%s: subsystem %s: \"config\" must be an array\n", path,
			       json_string_value(json_object_get(entry, "subsystem")));
			return -EINVAL;
		}
		json_array_foreach(config, j, call)
		{
			method = json_object_get(call, "method");
			params = json_object_get(call, "params");
			if (!json_is_object(call) || !json_is_string(method) ||
			    (params != NULL && !json_is_object(params) && !json_is_array(params) &&
			     !json_is_null(params))) {
				ERRLOG("%s: subsystem %s, config[%zu]: expected "
				       "{\"method\": string, \"params\": object}\n",
				       path, json_string_value(json_object_get(entry, "subsystem")),
				       j);
				return -EINVAL;
			}
			if (json_is_null(params)) {
				json_object_del(call, "params");
			}
			if (json_array_append(calls, call) != 0) {
				return -ENOMEM;
			}
		}
	}
	return 0;
}

int
app_load_config_file(const char *path, void (*done)(void *ctx, int rc), void *ctx)
{
	struct config_load *load;
	json_error_t err;
	json_t *root;
	int rc;

	root = json_load_file(path, 0, &err);
	if (root == NULL) {
		if (json_error_code(&err) == json_error_cannot_open_file) {
			ERRLOG("%s\n", err.text);
			return -ENOENT;
		}
		ERRLOG("%s: line %d, column %d: %s\n", path, err.line, err.column, err.text);
		return -EINVAL;
	}
	load = calloc(1, sizeof(*load));
	if (load == NULL) {
		json_decref(root);
		return -ENOMEM;
	}
	load->path = strdup(path);
	load->calls = json_array();
	load->done = done;
	load->done_ctx = ctx;
	load->ignore_errors = g_config_ignore_errors;
	if (load->path == NULL || load->calls == NULL) {
		rc = -ENOMEM;
		goto out_free_load;
	}
	rc = config_collect_calls(path, root, load->calls);
	json_decref(root);
	root = NULL;
	if (rc != 0) {
		goto out_free_load;
	}
	NOTICELOG("%s: replaying %zu calls\n", path, json_array_size(load->calls));
	config_load_next(load);
	return 0;

out_free_load:
	json_decref(root);
	json_decref(load->calls);
	free(load->path);
	free(load);
	return rc;
}

json_t *
app_save_config(void)
{
	struct app_subsystem *s;
	json_t *root, *subsystems, *config;

	subsystems = json_array();
	root = json_pack("{s:o}", "subsystems", subsystems);
	if (root == NULL) {
		return NULL;
	}
	for (s = g_subsystems; s != NULL; s = s->next) {
		config = json_array();
		if (config == NULL) {
			json_decref(root);
			return NULL;
		}
		if (s->write_config_json != NULL) {
			s->write_config_json(config);
		}
		if (json_array_append_new(subsystems, json_pack("{s:s, s:o}", "subsystem", s->name,
								"config", config)) != 0) {
			json_decref(root);
			return NULL;
		}
	}
	return root;
}
