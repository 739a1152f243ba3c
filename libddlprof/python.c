/*
 * The entry points of include/ddlprof/python.h, called by ddlprof's Python
 * hook through ctypes: the training loop's optimizer steps (the iterations'
 * ends), its phases (waiting for the next batch, DDP's forward, backward),
 * a data-loader worker's batches, torch.distributed calls with their
 * process groups, and facts about the process (its role). Each phase is
 * one event of the calling thread spanning begin to close; the start
 * ticks wait in the thread's own small stack (struct ddl_thread), so the
 * hot path is the marker API's: no lock, no allocation, no system call.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "ddl.h"
#include "ddlprof/python.h"

DDL_EXPORT int ddlprof_py_abi(void)
{
	return DDLPROF_PY_ABI;
}

DDL_EXPORT void ddlprof_py_begin(void)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	if (!t)
		return;
	if (t->py_depth < (int)(sizeof t->py_t0 / sizeof t->py_t0[0]))
		t->py_t0[t->py_depth] = ddl_clock_now();
	t->py_depth++; /* deeper than the stack: counted, so closes stay paired */
}

/* Closes the innermost phase: its start in *T0, or 0 when none is open. */
static struct ddl_thread *ddl_py_close(uint64_t *t0)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	if (!t || t->py_depth <= 0)
		return NULL;
	t->py_depth--;
	if (t->py_depth >= (int)(sizeof t->py_t0 / sizeof t->py_t0[0]))
		return NULL;
	*t0 = t->py_t0[t->py_depth];
	return t;
}

/* Closes the innermost phase and records nothing of it. */
static void ddl_py_close_unrecorded(void)
{
	uint64_t t0;
	(void)ddl_py_close(&t0);
}

DDL_EXPORT void ddlprof_py_phase(int phase, long long value)
{
	uint64_t t0;
	struct ddl_thread *t = ddl_py_close(&t0);
	if (t)
		ddl_ring_put(t, DDL_EV_PY_PHASE, 0, t0, ddl_clock_now(), value, phase, 0);
}

DDL_EXPORT void ddlprof_py_step(int optimizer, long long step)
{
	uint64_t t0;
	struct ddl_thread *t = ddl_py_close(&t0);
	if (t)
		ddl_ring_put(t, DDL_EV_PY_STEP, 0, t0, ddl_clock_now(), step, optimizer, 0);
}

DDL_EXPORT void ddlprof_py_collective(int op, unsigned long long bytes, int elem, unsigned comm,
                                      int peer, int async)
{
	uint64_t t0;
	struct ddl_thread *t = ddl_py_close(&t0);
	if (!t)
		return;
	struct ddl_args a;
	memset(&a, 0, sizeof a);
	a.kind = DDL_EV_ARGS;
	a.bytes = bytes;
	a.op = (uint8_t)op;
	a.dtype = elem > 0 && elem < 256 ? (uint8_t)elem : 0;
	a.comm = comm;
	a.peer = peer;
	ddl_ring_put_args(t, DDL_EV_PY_PHASE, 0, t0, ddl_clock_now(), async != 0,
	                  DDL_PHASE_COLLECTIVE, 0, &a);
}


DDL_EXPORT unsigned ddlprof_py_group(const char *key, const char *ranks, int rank, int size,
                                     const char *backend)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	if (!t || !key || !ranks)
		return 0;
	t->busy = 1; /* the string table's lock */
	uint64_t k = ddl_fnv(DDL_FNV0, key, strlen(key));
	uint32_t id = ddl_comm_id_new();
	char text[1024];
	int n = snprintf(text, sizeof text,
	                 "key=%016llx rank=%d nranks=%d dev=-1 host=%s how=torch parent=%016llx "
	                 "color=-1 backend=%.32s ranks=%s",
	                 (unsigned long long)k, rank, size, ddl_g.host, 0ull,
	                 backend && *backend ? backend : "-", ranks);
	if (n > 0)
		ddl_strings_add(DDL_STR_COMM, id, (uint32_t)-1, text,
		                n < (int)sizeof text ? (size_t)n : sizeof text - 1);
	t->gloo_key = k;
	t->gloo_key_n = 0;
	t->busy = 0;
	return id;
}

