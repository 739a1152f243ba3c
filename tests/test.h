/*
 * The tiny test runner's interface. Every test is a function returning
 * DDL_PASS, DDL_FAIL or DDL_SKIP, listed once in DDL_TESTS so the runner
 * and the declarations stay in step. Helpers run programs, collect their
 * output and read reports.
 */
#ifndef DDL_TEST_H
#define DDL_TEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

enum { DDL_PASS = 0, DDL_FAIL = 1, DDL_SKIP = 2 };

#define DDL_TESTS(X) \
	X(reader_roundtrip) \
	X(reader_truncation_every_offset) \
	X(reader_corruption_every_chunk) \
	X(reader_bad_headers) \
	X(reader_clock) \
	X(reader_out_of_memory) \
	X(reader_bomb) \
	X(reader_sparse) \
	X(reader_hostile_times) \
	X(reader_events_on_demand) \
	X(reader_first_read_keeps) \
	X(reader_events_budget) \
	X(reader_crc32c_lanes) \
	X(reader_read_again_unchanged) \
	X(reader_rare_places) \
	X(report_hostile_sums) \
	X(report_many_threads) \
	X(report_nomem_each) \
	X(report_nomem_compare) \
	X(fuzzseeds_traces) \
	X(fuzzseeds_loaders) \
	X(e2e_tcp_mix) \
	X(e2e_udp) \
	X(e2e_socketpair) \
	X(e2e_nonblock) \
	X(e2e_eintr) \
	X(e2e_forkexec) \
	X(e2e_threads) \
	X(e2e_exitcode) \
	X(e2e_sigkill_truncated) \
	X(e2e_sigkill_random) \
	X(e2e_fatal_signal_flush) \
	X(e2e_disk_full) \
	X(e2e_unwritable_dir) \
	X(e2e_bad_settings) \
	X(e2e_settings_select) \
	X(e2e_closes_every_fd) \
	X(e2e_python_sockets) \
	X(e2e_fork_no_duplicates) \
	X(e2e_stderr_reused) \
	X(e2e_exec_chain) \
	X(e2e_fortified_and_peek) \
	X(e2e_hostile_program) \
	X(e2e_signal_handler_races) \
	X(e2e_spawn_family) \
	X(e2e_fork_storm) \
	X(e2e_thread_storm) \
	X(e2e_signal_storm) \
	X(e2e_inline_storms) \
	X(e2e_descriptor_exhaustion) \
	X(e2e_file_size_limit) \
	X(e2e_process_limit) \
	X(e2e_fork_quiet_child) \
	X(e2e_fork_vforked) \
	X(e2e_altstack_view) \
	X(e2e_address_limit) \
	X(e2e_address_limit_threads) \
	X(e2e_setuid_program) \
	X(e2e_fatal_signal_handler) \
	X(e2e_dir_mode_fixed) \
	X(e2e_signal_storm_calls) \
	X(e2e_errno_at_start) \
	X(e2e_rank_env) \
	X(e2e_two_hosts) \
	X(e2e_marker_iterations) \
	X(e2e_socket_iterations) \
	X(iter_tcpring) \
	X(iter_long_runs) \
	X(iter_autocorr) \
	X(iter_tcpring_markers_agree) \
	X(iter_ranks_env) \
	X(iter_two_hosts) \
	X(iter_mpi) \
	X(iter_synth) \
	X(iter_torch_isolated) \
	X(iter_waits) \
	X(iter_no_loop) \
	X(iter_disagree) \
	X(iter_synthetic) \
	X(e2e_perturb_net) \
	X(e2e_pytorch_two_hosts) \
	X(e2e_pytorch_differential) \
	X(emu_kernel_timing) \
	X(emu_stream_semantics) \
	X(emu_memcpy_timing) \
	X(emu_error_codes) \
	X(emu_launch_records) \
	X(emu_pending_error) \
	X(emu_cupti_correlation) \
	X(emu_signal_storm) \
	X(emu_nccl_two_hosts) \
	X(emu_nccl_one_host) \
	X(emu_nccl_one_process) \
	X(emu_nccl_peer_death) \
	X(rec_usage) \
	X(rec_hand_projection) \
	X(rec_budgets) \
	X(rec_pareto) \
	X(rec_measured_precedence) \
	X(rec_bad_catalogs) \
	X(rec_bad_profiles) \
	X(rec_older_reports) \
	X(rec_shipped_catalog) \
	X(rec_random_catalogs) \
	X(rec_tcpring) \
	X(rec_emulation) \
	X(rec_emulation_overlap) \
	X(rec_scaling_inferred) \
	X(rec_gpu_names) \
	X(rec_fit_selftest) \
	X(synth_flat_two_hosts) \
	X(synth_hierarchical) \
	X(synth_overlap) \
	X(synth_rank_fails) \
	X(synth_timeout) \
	X(synth_hang) \
	X(hang_synth_flat) \
	X(hang_synth_hierarchical) \
	X(hang_watchdog) \
	X(hang_none_when_killed) \
	X(hang_torch) \
	X(hang_blocked_call) \
	X(synth_bad_flags) \
	X(synth_plan_no_overwrite) \
	X(gpu_real_runtime_unchanged) \
	X(gpu_fake_tables) \
	X(gpu_coll_period) \
	X(gpu_synth_hierarchical) \
	X(gpu_synth_flat) \
	X(gpu_synth_device_times) \
	X(gpu_synth_iterations_from_collectives) \
	X(gpu_clock_alignment) \
	X(report_compare) \
	X(gpu_straggler) \
	X(gpu_slow_iterations) \
	X(gpu_synth_parts_vs_plan) \
	X(launcher_errors) \
	X(launcher_dir_safety) \
	X(launcher_parent_link) \
	X(launcher_runs) \
	X(launcher_same_run_id) \
	X(slurm_real) \
	X(launcher_dir_checked) \
	X(launcher_silent_command) \
	X(docs_man_render) \
	X(docs_install) \
	X(docs_cli_manners) \
	X(docs_json_stdout) \
	X(docs_progress_report) \
	X(docs_progress_sim) \
	X(docs_flags) \
	X(docs_rate_units) \
	X(docs_deps_targets) \
	X(docs_quiet_build) \
	X(docs_readme_marks) \
	X(docs_readme_demo) \
	X(docs_readme_torch) \
	X(docs_readme_torchdata) \
	X(docs_readme_mpi) \
	X(docs_readme_sim) \
	X(docs_readme_hang) \
	X(report_errors) \
	X(report_fail_if) \
	X(callsite_module_fifo) \
	X(callsite_top_stall) \
	X(callsite_off_no_stacks) \
	X(callsite_transparent) \
	X(callsite_tcpring) \
	X(callsite_papi) \
	X(sens_tcpring) \
	X(sens_synth) \
	X(sim_profiles) \
	X(sim_bad_profiles) \
	X(rec_slurm) \
	X(rec_slurm_errors) \
	X(mpi_loopback) \
	X(mpi_two_hosts) \
	X(mpi_collectives_loopback) \
	X(mpi_collectives_two_hosts) \
	X(mpi_iterations) \
	X(mpi_hang) \
	X(mpi_straggler) \
	X(mpi_transparent) \
	X(report_out_tcpring) \
	X(report_out_synth) \
	X(report_out_hostile_names) \
	X(report_out_options) \
	X(report_out_special_targets) \
	X(report_out_html_chromium) \
	X(sqlite_synth) \
	X(sqlite_cpu) \
	X(sqlite_bad_paths) \
	X(report_out_terminal) \
	X(report_out_user_paths) \
	X(tools_out_special_targets) \
	X(report_same_file_twice) \
	X(report_out_names) \
	X(report_out_many_ranks) \
	X(report_threads_identical) \
	X(kernels_synth) \
	X(kernels_demangle) \
	X(nvtx_iterations) \
	X(nvtx_names) \
	X(nvtx_transparent) \
	X(nvtx_storm) \
	X(nvtx_fork) \
	X(nvtx_launcher_env) \
	X(nvtx_setuid) \
	X(nvtx_torch) \
	X(sim_usage) \
	X(sim_hand_fifo_gandiva) \
	X(sim_hand_consolidation) \
	X(sim_hand_las) \
	X(sim_tiresias60) \
	X(sim_sensitive_mix) \
	X(sim_invariants) \
	X(sim_bad_records) \
	X(sim_philly) \
	X(sim_deterministic) \
	X(sim_huge_times) \
	X(sim_lease_bound) \
	X(sim_long_jobs) \
	X(sim_philly_corrupt) \
	X(sim_philly_models) \
	X(sim_dally_timers) \
	X(sim_dally_lag) \
	X(sim_iterations) \
	X(sim_output_numbers) \
	X(sim_input_messages) \
	X(ivset_against_bitmap) \
	X(ivset_sort_stable) \
	X(ivset_push_merging) \
	X(ivset_add) \
	X(ivset_kept_room) \
	X(slowiters_change_point) \
	X(pyhook_entry_points) \
	X(torch_ddp_models) \
	X(torch_dataloader_stall) \
	X(torch_two_hosts) \
	X(torch_collectives) \
	X(torch_transparency) \
	X(torch_hook_off) \
	X(torch_synthetic_data) \
	X(torch_optimizers) \
	X(torch_straggler) \
	X(torch_file_reads)

