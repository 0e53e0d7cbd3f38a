// MPI's wait/test family over arrays mixing the real MPI's requests and cgdr's own.
#pragma once
#include <mpi.h>

namespace cgdr::engine {

int wait(MPI_Request* r, MPI_Status* st);
int test(MPI_Request* r, int* flag, MPI_Status* st);
int waitall(int n, MPI_Request rs[], MPI_Status sts[]);
int testall(int n, MPI_Request rs[], int* flag, MPI_Status sts[]);
int waitany(int n, MPI_Request rs[], int* index, MPI_Status* st);
int testany(int n, MPI_Request rs[], int* index, int* flag, MPI_Status* st);
int waitsome(int n, MPI_Request rs[], int* outcount, int indices[], MPI_Status sts[]);
int testsome(int n, MPI_Request rs[], int* outcount, int indices[], MPI_Status sts[]);
int requestGetStatus(MPI_Request r, int* flag, MPI_Status* st);
int requestFree(MPI_Request* r);
int cancel(MPI_Request* r);

}  // namespace cgdr::engine
