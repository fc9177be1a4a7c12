//===- MpiAbi.h - the parts of Open MPI's C ABI the runtime uses ------------===//
//
// The runtime loads libmpi at run time and is built without mpi.h, so it
// spells out what mpi.h would give: Open MPI's handles (MPI_Comm,
// MPI_Datatype, MPI_Op, MPI_Errhandler) are pointers, and its predefined
// handles are the addresses of global objects (MPI_COMM_WORLD is
// &ompi_mpi_comm_world, MPI_FLOAT &ompi_mpi_float, ...), found with dlsym
// under the names below. Open MPI keeps this ABI within a major library
// version (libmpi.so.40 = Open MPI 3.x-5.x). MPICH's integer handles are a
// different ABI: loading MPICH fails on the first missing symbol.
// When mpi.h is installed, runtime/tests/comm/MpiAbiCheckTest.cpp checks every
// name and constant here against it at compile time.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_MPIABI_H
#define TRC_RUNTIME_MPIABI_H

#include <cstddef>

namespace trc::rt::mpiabi {

// The library dlopen'ed unless TRC_MPI_LIBRARY names another.
constexpr const char *kDefaultLibrary = "libmpi.so.40";

constexpr int kSuccess = 0;          // MPI_SUCCESS
constexpr int kUndefined = -32766;   // MPI_UNDEFINED
constexpr int kThreadSerialized = 2; // MPI_THREAD_SERIALIZED
constexpr int kMaxErrorString = 256; // MPI_MAX_ERROR_STRING
constexpr int kTagUbKeyval = 0;      // MPI_TAG_UB (attribute key)
constexpr int kMinTagUb = 32767;     // the least MPI_TAG_UB the standard allows
// MPI_IN_PLACE is ((void *)1); MPI_STATUS_IGNORE is a null MPI_Status *.
constexpr std::size_t kInPlace = 1;
// Room for an MPI_Status (24 bytes in Open MPI).
constexpr std::size_t kStatusBytes = 64;

// Symbols of predefined handles (MPI_COMM_WORLD, MPI_INT8_T, ...).
constexpr const char *kCommWorld = "ompi_mpi_comm_world";
constexpr const char *kErrorsReturn = "ompi_mpi_errors_return";
constexpr const char *kByte = "ompi_mpi_byte";
constexpr const char *kFloat = "ompi_mpi_float";
constexpr const char *kDouble = "ompi_mpi_double";
constexpr const char *kInt8 = "ompi_mpi_int8_t";
constexpr const char *kUint8 = "ompi_mpi_uint8_t";
constexpr const char *kInt16 = "ompi_mpi_int16_t";
constexpr const char *kUint16 = "ompi_mpi_uint16_t";
constexpr const char *kInt32 = "ompi_mpi_int32_t";
constexpr const char *kUint32 = "ompi_mpi_uint32_t";
constexpr const char *kInt64 = "ompi_mpi_int64_t";
constexpr const char *kUint64 = "ompi_mpi_uint64_t";
constexpr const char *kOpSum = "ompi_mpi_op_sum";
constexpr const char *kOpProd = "ompi_mpi_op_prod";
constexpr const char *kOpMin = "ompi_mpi_op_min";
constexpr const char *kOpMax = "ompi_mpi_op_max";

// Handles as the runtime holds them (MPI_Request, a pointer too, included).
using Handle = void *;

} // namespace trc::rt::mpiabi

#endif // TRC_RUNTIME_MPIABI_H