#define DDL_X_DECL(n) int test_##n(void);
DDL_TESTS(DDL_X_DECL)
#undef DDL_X_DECL

#define CHECK(cond, ...) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "    %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
			return DDL_FAIL; \
		} \
	} while (0)

struct ddl_run_result {
	int status;     /* waitpid status */
	char *out;      /* stdout */
	char *err;      /* stderr */
	size_t nout, nerr;
	size_t capout, caperr; /* their room (util.c) */
};

/* Paths inside the build tree, from where the runner lives. */
const char *tbuild(const char *rel);
/* A fresh empty directory under /tmp; removed by trm(). */
char *tmpdir(void);
/* A base port with n free ports after it, below the ephemeral range (util.c). */
int tfreeports(int n);
void trm(const char *path);
/*
 * Runs ARGV with extra "K=V" environment entries (NULL-terminated, may be
 * NULL), a time limit, and captures stdout and stderr. Returns 0, or -1 if
 * it could not be started or timed out (killed).
 */
int trun(char *const argv[], char *const env[], int timeout_s, struct ddl_run_result *r);
void trun_free(struct ddl_run_result *r);
/* R's exit status, or 1000 + the signal that ended it (no exit status is that). */
int tstatus(const struct ddl_run_result *r);
/* Appends K bytes of P to the malloc'd, NUL-terminated *BUF of *N bytes
 * (left as it was when out of memory). */
