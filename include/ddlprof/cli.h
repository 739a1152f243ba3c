/*
 * What the four commands (ddlprof, ddlprof-report, ddlprof-recommend,
 * ddlprof-sim) share on their command lines, so that an option means one
 * thing everywhere (DESIGN.md section 10):
 *
 *   - each command's options are one table, an X-macro list in a header
 *     of its own (launcher/launcher_opts.h, analyzer/report_opts.h,
 *     recommender/rec_opts.h, scheduler/sim_opts.h): getopt_long's table,
 *     --help and the tests are made from it, so none can miss an option;
 *   - a usage error is one line, "PROG: what is wrong; try --help", and
 *     status 2 (the launcher's own errors are 125, kept apart from the
 *     statuses of the command it runs);
 *   - -o FILE is written through a temporary file renamed over it once
 *     complete, and an existing FILE is replaced only with --force.
 *
 * Static inline functions on libc only, as ddlprof/tracedir.h: the
 * launcher links nothing else. Internal to ddlprof; not an API.
 */
#ifndef DDLPROF_CLI_H
#define DDLPROF_CLI_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DDL_CLI_USAGE 2 /* exit status of a usage error */
#define DDL_CLI_BAD (-2) /* ddl_cli_next: a usage error, said already */
#define DDL_CLI_MAX 64   /* options in one table */

/*
 * One option: ID (the value ddl_cli_next returns for it), its long NAME,
 * its short LETTER (0: none), the name of its argument ARG (NULL: it
 * takes none) and HELP, what it does, for --help. A command lists them as
 *
 *     #define DDL_X_OPTIONS(X) \
 *         X(DDL_X_O_OUTPUT, "output", 'o', "FILE", "write to FILE") ...
 *
 * and makes its enum with DDL_CLI_ENUM and its table with DDL_CLI_OPT.
 */
struct ddl_cli_opt {
	int id;
	const char *name;
	int letter;
	const char *arg;
	const char *help;
};

#define DDL_CLI_ENUM(id, name, letter, arg, help) id,
#define DDL_CLI_OPT(id, name, letter, arg, help) {id, name, letter, arg, help},
/* ids start here, above any letter getopt could return */
#define DDL_CLI_FIRST_ID 256
/* The two options every command ends its list with, the same everywhere;
 * PFX is the command's id prefix (DDL_SIM: DDL_SIM_O_HELP, DDL_SIM_O_VERSION). */
