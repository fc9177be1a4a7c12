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

#endif // TRC_PASSES_TD