void tappend(char **buf, size_t *n, const char *p, size_t k);
/* ddlprof-report --json DIR; NULL on failure (with a message). */
json_t *treport(const char *dir, int *status);
/* Finds the process with this pid in a report, and its ranks[] entry (NULL: none). */
json_t *tproc(json_t *report, long pid);
json_t *trank(json_t *report, long pid);
/* The ranks[] entry of rank RANK (the first one), or NULL. */
json_t *trank_of(json_t *report, int rank);
/* The member of O at a dotted PATH ("job.breakdown_pct.compute"), or NULL. */
json_t *tjget(json_t *o, const char *path);
/* A full file system at MNT (made if missing): a 64 KiB tmpfs filled up,
 * to be umount()ed by the caller. 0, or -1 where none can be mounted (not
 * root, no tmpfs). */
int tfulldisk(const char *mnt);
/* 1 (with a line saying why) in the sanitizers' build: the tests of the
 * analysis's figures on long real workloads (PyTorch) run in the plain
 * build only, the library's own behaviour on them in both. */
int tskip_sanitized(void);
/* CLOCK_MONOTONIC in seconds, for a test to time what it runs. */
double tnow(void);
/* Runs a tests/progs program with and without ddlprof, compares stdout and
 * status, and compares the DDLT_EXPECT byte counts with the report. */
int tprog_exact(const char *prog, char *const args[], int expect_status);
/* The same with SETTING ("NAME=value", or NULL) in the profiled run's environment. */
int tprog_exact_env(const char *prog, char *const args[], int expect_status, const char *setting);

#endif
