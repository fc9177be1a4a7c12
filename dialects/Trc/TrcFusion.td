//===- TrcFusion.td - fused regions of the trc dialect -----*- tablegen -*-===//
//
// trc.fusion holds a group of trc ops that runs as one kernel (one pass over
// device memory); trc.yield ends its body. trc-fuse forms them, trc-unfuse
// inlines them back, trc-print-fusion-summary measures them.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_FUSION_TD
#define TRC_FUSION_TD

include "TrcBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Trc_FusionKind : I32EnumAttr<"FusionKind", "the kind of kernel a trc.fusion is", [
  I32EnumAttrCase<"Elementwise", 0, "elementwise">,
  I32EnumAttrCase<"Reduction", 1, "reduction">,
  I32EnumAttrCase<"MatmulEpilogue", 2, "matmul_epilogue">]> {
  let cppNamespace = "::trc";
  let genSpecializedAttr = 0;
}
def Trc_FusionKindAttr : EnumAttr<Trc_Dialect, Trc_FusionKind, "fusion_kind">;

def Trc_FusionOp : Trc_Op<"fusion",
    [IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects, Trc_NoVjp,
     Trc_NoSharding]> {
  let summary = "a group of trc ops that runs as one kernel";
  let description = [{
    The body reads the block arguments (bound to the operands, the values the
    group reads from device memory) and yields the values used outside the
    group (the values it writes). Intermediates stay in registers or shared
    memory. The body holds core and composite trc ops (no nested fusion); it
    is isolated from above, so splat constants and broadcasts of small values
    are cloned into it.

    `kind`:
    * `elementwise`: ops over one iteration space (elementwise ops, compare,
      select, convert, gelu, broadcast_in_dim, iota);
    * `reduction`: one or more reductions over the same dimensions of the same
      shape (trc.reduce, softmax, log_softmax, layer_norm, cross_entropy) with
      their elementwise prologue and epilogue, possibly several outputs
      (siblings reading one input);
    * `matmul_epilogue`: one trc.dot_general and the epilogue cuBLASLt applies
      to it. Attributes: `epilogue` (`"bias"`, `"gelu"`, `"bias_gelu"` or
      `"none"`), `alpha` (a constant the product is scaled by), `accumulate`
      (a residual is added: beta = 1, C = the residual), `gelu_aux` (the
      pre-activation is also a result, for the backward pass).

    ```mlir
    %y = trc.fusion elementwise (%a = %x : tensor<4xf32>, %b = %z : tensor<4xf32>)
        -> (tensor<4xf32>) {
      %0 = trc.add %a, %b : tensor<4xf32>
      %1 = trc.exp %0 : tensor<4xf32>
      trc.yield %1 : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Trc_Tensor>:$inputs, Trc_FusionKindAttr:$kind,
                       OptionalAttr<StrAttr>:$epilogue, OptionalAttr<F64Attr>:$alpha,
                       UnitAttr:$accumulate, UnitAttr:$gelu_aux);
  let results = (outs Variadic<Trc_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The terminator of the body.
    YieldOp getYield();
  }];
}

def Trc_YieldOp : Trc_Op<"yield",
    [Pure, Terminator, HasParent<"::trc::FusionOp">, Trc_NoVjp, Trc_NoSharding]> {
  let summary = "the results of a trc.fusion";
  let arguments = (ins Variadic<Trc_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // TRC_FUSION_TD