DDL_EXPORT void ddlprof_py_group_end(void)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	if (t)
		t->gloo_key = 0;
}

DDL_EXPORT void ddlprof_py_thread(const char *name)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	if (!t || !name)
		return;
	t->busy = 1; /* the string table's lock */
	ddl_strings_add(DDL_STR_THREAD, t->idx, (uint32_t)t->tid, name, strnlen(name, 64));
	t->busy = 0;
}

DDL_EXPORT void ddlprof_py_meta(const char *key, const char *value)
{
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	if (!t || !key || !value)
		return;
	t->busy = 1;
	ddl_meta(key, value);
	t->busy = 0;
}

/*
 * ---- wrappers without a Python frame ----
 *
 * The hook's patches are made here, as C callables, so that an exception
 * the original raises reaches the program with the traceback it would have
 * had: a wrapper written in Python would add its own frame to every
 * traceback that passes through it. The CPython API is found in the
 * process at run time (the interpreter exports it), never linked: a
 * program that is not Python never comes here. Only functions of the
 * stable ABI are used, reference counts through Py_IncRef and Py_DecRef.
 *
 * A wrapper's state is one tuple (orig, kind, arg, before, after):
 *   kind  DDL_PHASE_* of the phase it records, or DDL_PYW_STEP (an
 *         optimizer step, the optimizer being positional argument ARG),
 *         DDL_PYW_GROUP (a process group being made) or DDL_PYW_CALL;
 *   before, after  optional Python callables: before(*args, **kwargs) runs
 *         first and its result is the call's description (a collective's
 *         (op, bytes, elem, comm, peer, async); a batch's, nothing), and
 *         after(description, result) runs last, with the original's own
 *         exception, if any, kept aside meanwhile. What they raise is
 *         dropped: the program never sees it.
 * FORWARD, BACKWARD and STEP count only the outermost call on a thread.
 */
typedef struct _object PyObject;

static struct {
	PyObject *(*call)(PyObject *, PyObject *, PyObject *);
	PyObject *(*tuple_item)(PyObject *, ssize_t);
	ssize_t (*tuple_size)(PyObject *);
	long long (*as_ll)(PyObject *);
	PyObject *(*cfunction)(void *, PyObject *, PyObject *);
	PyObject *(*instancemethod)(PyObject *);
	PyObject *(*from_string)(const char *);
	void (*incref)(PyObject *);
	void (*decref)(PyObject *);
	PyObject *(*err_occurred)(void);
	void (*err_clear)(void);
	void (*err_fetch)(PyObject **, PyObject **, PyObject **);
	void (*err_restore)(PyObject *, PyObject *, PyObject *);
	PyObject *(*call_args)(PyObject *, ...);
	PyObject *(*dict_item)(PyObject *, const char *);
	PyObject *none;
} ddl_py;

#define DDL_PYW_STEP  DDL_PY_OPEN_STEP /* (the open phase's kind alike) */
#define DDL_PYW_GROUP 65
#define DDL_PYW_CALL  66

/* The API, found once; 0, or -1 when this process has no interpreter. */
static int ddl_py_api(void)
{
	static int state; /* 0 not looked, 1 found, -1 not */
	if (state)
		return state > 0 ? 0 : -1;
	static const struct {
		const char *name;
		size_t off;
	} names[] = {
		{"PyObject_Call", offsetof(__typeof__(ddl_py), call)},
		{"PyTuple_GetItem", offsetof(__typeof__(ddl_py), tuple_item)},
		{"PyTuple_Size", offsetof(__typeof__(ddl_py), tuple_size)},
		{"PyLong_AsLongLong", offsetof(__typeof__(ddl_py), as_ll)},
		{"PyCFunction_NewEx", offsetof(__typeof__(ddl_py), cfunction)},
		{"PyInstanceMethod_New", offsetof(__typeof__(ddl_py), instancemethod)},
		{"PyUnicode_FromString", offsetof(__typeof__(ddl_py), from_string)},
		{"Py_IncRef", offsetof(__typeof__(ddl_py), incref)},
		{"Py_DecRef", offsetof(__typeof__(ddl_py), decref)},
		{"PyErr_Occurred", offsetof(__typeof__(ddl_py), err_occurred)},
		{"PyErr_Clear", offsetof(__typeof__(ddl_py), err_clear)},
		{"PyErr_Fetch", offsetof(__typeof__(ddl_py), err_fetch)},
		{"PyErr_Restore", offsetof(__typeof__(ddl_py), err_restore)},
		{"PyObject_CallFunctionObjArgs", offsetof(__typeof__(ddl_py), call_args)},
		{"PyDict_GetItemString", offsetof(__typeof__(ddl_py), dict_item)},
		{"_Py_NoneStruct", offsetof(__typeof__(ddl_py), none)},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *f = dlsym(RTLD_DEFAULT, names[i].name);
		if (!f) {
			state = -1;
			return -1;
		}
		*(void **)((char *)&ddl_py + names[i].off) = f;
	}
	state = 1;
	return 0;
}

