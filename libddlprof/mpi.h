/*
 * The MPI side of libddlprof (mpi.c): the real functions of the MPI calls
 * it wraps and of the ones it makes itself, in the manner of DDL_HOOKS
 * (ddl.h). Nothing here includes mpi.h: Open MPI's handles are pointers,
 * MPICH's are ints, and one library serves both. A handle is declared as a
 * pointer-sized value (ddl_mpi_h) and forwarded unchanged: the x86-64 SysV
 * and aarch64 calling conventions pass an int and a pointer in the same
 * 64-bit register or 8-byte stack slot, and the callee reads the part its
 * type has. Arrays and outputs of handles (MPI_Request *, MPI_Comm *) are
 * read with the implementation's handle size, once it is recognised.
 */
#ifndef DDL_MPI_H
#define DDL_MPI_H

#include "ddl.h"

/* An MPI handle (communicator, datatype, op, group) as the caller passed it. */
typedef uintptr_t ddl_mpi_h;

/*
 * X(name, ret, params): the wrapped calls, then (PMPI_*) the calls the
 * library makes itself, through the profiling names so that another tool
 * layered on MPI does not see them. Each entry is a slot of ddl_mpi_real,
 * found on first use: a program that never calls MPI never looks.
 */
#define DDL_MPI_HOOKS(X) \
	X(MPI_Init, int, (int *, char ***)) \
	X(MPI_Init_thread, int, (int *, char ***, int, int *)) \
	X(MPI_Finalize, int, (void)) \
	X(MPI_Allreduce, int, (const void *, void *, int, ddl_mpi_h, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Iallreduce, int, (const void *, void *, int, ddl_mpi_h, ddl_mpi_h, ddl_mpi_h, void *)) \
	X(MPI_Reduce, int, (const void *, void *, int, ddl_mpi_h, ddl_mpi_h, int, ddl_mpi_h)) \
	X(MPI_Bcast, int, (void *, int, ddl_mpi_h, int, ddl_mpi_h)) \
	X(MPI_Allgather, int, (const void *, int, ddl_mpi_h, void *, int, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Allgatherv, int, \
	  (const void *, int, ddl_mpi_h, void *, const int *, const int *, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Reduce_scatter, int, (const void *, void *, const int *, ddl_mpi_h, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Reduce_scatter_block, int, (const void *, void *, int, ddl_mpi_h, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Alltoall, int, (const void *, int, ddl_mpi_h, void *, int, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Alltoallv, int, (const void *, const int *, const int *, ddl_mpi_h, void *, const int *, \
	                       const int *, ddl_mpi_h, ddl_mpi_h)) \
	X(MPI_Barrier, int, (ddl_mpi_h)) \
	X(MPI_Send, int, (const void *, int, ddl_mpi_h, int, int, ddl_mpi_h)) \
	X(MPI_Recv, int, (void *, int, ddl_mpi_h, int, int, ddl_mpi_h, void *)) \
	X(MPI_Isend, int, (const void *, int, ddl_mpi_h, int, int, ddl_mpi_h, void *)) \
	X(MPI_Irecv, int, (void *, int, ddl_mpi_h, int, int, ddl_mpi_h, void *)) \
	X(MPI_Wait, int, (void *, void *)) \
	X(MPI_Waitall, int, (int, void *, void *)) \
	X(MPI_Waitany, int, (int, void *, int *, void *)) \
	X(MPI_Waitsome, int, (int, void *, int *, int *, void *)) \
	X(MPI_Test, int, (void *, int *, void *)) \
	X(MPI_Testall, int, (int, void *, int *, void *)) \
	X(MPI_Comm_split, int, (ddl_mpi_h, int, int, void *)) \
	X(MPI_Comm_split_type, int, (ddl_mpi_h, int, int, ddl_mpi_h, void *)) \
	X(MPI_Comm_dup, int, (ddl_mpi_h, void *)) \
	X(MPI_Comm_create, int, (ddl_mpi_h, ddl_mpi_h, void *)) \
	X(MPI_Comm_free, int, (void *)) \
	X(PMPI_Initialized, int, (int *)) \
	X(PMPI_Finalized, int, (int *)) \
	X(PMPI_Get_library_version, int, (char *, int *)) \
	X(PMPI_Type_size, int, (ddl_mpi_h, int *)) \
	X(PMPI_Comm_size, int, (ddl_mpi_h, int *)) \
	X(PMPI_Comm_rank, int, (ddl_mpi_h, int *)) \
	X(PMPI_Comm_group, int, (ddl_mpi_h, void *)) \
	X(PMPI_Group_translate_ranks, int, (ddl_mpi_h, int, const int *, ddl_mpi_h, int *)) \
	X(PMPI_Group_free, int, (void *)) \
	X(PMPI_Get_count, int, (const void *, ddl_mpi_h, int *))

struct ddl_mpi_real {
#define DDL_X_FIELD(n, r, p) r(*n) p;
	DDL_MPI_HOOKS(DDL_X_FIELD)
#undef DDL_X_FIELD
};
extern struct ddl_mpi_real ddl_mpi_real DDL_HIDDEN;
/* The family's entries, for ddl_real_set and ddl_real_entry (real.c). */
extern const struct ddl_hook_entry ddl_mpi_hooks[] DDL_HIDDEN;
extern const size_t ddl_mpi_nhooks DDL_HIDDEN;
/* Finds NAME past libddlprof and stores it in SLOT, unless a thread got
 * there first; what the slot holds, NULL when no loaded object has it. */
void *ddl_mpi_next_slot(void **slot, const char *name) DDL_HIDDEN;

#endif
