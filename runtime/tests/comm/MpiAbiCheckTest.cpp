//===- MpiAbiCheckTest.cpp - MpiAbi.h against the installed mpi.h -----------===//
//
// Built only where CMake finds Open MPI's mpi.h (the runtime itself never
// includes it). Every constant and predefined-handle symbol MpiAbi.h spells
// out is compared with mpi.h at compile time: Open MPI defines its handles
// as OMPI_PREDEFINED_GLOBAL(type, symbol), so redefining that macro to
// stringize `symbol` turns MPI_COMM_WORLD into "ompi_mpi_comm_world".
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/mpi/MpiAbi.h"

// Only the C API: the C++ bindings' inline functions would need libmpi.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <gtest/gtest.h>

#ifdef OPEN_MPI

namespace {
constexpr bool same(const char *a, const char *b) {
  return *a == *b && (*a == 0 || same(a + 1, b + 1));
}
} // namespace

namespace mabi = trc::rt::mpiabi;

static_assert(mabi::kSuccess == MPI_SUCCESS);
static_assert(mabi::kUndefined == MPI_UNDEFINED);
static_assert(mabi::kThreadSerialized == MPI_THREAD_SERIALIZED);
static_assert(mabi::kMaxErrorString >= MPI_MAX_ERROR_STRING);
static_assert(sizeof(MPI_Status) <= mabi::kStatusBytes);
static_assert(alignof(MPI_Status) <= 16);
static_assert(sizeof(MPI_Comm) == sizeof(mabi::Handle));
static_assert(sizeof(MPI_Datatype) == sizeof(mabi::Handle));
static_assert(sizeof(MPI_Op) == sizeof(mabi::Handle));
static_assert(sizeof(MPI_Errhandler) == sizeof(mabi::Handle));
static_assert(sizeof(MPI_Request) == sizeof(mabi::Handle));
static_assert(mabi::kTagUbKeyval == MPI_TAG_UB);

#undef OMPI_PREDEFINED_GLOBAL
#define OMPI_PREDEFINED_GLOBAL(type, global) #global
static_assert(same(mabi::kCommWorld, MPI_COMM_WORLD));
static_assert(same(mabi::kErrorsReturn, MPI_ERRORS_RETURN));
static_assert(same(mabi::kByte, MPI_BYTE));
static_assert(same(mabi::kFloat, MPI_FLOAT));
static_assert(same(mabi::kDouble, MPI_DOUBLE));
static_assert(same(mabi::kInt8, MPI_INT8_T));
static_assert(same(mabi::kUint8, MPI_UINT8_T));
static_assert(same(mabi::kInt16, MPI_INT16_T));
static_assert(same(mabi::kUint16, MPI_UINT16_T));
static_assert(same(mabi::kInt32, MPI_INT32_T));
static_assert(same(mabi::kUint32, MPI_UINT32_T));
static_assert(same(mabi::kInt64, MPI_INT64_T));
static_assert(same(mabi::kUint64, MPI_UINT64_T));
static_assert(same(mabi::kOpSum, MPI_SUM));
static_assert(same(mabi::kOpProd, MPI_PROD));
static_assert(same(mabi::kOpMin, MPI_MIN));
static_assert(same(mabi::kOpMax, MPI_MAX));

TEST(MpiAbi, MatchesOpenMpiHeader) {
  EXPECT_EQ(reinterpret_cast<size_t>(MPI_IN_PLACE), mabi::kInPlace);
  EXPECT_EQ(MPI_STATUS_IGNORE, nullptr);
  EXPECT_EQ(OMPI_MAJOR_VERSION >= 3, true); // libmpi.so.40 is Open MPI 3+
}

#else

TEST(MpiAbi, MatchesOpenMpiHeader) {
  GTEST_SKIP() << "the mpi.h found is not Open MPI's";
}

#endif
