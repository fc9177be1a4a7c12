//===- TrcBase.td - trc dialect, types and enums -----------*- tablegen -*-===//
//
// The trc graph dialect: tensors with static shapes, parameters as symbols.
// Its core is small and orthogonal (in the spirit of StableHLO); a handful of
// composite ops (softmax, layer_norm, gelu, cross_entropy...) sit on top.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_BASE_TD
#define TRC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "TrcInterfaces.td"

def Trc_Dialect : Dialect {
  let name = "trc";
  let cppNamespace = "::trc";
  let summary = "The trc training-compiler graph dialect";
  let description = [{
    Tensor-level ops with static shapes. Model parameters are module-level
    `trc.parameter` symbols read with `trc.get_parameter`, so that a weight used
    in several places (tied embeddings) is one parameter with several uses.

    ```mlir
    trc.parameter @wte : tensor<256x64xf32> = dense_resource<wte> : tensor<256x64xf32>
    func.func @main(%ids: tensor<8x32xi64>) -> tensor<8x32x64xf32> {
      %w = trc.get_parameter @wte : tensor<256x64xf32>
      %e = trc.gather %w, %ids {axis = 0 : i64}
          : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
      return %e : tensor<8x32x64xf32>
    }
    ```
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  // The discardable trc.* attributes (include/trc/Abi/AttrNames.h) on ops,
  // function arguments and results: each has its kind and place, and no
  // other trc.* name is accepted (TrcAttrVerify.cpp).
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

// Element types trc computes in, and statically shaped tensors of them.
def Trc_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def Trc_Int : AnyTypeOf<[I1, I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Trc_Element : AnyTypeOf<[Trc_Float, Trc_Int]>;
def Trc_Tensor : StaticShapeTensorOf<[Trc_Element]>;
def Trc_FloatTensor : StaticShapeTensorOf<[Trc_Float]>;
def Trc_IntTensor : StaticShapeTensorOf<[Trc_Int]>;
def Trc_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Trc_PredTensor : StaticShapeTensorOf<[I1]>;

def Trc_CompareDirection : I32EnumAttr<"CompareDirection",
    "comparison of two tensors, element by element", [
  I32EnumAttrCase<"EQ", 0, "eq">, I32EnumAttrCase<"NE", 1, "ne">,
  I32EnumAttrCase<"LT", 2, "lt">, I32EnumAttrCase<"LE", 3, "le">,
  I32EnumAttrCase<"GT", 4, "gt">, I32EnumAttrCase<"GE", 5, "ge">]> {
  let cppNamespace = "::trc";
  let genSpecializedAttr = 0;
}
def Trc_CompareDirectionAttr
    : EnumAttr<Trc_Dialect, Trc_CompareDirection, "compare_direction">;

def Trc_ReduceKind : I32EnumAttr<"ReduceKind", "combining function of trc.reduce", [
  I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Max", 1, "max">,
  I32EnumAttrCase<"Min", 2, "min">, I32EnumAttrCase<"Prod", 3, "prod">]> {
  let cppNamespace = "::trc";
  let genSpecializedAttr = 0;
}
def Trc_ReduceKindAttr : EnumAttr<Trc_Dialect, Trc_ReduceKind, "reduce_kind">;

def Trc_LossReduction : I32EnumAttr<"LossReduction", "how a loss reduces over samples", [
  I32EnumAttrCase<"Mean", 0, "mean">, I32EnumAttrCase<"Sum", 1, "sum">,
  I32EnumAttrCase<"None", 2, "none">]> {
  let cppNamespace = "::trc";
  let genSpecializedAttr = 0;
}
def Trc_LossReductionAttr
    : EnumAttr<Trc_Dialect, Trc_LossReduction, "loss_reduction">;

class Trc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Trc_Dialect, mnemonic, traits>;

#endif // TRC_BASE_TD
