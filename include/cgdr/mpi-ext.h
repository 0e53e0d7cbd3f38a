/* cgdr's mpi-ext.h: put this directory first on the include path (cgdr-mpicc does) so that
 * programs see MPIX_CUDA_AWARE_SUPPORT = 1 and cgdr's MPIX_Query_cuda_support(), which answers
 * at run time whether a GPU is usable. The MPI's own extensions are still included. */
#ifndef CGDR_MPI_EXT_H
#define CGDR_MPI_EXT_H

#include <mpi.h>

#if defined(__has_include_next)
#if __has_include_next(<mpi-ext.h>)
#include_next <mpi-ext.h>
#endif
#endif

#undef MPIX_CUDA_AWARE_SUPPORT
#define MPIX_CUDA_AWARE_SUPPORT 1

#ifdef __cplusplus
extern "C" {
#endif
/* 1 when cgdr can move GPU buffers in this process (a GPU is usable), else 0. */
int MPIX_Query_cuda_support(void);
/* Rebuilds cgdr's locality table (which ranks share a host, across containers); collective over
 * MPI_COMM_WORLD, to be called when no communication is in flight (e.g. after a migration). */
int MPIX_Cgdr_redetect(void);
#define CGDR_HAVE_MPIX_CGDR_REDETECT 1
#ifdef __cplusplus
}
#endif

#endif /* CGDR_MPI_EXT_H */
