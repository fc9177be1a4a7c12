//===- TrcAttention.td - fused scaled dot-product attention -*- tablegen -*-===//
//
// Attention as one op, so that training never saves its probabilities:
// trc-fuse-attention forms trc.attention from the exported graph's
// dot_general / scale / mask / softmax / dot_general chain before autodiff;
// its VJP is trc.attention_grad, which recomputes the probabilities from q
// and k. Both are composites: trc-decompose-composites expands them into
// core ops when lowering (the probabilities then exist only while one
// layer's forward or backward runs, not from the forward to the backward).
//
// Shapes: q [b..., Tq, D], k [b..., Tk, D], v [b..., Tk, Dv] with the same
// batch dims b...; scores s = scale * q k^T [b..., Tq, Tk]; with a mask (i1,
// the scores' shape or 1 in dims it is the same along, e.g. a causal mask
// [1, 1, Tq, Tk] shared by batch and heads), positions where mask == fill_where_true get the score
// `mask_fill`; p = softmax(s) along Tk; result p v [b..., Tq, Dv].
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ATTENTION_TD
#define TRC_ATTENTION_TD

include "TrcBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Trc_AttentionOp : Trc_Op<"attention", [Pure]> {
  let summary = "softmax(scale * q k^T, masked) v";
  let description = [{
    ```mlir
    %o = trc.attention %q, %k, %v mask %m fill = 0xFF800000 where true
        scale = 1.250000e-01
        : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>,
           tensor<1x1x16x16xi1>) -> tensor<2x4x16x8xf32>
    ```
  }];
  let arguments = (ins Trc_FloatTensor:$q, Trc_FloatTensor:$k, Trc_FloatTensor:$v,
                       Optional<Trc_PredTensor>:$mask, F64Attr:$scale,
                       F64Attr:$mask_fill, BoolAttr:$fill_where_true);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` $mask^)? `fill` `=` $mask_fill `where` $fill_where_true
    `scale` `=` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_AttentionGradOp : Trc_Op<"attention_grad", [Pure, Trc_NoVjp]> {
  let summary = "d q, d k, d v of trc.attention given d result";
  let description = [{
    The probabilities are recomputed from q and k (nothing of the forward
    but its operands is kept). With s, p as in trc.attention and g the
    result's gradient: dp = g v^T, ds = p (dp - sum(dp p)) along Tk,
    dq = scale ds k, dk = scale ds^T q, dv = p^T g.

    ```mlir
    %dq, %dk, %dv = trc.attention_grad %q, %k, %v, %g fill = 0xFF800000
        where true scale = 1.250000e-01
        : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>,
           tensor<2x4x16x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>,
                                     tensor<2x4x16x8xf32>)
    ```
  }];
  let arguments = (ins Trc_FloatTensor:$q, Trc_FloatTensor:$k, Trc_FloatTensor:$v,
                       Trc_FloatTensor:$result_grad, Optional<Trc_PredTensor>:$mask,
                       F64Attr:$scale, F64Attr:$mask_fill, BoolAttr:$fill_where_true);
  let results = (outs Trc_FloatTensor:$q_grad, Trc_FloatTensor:$k_grad,
                      Trc_FloatTensor:$v_grad);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $result_grad (`mask` $mask^)? `fill` `=` $mask_fill
    `where` $fill_where_true `scale` `=` $scale attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TRC_ATTENTION_TD
