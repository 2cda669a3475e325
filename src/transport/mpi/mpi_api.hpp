#pragma once
// <mpi.h> for C++ code: the C API only. Open MPI's header otherwise drags in its deprecated C++
// bindings, whose symbols live in a library (libmpi_cxx) this project does not link.

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