#define DDL_CLI_HELP_VERSION(X, PFX) \
	X(PFX##_O_HELP, "help", 'h', NULL, "print this help and exit") \
	X(PFX##_O_VERSION, "version", 0, NULL, "print the version and exit")

/* A command line being read: see ddl_cli_init. */
struct ddl_cli {
	const char *prog; /* the short name, for messages */
	const struct ddl_cli_opt *opt;
	size_t n;
	int index; /* in opt[] of the option ddl_cli_next returned last */
	struct option lo[DDL_CLI_MAX + 1];
	char shorts[3 * DDL_CLI_MAX + 3];
};

/* Formats one line, "PROG: ...; try --help", on stderr. Returns DDL_CLI_USAGE. */
static inline int ddl_cli_usage(const char *prog, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static inline int ddl_cli_usage(const char *prog, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s; try --help\n", prog, msg);
	return DDL_CLI_USAGE;
}

/*
 * Prepares C to read a command line by the table OPT (N options, at most
 * DDL_CLI_MAX) for PROG. IN_ORDER: stop at the first operand, as a command
 * that runs another command must (ddlprof).
 */
static inline void ddl_cli_init(struct ddl_cli *c, const char *prog, const struct ddl_cli_opt *opt,
                                size_t n, int in_order)
{
	memset(c, 0, sizeof *c);
	c->prog = prog;
	c->opt = opt;
	c->n = n < DDL_CLI_MAX ? n : DDL_CLI_MAX;
	c->index = -1;
	size_t k = 0;
	if (in_order)
		c->shorts[k++] = '+';
	c->shorts[k++] = ':'; /* a missing argument told from an unknown option */
	for (size_t i = 0; i < c->n; i++) {
		c->lo[i] = (struct option){opt[i].name, opt[i].arg ? required_argument : no_argument,
		                           NULL, opt[i].id};
		if (opt[i].letter) {
			c->shorts[k++] = (char)opt[i].letter;
			if (opt[i].arg)
				c->shorts[k++] = ':';
		}
	}
	opterr = 0; /* the messages are ours: the short name, one line */
}

/* The long options of C that start with the N bytes at S, and the last of them in *LAST. */
static inline int ddl_cli_matches(const struct ddl_cli *c, const char *s, size_t n, size_t *last)
{
	int count = 0;
	for (size_t i = 0; i < c->n; i++)
		if (!strncmp(c->opt[i].name, s, n)) {
			if (strlen(c->opt[i].name) == n) {
				*last = i;
				return 1; /* an exact name is never ambiguous */
			}
			*last = i;
			count++;
		}
	return count;
}

/* Says what getopt_long refused (KIND '?' or ':'), in one line. */
static inline void ddl_cli_refused(const struct ddl_cli *c, int argc, char **argv, int kind)
{
	const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (strncmp(a, "--", 2) || !a[2]) {
		/* a short option: getopt names it in optopt */
		if (kind == ':')
			ddl_cli_usage(c->prog, "option -%c needs a value", optopt);
		else if (optopt > 32 && optopt < 127)
			ddl_cli_usage(c->prog, "unknown option -%c", optopt);
		else
			ddl_cli_usage(c->prog, "unknown option %s", a);
		return;
	}
	const char *name = a + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name), last = 0;
	int m = ddl_cli_matches(c, name, len, &last);
	if (kind == ':') {
		ddl_cli_usage(c->prog, "option --%s needs a value", m == 1 ? c->opt[last].name : name);
	} else if (m == 1 && eq) {
		ddl_cli_usage(c->prog, "option --%s takes no value", c->opt[last].name);
	} else if (m > 1) {
		char names[512] = "";
		size_t k = 0;
		for (size_t i = 0; i < c->n && k < sizeof names; i++)
			if (!strncmp(c->opt[i].name, name, len))
				k += (size_t)snprintf(names + k, sizeof names - k, "%s--%s", k ? ", " : "",
				                      c->opt[i].name);
		ddl_cli_usage(c->prog, "ambiguous option --%.*s (%s)", (int)len, name, names);
	} else {
		ddl_cli_usage(c->prog, "unknown option --%.*s", (int)len, name);
	}
}

/*
 * The next option of ARGV: its id, with its argument in optarg and its
 * place in the table in C->index; -1 when the options are done (operands
 * from optind); DDL_CLI_BAD after saying, in one line, what is wrong (an
 * unknown, ambiguous or incomplete option).
 */
static inline int ddl_cli_next(struct ddl_cli *c, int argc, char **argv)
{
	int idx = -1;
	int v = getopt_long(argc, argv, c->shorts, c->lo, &idx);
	if (v == -1)
		return -1;
	if (v == '?' || v == ':') {
		ddl_cli_refused(c, argc, argv, v);
		return DDL_CLI_BAD;
	}
	c->index = idx;
	if (idx < 0)
		for (size_t i = 0; i < c->n; i++)
			if (c->opt[i].letter == v)
				c->index = (int)i;
	return c->index >= 0 ? c->opt[c->index].id : DDL_CLI_BAD;
}

/*
 * Prints OPT's N options to F, one paragraph each: "  -o, --output FILE"
 * and what it does, wrapped at 79 columns.
 */
static inline void ddl_cli_help(FILE *f, const struct ddl_cli_opt *opt, size_t n)
{
	enum { COL = 24, WIDTH = 79 };
	for (size_t i = 0; i < n; i++) {
		char shrt[8] = "    ";
		if (opt[i].letter)
			snprintf(shrt, sizeof shrt, "-%c, ", opt[i].letter);
		int col = fprintf(f, "  %s--%s%s%s", shrt, opt[i].name, opt[i].arg ? " " : "",
		                  opt[i].arg ? opt[i].arg : "");
		if (col > COL - 2) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%*s", COL - col, "");
		col = COL;
		for (const char *w = opt[i].help; *w;) {
			while (*w == ' ')
				w++;
			size_t wl = strcspn(w, " ");
			if (!wl)
				break;
			if (col > COL && col + 1 + (int)wl > WIDTH) {
				fprintf(f, "\n%*s", COL, "");
				col = COL;
			} else if (col > COL) {
				fputc(' ', f);
				col++;
			}
			fwrite(w, 1, wl, f);
			col += (int)wl;
			w += wl;
		}
		fputc('\n', f);
	}
}

/*
 * What is at PATH, an output that OPT (-o, --sqlite) names: whether
 * something is there, whether it is a symlink, whether that has a target,
 * and what that is (ST). A directory or a block device is refused, and a
 * regular file unless FORCE. 0, or -1 after one line on stderr.
 */
struct ddl_cli_target {
	int exists, link, target, special;
	struct stat st;
};

static inline int ddl_cli_target_check(const char *prog, const char *path, int force, const char *opt,
                                       struct ddl_cli_target *t)
{
	struct stat ls;
	t->exists = lstat(path, &ls) == 0;
	t->link = t->exists && S_ISLNK(ls.st_mode);
	t->target = t->link ? stat(path, &t->st) == 0 : t->exists; /* a dangling link has none */
	if (!t->link)
		t->st = ls;
	if (t->target && (S_ISDIR(t->st.st_mode) || S_ISBLK(t->st.st_mode))) {
		fprintf(stderr, "%s: %s: a %s; name a file for %s\n", prog, path,
		        S_ISDIR(t->st.st_mode) ? "directory" : "block device", opt);
		return -1;
	}
	t->special = t->target && !S_ISREG(t->st.st_mode);
	if (t->exists && !t->special && !force) {
		fprintf(stderr, "%s: %s exists; pass --force to overwrite it\n", prog, path);
		return -1;
	}
	return 0;
}

/* Whether PATH names one of the process's own descriptors (/dev/stdout, /dev/fd/N). */
static inline int ddl_cli_own_fd(const char *path)
{
	return !strncmp(path, "/dev/std", 8) || !strncmp(path, "/dev/fd/", 8) ||
	       !strncmp(path, "/proc/self/fd/", 14);
}

/* Creates PATH.tmp.PID beside PATH with MODE, named in TMP (N bytes); its
 * descriptor, or -1 (errno). */
static inline int ddl_cli_tmp_create(const char *path, mode_t mode, char *tmp, size_t n)
{
	if ((size_t)snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid()) >= n) {
		tmp[0] = 0;
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

/*
 * Opens PATH, -o's file, for writing; PROG names the command in messages.
 * A new or existing regular file is written through a temporary name
 * beside it (left in TMP, N bytes), created with MODE, and renamed over
 * PATH once complete (ddl_cli_out_close), so a failure leaves nothing
 * half-written; anything else that exists (a character device such as
 * /dev/null, a FIFO, a symlink such as /dev/stdout) is written where it is
 * and never replaced: TMP is left empty. A directory or a block device is
 * refused. What is there already is overwritten only with FORCE, but for
 * a device, FIFO or socket, whose contents writing does not replace.
 * Returns the stream, or NULL after one line on stderr, which names PATH
 * (never the temporary name).
 */
static inline FILE *ddl_cli_out_open(const char *prog, const char *path, int force, mode_t mode,
                                     char *tmp, size_t n)
{
	struct ddl_cli_target tg;
	tmp[0] = 0;
	if (ddl_cli_target_check(prog, path, force, "-o", &tg) < 0)
		return NULL;
	int fd;
	if (tg.special || tg.link) {
		/* in place, through the link if one: the target stays what it is;
		 * one of the process's own descriptors (/dev/stdout) appended to,
		 * as the shell that opened it decided */
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC |
		                    (tg.special ? 0 : ddl_cli_own_fd(path) ? O_APPEND : O_TRUNC));
	} else {
		fd = ddl_cli_tmp_create(path, mode, tmp, n);
	}
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		if (tmp[0])
			unlink(tmp);
	}
	return f;
}

/* Ends -o's output F: in place, or renamed over PATH when OK (else removed). 0 or -1. */
static inline int ddl_cli_out_close(FILE *f, const char *path, const char *tmp, int ok)
{
	int rc = fclose(f) == 0 && ok ? 0 : -1;
	if (rc == 0 && tmp[0] && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0 && tmp[0])
		unlink(tmp);
	return rc;
}

#endif