/* Optimizers by address: their number (0, 1, ... in order of first step) and steps. */
#define DDL_PY_OPTS 64
static struct {
	PyObject *obj[DDL_PY_OPTS];
	long long steps[DDL_PY_OPTS];
	int n;
} ddl_opts;

static int ddl_py_opt(PyObject *o, long long *step)
{
	int i = 0;
	while (i < ddl_opts.n && ddl_opts.obj[i] != o)
		i++;
	if (i == ddl_opts.n) {
		if (i == DDL_PY_OPTS)
			i = DDL_PY_OPTS - 1; /* more than that: the last counts for the rest */
		else
			ddl_opts.obj[ddl_opts.n++] = o;
	}
	*step = ++ddl_opts.steps[i];
	return i;
}

/* A new optimizer at OBJ: one that lived there before is gone, and the new
 * one gets a number of its own at its first step. Called with the GIL held. */
DDL_EXPORT void ddlprof_py_forget(void *obj)
{
	for (int i = 0; i < ddl_opts.n; i++)
		if (ddl_opts.obj[i] == obj && i < DDL_PY_OPTS - 1)
			ddl_opts.obj[i] = NULL;
}

static _Atomic long long ddl_py_waits, ddl_py_batches;

/* Calls F(A, B) (a hook's own callable), dropping what it raises; a new reference or NULL. */
static PyObject *ddl_py_side(PyObject *f, PyObject *a, PyObject *b)
{
	if (f == ddl_py.none)
		return NULL;
	PyObject *r = b ? ddl_py.call_args(f, a, b, NULL) : ddl_py.call(f, a, NULL);
	if (!r)
		ddl_py.err_clear();
	return r;
}

