//===- TestTensors.h - ONNX test data as runtime tensors, and comparison ---===//
//
// Node tests store inputs and expected outputs as serialized TensorProtos
// (test_data_set_K/input_N.pb, output_N.pb). toHostTensor turns one into the
// runtime's HostTensor (raw_data or the typed fields; every element type the
// artifact format has). compareTensors checks an output against the expected
// value: same dtype and shape, then elementwise |got - want| <= atol +
// rtol * |want| for floats (NaN matches NaN, an infinity only itself) and
// exact equality for integers and booleans; bfloat16 values are compared
// with rtol at least 2^-7, one bfloat16 unit in the last place (a tighter
// tolerance would demand bit-exactness, e.g. rounding exactly as the test's
// generator did: ONNX 1.12 truncates float to bfloat16, trc rounds to
// nearest). Both return "" on success and a one-line message otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONFORMANCE_TESTTENSORS_H
#define TRC_CONFORMANCE_TESTTENSORS_H

#include "runtime/support/Tensor.h"

#include "onnx/onnx_pb.h"

#include <string>

namespace trc::conformance {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

/// Parses `path` as a TensorProto; "" or a message naming the file.
std::string parseTensorFile(const std::string &path, onnx::TensorProto &out);

/// The HostTensor holding `tensor`'s value; "" or a message.
std::string toHostTensor(const onnx::TensorProto &tensor, rt::HostTensor &out);

/// "" when `got` matches `want`; otherwise what differs, e.g.
/// "got f32 [2, 3], want f32 [3, 2]" or
/// "element [1, 2]: got 0.5, want 0.25 (3 of 6 elements differ)".
std::string compareTensors(const rt::HostTensor &got, const rt::HostTensor &want,
                           const Tolerance &tolerance);

} // namespace trc::conformance

#endif
