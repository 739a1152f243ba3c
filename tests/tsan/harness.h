/*
 * What the ThreadSanitizer programs of `make tsan` share (harness.c): the
 * checks and their tally, and running the program's own workload in a child
 * with profiling on into a fresh trace directory.
 */
#ifndef DDL_TSAN_HARNESS_H
#define DDL_TSAN_HARNESS_H

/* Counts a check; prints "tsan: FAILED: WHAT" when OK is 0. */
void tsan_check(int ok, const char *what);

/*
 * Runs ARGV0 with the single argument "run" in a child, with profiling on
 * into a new directory (written to DIR, at least 32 bytes), the ddlprof
 * settings ENV gives (NULL-terminated "NAME=VALUE" strings) and an alarm of
 * TIMEOUT_S. Checks (tsan_check) that it exits 0, saying when
 * ThreadSanitizer's exit code 66 says it reported. Returns -1 when the
 * directory or the child cannot be made, else 0.
 */
int tsan_run_profiled(const char *argv0, char *dir, const char *const *env, unsigned timeout_s);

/* Removes the trace directory DIR and the files in it. */
void tsan_remove_dir(const char *dir);

/* Prints "N passed, N failed"; returns the exit status: 1 on any failure. */
int tsan_summary(void);

#endif