/* The wrappers' one body (the table above). Called with the GIL held. */
static PyObject *ddl_py_wrapper(PyObject *self, PyObject *args, PyObject *kwargs)
{
	PyObject *orig = ddl_py.tuple_item(self, 0);
	int kind = (int)ddl_py.as_ll(ddl_py.tuple_item(self, 1));
	int arg = (int)ddl_py.as_ll(ddl_py.tuple_item(self, 2));
	PyObject *before = ddl_py.tuple_item(self, 3), *after = ddl_py.tuple_item(self, 4);
	struct ddl_thread *t = ddl_thread_enter(DDL_FAM_PY);
	unsigned bit = kind == DDL_PHASE_FORWARD ? 1u : kind == DDL_PHASE_BACKWARD ? 2u
	               : kind == DDL_PYW_STEP ? 4u : 0u;
	if (!t || (t->py_in & bit))
		return ddl_py.call(orig, args, kwargs);
	PyObject *desc = NULL;
	if (kind == DDL_PHASE_BATCH) {
		static pid_t said;
		if (said != ddl_g.pid) { /* a process's first batch: who it is */
			said = ddl_g.pid;
			PyObject *none = ddl_py_side(before, args, NULL);
			if (none)
				ddl_py.decref(none);
		}
	} else if (before != ddl_py.none) {
		desc = ddl_py.call(before, args, kwargs);
		if (!desc)
			ddl_py.err_clear();
	}
	int timed = kind != DDL_PYW_GROUP && kind != DDL_PYW_CALL;
	t->py_in |= bit;
	/* the phase open while the original runs (the innermost), for a hang */
	uint32_t was = atomic_load_explicit(&t->py_open, memory_order_relaxed);
	uint64_t was_t0 = atomic_load_explicit(&t->py_open_t0, memory_order_relaxed);
	if (timed) {
		ddlprof_py_begin();
		atomic_store_explicit(&t->py_open, 0, memory_order_relaxed);
		atomic_store_explicit(&t->py_open_t0, ddl_clock_now(), memory_order_release);
		atomic_store_explicit(&t->py_open, (uint32_t)kind, memory_order_release);
	}
	PyObject *r = ddl_py.call(orig, args, kwargs);
	if (timed) {
		atomic_store_explicit(&t->py_open, 0, memory_order_relaxed);
		atomic_store_explicit(&t->py_open_t0, was_t0, memory_order_release);
		atomic_store_explicit(&t->py_open, was, memory_order_release);
	}
	t->py_in &= ~bit;
	switch (kind) {
	case DDL_PHASE_DATA_WAIT:
		ddlprof_py_phase(kind, atomic_fetch_add(&ddl_py_waits, 1) + 1);
		break;
	case DDL_PHASE_BATCH:
		ddlprof_py_phase(kind, atomic_fetch_add(&ddl_py_batches, 1) + 1);
		break;
	case DDL_PYW_STEP: {
		/* the optimizer: positional argument ARG, or GradScaler.step(optimizer=...);
		 * neither lookup sets an error (the original's may be pending) */
		PyObject *opt = ddl_py.tuple_size(args) > arg ? ddl_py.tuple_item(args, arg) : NULL;
		if (!opt && kwargs)
			opt = ddl_py.dict_item(kwargs, "optimizer");
		long long step = 0;
		if (opt)
			ddlprof_py_step(ddl_py_opt(opt, &step), step);
		else
			ddl_py_close_unrecorded();
		break;
	}
	case DDL_PHASE_COLLECTIVE: {
		long long v[6] = {0, 0, 0, 0, -1, 0};
		PyObject *exc[3];
		ddl_py.err_fetch(&exc[0], &exc[1], &exc[2]); /* the original's, if any */
		for (int k = 0; desc && k < 6; k++) {
			PyObject *x = ddl_py.tuple_item(desc, k);
			v[k] = x ? ddl_py.as_ll(x) : 0;
		}
		if (ddl_py.err_occurred())
			ddl_py.err_clear();
		ddl_py.err_restore(exc[0], exc[1], exc[2]);
		ddlprof_py_collective((int)v[0], (unsigned long long)v[1], (int)v[2], (unsigned)v[3],
		                      (int)v[4], (int)v[5]);
		break;
	}
	case DDL_PYW_GROUP:
		ddlprof_py_group_end();
		break;
	case DDL_PYW_CALL:
		break;
	default:
		ddlprof_py_phase(kind, 0);
		break;
	}
	if (after != ddl_py.none) {
		PyObject *exc[3];
		ddl_py.err_fetch(&exc[0], &exc[1], &exc[2]);
		PyObject *x = ddl_py_side(after, desc ? desc : ddl_py.none, r ? r : ddl_py.none);
		if (x)
			ddl_py.decref(x);
		ddl_py.err_restore(exc[0], exc[1], exc[2]);
	}
	if (desc)
		ddl_py.decref(desc);
	return r;
}

/* PyMethodDef, as every CPython 3 lays it out. */
struct ddl_pymethoddef {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
};

DDL_EXPORT void *ddlprof_py_wrap(void *state_, const char *name, int method)
{
	PyObject *state = state_;
	if (!state || ddl_py_api() < 0)
		return NULL;
	struct ddl_pymethoddef *def = calloc(1, sizeof *def); /* the wrapper's for good */
	char *n = strdup(name && *name ? name : "ddlprof_wrapper");
	if (!def || !n) {
		free(def);
		free(n);
		return NULL;
	}
	*def = (struct ddl_pymethoddef){n, (void *)ddl_py_wrapper, 0x1 | 0x2 /* VARARGS|KEYWORDS */,
	                                NULL};
	PyObject *f = ddl_py.cfunction(def, state, NULL);
	if (!f || !method)
		return f;
	PyObject *m = ddl_py.instancemethod(f); /* binds like a function: self comes first */
	ddl_py.decref(f);
	return m;
}
