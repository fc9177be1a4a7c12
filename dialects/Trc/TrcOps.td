//===- TrcOps.td - trc dialect operations ------------------*- tablegen -*-===//
//
// Core ops (elementwise, dot_general, reduce, data movement, constants),
// parameters, and composite ops. Every op requires static shapes; verifiers
// check shapes and element types, so importer bugs surface as diagnostics.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_OPS_TD
#define TRC_OPS_TD

include "TrcBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Constants and parameters
//===----------------------------------------------------------------------===//

def Trc_ConstantOp : Trc_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>, Trc_NoVjp]> {
  let summary = "a constant tensor";
  let description = [{
    ```mlir
    %c = trc.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Trc_ParameterOp : Trc_Op<"parameter", [Symbol, Trc_NoVjp, Trc_NoSharding]> {
  let summary = "a model parameter (an ONNX initializer)";
  let description = [{
    A named tensor of the model's state, declared once at module level and read
    with `trc.get_parameter`. Parameters are trainable unless marked `frozen`.
    The initial value is optional so that an artifact may carry an initializer
    description instead of the data.

    ```mlir
    trc.parameter @h.0.ln.weight : tensor<64xf32> = dense<1.0> : tensor<64xf32>
    trc.parameter @pos_table frozen : tensor<32x16xf32> = dense_resource<t> : tensor<32x16xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Trc_Tensor>:$type,
                       UnitAttr:$frozen, OptionalAttr<ElementsAttr>:$initial_value);
  let assemblyFormat = [{
    $sym_name (`frozen` $frozen^)? attr-dict `:` $type (`=` $initial_value^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::RankedTensorType getTensorType() {
      return mlir::cast<mlir::RankedTensorType>(getType());
    }
    bool isTrainable() { return !getFrozen(); }
  }];
}

def Trc_GetParameterOp : Trc_Op<"get_parameter",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>, Trc_NoVjp, Trc_NoSharding]> {
  let summary = "reads the current value of a parameter";
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Trc_IotaOp : Trc_Op<"iota", [Pure, Trc_NoVjp]> {
  let summary = "0, 1, 2, ... along one dimension, broadcast along the others";
  let arguments = (ins I64Attr:$dimension);
  let results = (outs StaticShapeTensorOf<[Trc_Float, I32, I64]>:$result);
  let assemblyFormat = "`dim` `=` $dimension attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_RandomUniformOp : Trc_Op<"random_uniform", [Pure, Trc_NoVjp]> {
  let summary = "counter-based uniform numbers in [0, 1) from a key";
  let description = [{
    Element i (row-major linear index) is a pure function of (key, stream,
    i): the SplitMix64 finalizer of key ^ stream * 0x9E3779B97F4A7C15 plus
    i * 0xBF58476D1CE4E5B9, whose top 24 bits scaled by 2^-24 give the value.
    The same key and stream give the same numbers on every backend and on
    every call, so a backward pass recomputes a forward mask exactly; the
    runtime feeds a new key each step (trc-lower-dropout).

    ```mlir
    %u = trc.random_uniform %key stream = 3 : (tensor<i64>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$key, I64Attr:$stream);
  let results = (outs StaticShapeTensorOf<[Trc_Float]>:$result);
  let assemblyFormat = "$key `stream` `=` $stream attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Trc_UnaryOp<string mnemonic, Type type, list<Trait> traits = []>
    : Trc_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                            Elementwise])> {
  let arguments = (ins type:$operand);
  let results = (outs type:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Trc_NegOp : Trc_UnaryOp<"neg", Trc_Tensor> {
  let summary = "-x"; let hasFolder = 1;
}
def Trc_AbsOp : Trc_UnaryOp<"abs", Trc_Tensor> { let summary = "|x|"; }
def Trc_ExpOp : Trc_UnaryOp<"exp", Trc_FloatTensor> { let summary = "e^x"; }
def Trc_LogOp : Trc_UnaryOp<"log", Trc_FloatTensor> { let summary = "ln x"; }
def Trc_SqrtOp : Trc_UnaryOp<"sqrt", Trc_FloatTensor> { let summary = "sqrt(x)"; }
def Trc_RsqrtOp : Trc_UnaryOp<"rsqrt", Trc_FloatTensor> { let summary = "1/sqrt(x)"; }
def Trc_TanhOp : Trc_UnaryOp<"tanh", Trc_FloatTensor> { let summary = "tanh(x)"; }
def Trc_ErfOp : Trc_UnaryOp<"erf", Trc_FloatTensor> { let summary = "erf(x)"; }
def Trc_SinOp : Trc_UnaryOp<"sin", Trc_FloatTensor> { let summary = "sin(x)"; }
def Trc_CosOp : Trc_UnaryOp<"cos", Trc_FloatTensor> { let summary = "cos(x)"; }
def Trc_LogisticOp : Trc_UnaryOp<"logistic", Trc_FloatTensor> {
  let summary = "1/(1+e^-x)";
}
def Trc_FloorOp : Trc_UnaryOp<"floor", Trc_FloatTensor> { let summary = "floor(x)"; }
def Trc_NotOp : Trc_UnaryOp<"not", Trc_PredTensor, [Trc_NoVjp]> {
  let summary = "logical not"; let hasFolder = 1;
}

class Trc_BinaryOp<string mnemonic, Type type, list<Trait> traits = []>
    : Trc_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                            Elementwise])> {
  let description = [{
    Operands have the same type; broadcasting is explicit
    (`trc.broadcast_in_dim`), so the VJP and sharding rules stay simple.
  }];
  let arguments = (ins type:$lhs, type:$rhs);
  let results = (outs type:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Trc_AddOp : Trc_BinaryOp<"add", Trc_Tensor, [Commutative]> {
  let summary = "x + y"; let hasFolder = 1;
}
def Trc_SubOp : Trc_BinaryOp<"sub", Trc_Tensor> {
  let summary = "x - y"; let hasFolder = 1;
}
def Trc_MulOp : Trc_BinaryOp<"mul", Trc_Tensor, [Commutative]> {
  let summary = "x * y"; let hasFolder = 1;
}
def Trc_DivOp : Trc_BinaryOp<"div", Trc_Tensor> {
  let summary = "x / y (integer division truncates)"; let hasFolder = 1;
}
def Trc_PowOp : Trc_BinaryOp<"pow", Trc_Tensor> {
  let summary = "x ^ y";
  let hasCanonicalizer = 1; // x^1, x^2, x^3, x^0.5 with constant exponents
}
def Trc_MaxOp : Trc_BinaryOp<"max", Trc_Tensor, [Commutative]> {
  let summary = "max(x, y)";
}
def Trc_MinOp : Trc_BinaryOp<"min", Trc_Tensor, [Commutative]> {
  let summary = "min(x, y)";
}
def Trc_AndOp : Trc_BinaryOp<"and", Trc_PredTensor, [Commutative, Trc_NoVjp]> {
  let summary = "logical and";
}
def Trc_OrOp : Trc_BinaryOp<"or", Trc_PredTensor, [Commutative, Trc_NoVjp]> {
  let summary = "logical or";
}

def Trc_CompareOp : Trc_Op<"compare",
    [Pure, Elementwise, AllTypesMatch<["lhs", "rhs"]>,
     AllShapesMatch<["lhs", "result"]>, Trc_NoVjp]> {
  let summary = "elementwise comparison giving i1";
  let description = [{
    ```mlir
    %m = trc.compare lt, %a, %b : tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Trc_CompareDirectionAttr:$direction, Trc_Tensor:$lhs,
                       Trc_Tensor:$rhs);
  let results = (outs Trc_PredTensor:$result);
  let assemblyFormat = [{
    $direction `,` $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Trc_SelectOp : Trc_Op<"select",
    [Pure, Elementwise, AllTypesMatch<["on_true", "on_false", "result"]>,
     AllShapesMatch<["pred", "result"]>]> {
  let summary = "pred ? on_true : on_false, element by element";
  let arguments = (ins Trc_PredTensor:$pred, Trc_Tensor:$on_true,
                       Trc_Tensor:$on_false);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)
  }];
  let hasFolder = 1;
}

def Trc_ConvertOp : Trc_Op<"convert",
    [Pure, Elementwise, AllShapesMatch<["operand", "result"]>]> {
  let summary = "element type conversion (ONNX Cast)";
  let arguments = (ins Trc_Tensor:$operand);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def Trc_DotGeneralOp : Trc_Op<"dot_general", [Pure]> {
  let summary = "batched matrix product with explicit contracting dimensions";
  let description = [{
    The result's dimensions are the batch dimensions (in order), then lhs's
    free dimensions, then rhs's free dimensions. MatMul, Gemm and Einsum all
    import onto this op (plus transposes and reshapes).

    ```mlir
    %y = trc.dot_general %a, %b, batch = [0] x [0], contract = [2] x [1]
        : (tensor<4x8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$lhs, Trc_Tensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batching_dims,
                       DenseI64ArrayAttr:$rhs_batching_dims,
                       DenseI64ArrayAttr:$lhs_contracting_dims,
                       DenseI64ArrayAttr:$rhs_contracting_dims);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` `batch` `=` $lhs_batching_dims `x` $rhs_batching_dims `,`
    `contract` `=` $lhs_contracting_dims `x` $rhs_contracting_dims attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_ReduceOp : Trc_Op<"reduce", [Pure]> {
  let summary = "reduces dimensions away with sum, max, min or prod";
  let description = [{
    The result drops the reduced dimensions (a keepdims reduction is this op
    followed by `trc.reshape`).

    ```mlir
    %s = trc.reduce sum %x dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Trc_ReduceKindAttr:$kind, Trc_Tensor:$operand,
                       DenseI64ArrayAttr:$dimensions);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `dims` `=` $dimensions attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Trc_BroadcastInDimOp : Trc_Op<"broadcast_in_dim", [Pure]> {
  let summary = "broadcasts a tensor into a larger shape";
  let description = [{
    Operand dimension i maps to result dimension `broadcast_dimensions[i]`
    (strictly increasing); its size is 1 or the result's size.

    ```mlir
    %b = trc.broadcast_in_dim %x, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand, DenseI64ArrayAttr:$broadcast_dimensions);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $broadcast_dimensions attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trc_TransposeOp : Trc_Op<"transpose", [Pure]> {
  let summary = "permutes dimensions: result dim i is operand dim permutation[i]";
  let arguments = (ins Trc_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `perm` `=` $permutation attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trc_ReshapeOp : Trc_Op<"reshape", [Pure]> {
  let summary = "same elements in row-major order, another static shape";
  let arguments = (ins Trc_Tensor:$operand);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trc_SliceOp : Trc_Op<"slice", [Pure]> {
  let summary = "static strided slice [start, limit) with positive strides";
  let arguments = (ins Trc_Tensor:$operand, DenseI64ArrayAttr:$start_indices,
                       DenseI64ArrayAttr:$limit_indices, DenseI64ArrayAttr:$strides);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $start_indices `:` $limit_indices `:` $strides `]` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trc_ReverseOp : Trc_Op<"reverse", [Pure, SameOperandsAndResultType]> {
  let summary = "reverses the order of elements along dimensions";
  let arguments = (ins Trc_Tensor:$operand, DenseI64ArrayAttr:$dimensions);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand `,` `dims` `=` $dimensions attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_ConcatenateOp : Trc_Op<"concatenate", [Pure]> {
  let summary = "joins tensors along one dimension";
  let arguments = (ins Variadic<Trc_Tensor>:$inputs, I64Attr:$dimension);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` `=` $dimension attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trc_PadOp : Trc_Op<"pad", [Pure]> {
  let summary = "pads with a scalar value (low and high edges, non-negative)";
  let arguments = (ins Trc_Tensor:$operand, Trc_Tensor:$padding_value,
                       DenseI64ArrayAttr:$edge_padding_low,
                       DenseI64ArrayAttr:$edge_padding_high);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $padding_value `,` `low` `=` $edge_padding_low `,`
    `high` `=` $edge_padding_high attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_GatherOp : Trc_Op<"gather", [Pure]> {
  let summary = "takes slices of operand along `axis` at the given indices";
  let description = [{
    ONNX Gather: result shape is operand[:axis] ++ indices ++ operand[axis+1:].
    Negative indices count from the end of the axis.

    ```mlir
    %e = trc.gather %table, %ids axis = 0
        : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand, Trc_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $indices `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Trc_ScatterAddOp : Trc_Op<"scatter_add", [Pure]> {
  let summary = "adds slices of updates into operand at indices along `axis`";
  let description = [{
    The adjoint of `trc.gather`: `updates` has gather's result shape; rows with
    the same index are summed. Used by the VJP of embedding lookups.
  }];
  let arguments = (ins Trc_Tensor:$operand, Trc_IndexTensor:$indices,
                       Trc_Tensor:$updates, I64Attr:$axis);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $indices `,` $updates `axis` `=` $axis attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composite ops: each has a decomposition into the core ops above.
//===----------------------------------------------------------------------===//

def Trc_SoftmaxOp : Trc_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "exp(x - max) / sum(exp(x - max)) along one axis";
  let arguments = (ins Trc_FloatTensor:$operand, I64Attr:$axis);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = "$operand `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_LogSoftmaxOp : Trc_Op<"log_softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "x - max - log(sum(exp(x - max))) along one axis";
  let arguments = (ins Trc_FloatTensor:$operand, I64Attr:$axis);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = "$operand `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_LayerNormOp : Trc_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "normalizes over dimensions [axis, rank), then scale and bias";
  let description = [{
    `scale` and `bias` (both optional) have the shape of the normalized
    dimensions, or are broadcastable to it as in ONNX LayerNormalization.

    ```mlir
    %y = trc.layer_norm %x scale %g bias %b axis = 2 eps = 1.0e-05
        : (tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Trc_FloatTensor:$operand, Optional<Trc_FloatTensor>:$scale,
                       Optional<Trc_FloatTensor>:$bias, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`scale` $scale^)? (`bias` $bias^)? `axis` `=` $axis `eps` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_GeluOp : Trc_Op<"gelu", [Pure, SameOperandsAndResultType, Elementwise]> {
  let summary = "x * Phi(x), exact (erf) or tanh-approximated";
  let arguments = (ins Trc_FloatTensor:$operand, UnitAttr:$tanh_approximation);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = "$operand (`tanh` $tanh_approximation^)? attr-dict `:` type($result)";
}

def Trc_CrossEntropyOp : Trc_Op<"cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy of logits [N, C, d...] against labels [N, d...]";
  let description = [{
    ONNX SoftmaxCrossEntropyLoss (and, with `log_probs`, NegativeLogLikelihoodLoss
    whose input already holds log-probabilities). Labels equal to
    `ignore_index` contribute nothing; `mean` divides by the count of the others.

    ```mlir
    %l = trc.cross_entropy %logits, %labels reduction = mean ignore_index = -100
        : (tensor<8x256x32xf32>, tensor<8x32xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Trc_FloatTensor:$logits, Trc_IndexTensor:$labels,
                       Trc_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index, UnitAttr:$log_probs);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `reduction` `=` $reduction
    (`ignore_index` `=` $ignore_index^)? (`log_probs` $log_probs^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_DropoutOp : Trc_Op<"dropout", [SameOperandsAndResultType, Trc_NoVjp,
                                        Trc_NoSharding]> {
  let summary = "zeroes elements with probability `ratio` and scales the rest";
  let description = [{
    Random in training: trc-lower-dropout turns it into a trc.random_uniform
    mask keyed by the step (input trc.rng_key) and `seed`, before autodiff.
    The importer drops it when the ratio is 0 or the model is in inference mode.
  }];
  let arguments = (ins Trc_FloatTensor:$operand, F64Attr:$ratio, I64Attr:$seed);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = "$operand `ratio` `=` $ratio `seed` `=` $seed attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TRC_OPS_TD
