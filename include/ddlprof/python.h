/*
 * The entry points of libddlprof.so that ddlprof's Python hook calls
 * (through ctypes; python/ddlprof_hook), and any other framework hook may:
 * steps, phases, process roles and process groups, recorded as events of
 * the calling thread (ddlprof-trace(5): classes STEP and PHASE).
 *
 * A phase is opened with ddlprof_py_begin() and closed by one of the
 * calls that record it (ddlprof_py_phase, ddlprof_py_step,
 * ddlprof_py_collective): one event spanning both. Phases nest per thread,
 * 16 deep; closing with none open records nothing. Every call is a no-op
 * when profiling is off. ddlprof_py_abi() returns DDLPROF_PY_ABI: a hook
 * that finds another number leaves the library alone.
 */
#ifndef DDLPROF_PYTHON_H
#define DDLPROF_PYTHON_H

#ifdef __cplusplus
extern "C" {
#endif

#define DDLPROF_PY_ABI 1

int ddlprof_py_abi(void);
/* Opens a phase on the calling thread: takes its start time. */
void ddlprof_py_begin(void);
/* Closes the innermost phase as PHASE (enum ddl_phase) with VALUE. */
void ddlprof_py_phase(int phase, long long value);
/* Closes it as the optimizer step number STEP of optimizer OPTIMIZER (0, 1, ...). */
void ddlprof_py_step(int optimizer, long long step);
/* Closes it as a torch.distributed call: OP (enum ddl_pyop), BYTES this
 * rank's tensor bytes, ELEM bytes per element, COMM a process group
 * (ddlprof_py_group), PEER the root or peer rank (-1), ASYNC 1 when the
 * call returned a work handle without waiting. */
void ddlprof_py_collective(int op, unsigned long long bytes, int elem, unsigned comm, int peer,
                           int async);
/*
 * A process group: KEY names it the same way on every member (the hook
 * uses its ranks and how many groups of those ranks came before), RANKS
 * lists its global ranks ("0,1,2,3"), RANK and SIZE are this process's
 * place in it. Returns its communicator id (0 when it could not be
 * recorded). Until ddlprof_py_group_end, the gloo contexts this thread
 * creates are keyed from KEY, so every member names them alike.
 */
unsigned ddlprof_py_group(const char *key, const char *ranks, int rank, int size,
                          const char *backend);
void ddlprof_py_group_end(void);
/* The optimizer object at OBJ is new (an address used before is used again):
 * its steps are counted as another optimizer's. */
void ddlprof_py_forget(void *obj);
/* Names the calling thread in the trace (what the thread is to the
 * program: "pin_memory"); the program's own name for it is not changed. */
void ddlprof_py_thread(const char *name);
/* A key=value fact about the process (the hook's "role", say). */
void ddlprof_py_meta(const char *key, const char *value);
/*
 * A wrapper of a Python callable that records it without a Python frame
 * of its own (libddlprof/python.c says how): STATE is the tuple (orig,
 * kind, arg, before, after), NAME its __name__, METHOD non-zero for one
 * that binds as a method. A new reference (ctypes' py_object), or NULL
 * where this process has no Python interpreter. The hook's only use of
 * the CPython API; the pointers are PyObject *.
 */
void *ddlprof_py_wrap(void *state, const char *name, int method);

#ifdef __cplusplus
}
#endif

#endif
