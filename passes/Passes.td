//===- Passes.td - every trc pass --------------------------*- tablegen -*-===//
//
// One def per pass; flag `trc-<area>-<verb>` (or `test-trc-print-*` for the
// printers of analyses), implemented in passes/<Area>/<Name>.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TD
#define TRC_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintOpStats : Pass<"test-trc-print-op-stats", "mlir::ModuleOp"> {
  let summary = "prints op counts and parameter totals of a trc module";
  let description = [{
    A printable summary of an imported model, for lit tests and for users:
    how many of each op, how many parameters (trainable and frozen) and their
    bytes. Printed to stdout, IR unchanged.

    ```
    trc-opt gpt2.onnx --dim batch=8 --test-trc-print-op-stats
    ops: trc.add=12 trc.dot_general=8 ...
    parameters: 28 trainable (102400 elements, 409600 bytes), 0 frozen
    ```
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def DecomposeComposites : Pass<"trc-decompose-composites"> {
  let summary = "rewrites composite trc ops into core trc ops";
  let description = [{
    softmax, log_softmax, layer_norm, gelu and cross_entropy become their
    definitions in core ops (reduce, broadcast_in_dim, exp, log, rsqrt, erf,
    tanh, compare, select...), numerically stable (max-subtracted softmax).
    Backends without a fused kernel for a composite lower this form.

    ```mlir
    %y = trc.softmax %x axis = 1 : tensor<4x8xf32>
    // becomes
    %m = trc.reduce max %x dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %mb = trc.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %d = trc.sub %x, %mb : tensor<4x8xf32>
    %e = trc.exp %d : tensor<4x8xf32>
    %s = trc.reduce sum %e dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %sb = trc.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %y = trc.div %e, %sb : tensor<4x8xf32>
    ```
    Dropout is not decomposed here: it needs the step's random state.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def LowerToLinalg : Pass<"trc-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "lowers core trc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Elementwise ops, compare, select, convert and iota become `linalg.generic`
    with scalar arith/math bodies; reduce becomes `linalg.reduce`; transpose
    `linalg.transpose`; broadcast_in_dim and reverse `linalg.generic` with
    affine input maps; reshape `tensor.reshape`; slice `tensor.extract_slice`;
    concatenate and pad `tensor.insert_slice` into a filled tensor; gather a
    `linalg.generic` that reads with `tensor.extract`; dot_general a
    `linalg.batch_matmul` on operands transposed and reshaped to [B, M, K] and
    [B, K, N] (the CPU pipeline later hands it to BLAS).

    Preconditions: composites decomposed (trc-decompose-composites), signless
    or float element types. `trc.get_parameter` is left alone.
  }];
  let dependentDialects = ["trc::TrcDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

#endif // TRC_PASSES_TD
