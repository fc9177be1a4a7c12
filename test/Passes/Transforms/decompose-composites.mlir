// trc-decompose-composites: each composite becomes its core-op definition.
// RUN: trc-opt %s --trc-decompose-composites --split-input-file | FileCheck %s

// Stable softmax: subtract the max, exponentiate, divide by the sum.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[M:.*]] = trc.reduce max %[[X]] dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK: %[[MB:.*]] = trc.broadcast_in_dim %[[M]], dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
// CHECK: %[[D:.*]] = trc.sub %[[X]], %[[MB]]
// CHECK: %[[E:.*]] = trc.exp %[[D]]
// CHECK: %[[S:.*]] = trc.reduce sum %[[E]] dims = [1]
// CHECK: %[[SB:.*]] = trc.broadcast_in_dim %[[S]], dims = [0]
// CHECK: %[[Y:.*]] = trc.div %[[E]], %[[SB]]
// CHECK: return %[[Y]]
// CHECK-NOT: trc.softmax
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = trc.softmax %x axis = 1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// log_softmax = (x - max) - log(sum(exp(x - max)))
// CHECK-LABEL: func.func @log_softmax
// CHECK: trc.reduce max %{{.*}} dims = [0]
// CHECK: %[[SH:.*]] = trc.sub
// CHECK: trc.exp %[[SH]]
// CHECK: trc.reduce sum
// CHECK: %[[L:.*]] = trc.log
// CHECK: trc.sub %[[SH]], %[[L]]
func.func @log_softmax(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %0 = trc.log_softmax %x axis = 0 : tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// layer_norm over the last two dims: mean and variance with 1/count, rsqrt
// of (variance + eps), then scale and bias broadcast over the leading dim.
// CHECK-LABEL: func.func @layer_norm
// CHECK-DAG: %[[INV:.*]] = trc.constant dense<0.0416{{[0-9]*}}> : tensor<2x3x8xf32>
// CHECK-DAG: %[[EPS:.*]] = trc.constant dense<9.99999974E-6> : tensor<2x3x8xf32>
// CHECK: trc.reduce sum %{{.*}} dims = [1, 2] : (tensor<2x3x8xf32>) -> tensor<2xf32>
// CHECK: trc.rsqrt
// CHECK: trc.broadcast_in_dim %{{.*}}, dims = [1, 2] : (tensor<3x8xf32>) -> tensor<2x3x8xf32>
// CHECK: trc.mul
// CHECK: trc.broadcast_in_dim %{{.*}}, dims = [1, 2] : (tensor<3x8xf32>) -> tensor<2x3x8xf32>
// CHECK: trc.add
// CHECK-NOT: trc.layer_norm
func.func @layer_norm(%x: tensor<2x3x8xf32>, %g: tensor<3x8xf32>, %b: tensor<3x8xf32>) -> tensor<2x3x8xf32> {
  %0 = trc.layer_norm %x scale %g bias %b axis = 1 eps = 1.0e-5 : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// Exact gelu uses erf(x / sqrt 2); the tanh form uses the cubic polynomial.
// CHECK-LABEL: func.func @gelu
// CHECK-DAG: %[[RSQRT2:.*]] = trc.constant dense<0.707106769> : tensor<6xf32>
// CHECK-DAG: %[[C:.*]] = trc.constant dense<4.471500e-02> : tensor<6xf32>
// CHECK-DAG: %[[K:.*]] = trc.constant dense<0.797884583> : tensor<6xf32>
// CHECK: %[[S:.*]] = trc.mul %arg0, %[[RSQRT2]]
// CHECK: trc.erf %[[S]]
// CHECK: trc.mul %{{.*}}, %[[C]]
// CHECK: trc.mul %{{.*}}, %[[K]]
// CHECK: trc.tanh
func.func @gelu(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %0 = trc.gelu %x : tensor<6xf32>
  %1 = trc.gelu %x tanh : tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}

// -----

// cross_entropy: logsumexp over classes minus the label's logit (picked
// through a one-hot select; no log-probabilities formed), ignored labels
// weighted 0, mean over the kept ones.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[IGNORE:.*]] = trc.constant dense<-100> : tensor<4xi64>
// CHECK: %[[IOTA:.*]] = trc.iota dim = 1 : tensor<4x10xi64>
// CHECK: %[[LB:.*]] = trc.broadcast_in_dim %arg1, dims = [0] : (tensor<4xi64>) -> tensor<4x10xi64>
// CHECK: %[[HIT:.*]] = trc.compare eq, %[[IOTA]], %[[LB]]
// CHECK: %[[SEL:.*]] = trc.select %[[HIT]], %arg0, %{{.*}}
// CHECK: %[[PICKED:.*]] = trc.reduce sum %[[SEL]] dims = [1] : (tensor<4x10xf32>) -> tensor<4xf32>
// CHECK: %[[MAX:.*]] = trc.reduce max %arg0 dims = [1]
// CHECK: trc.exp
// CHECK: %[[SUM:.*]] = trc.reduce sum %{{.*}} dims = [1]
// CHECK: %[[LOG:.*]] = trc.log %[[SUM]]
// CHECK: %[[LSE:.*]] = trc.add %[[MAX]], %[[LOG]]
// CHECK: %[[LOSS:.*]] = trc.sub %[[LSE]], %[[PICKED]]
// CHECK: %[[KEEP:.*]] = trc.compare ne, %arg1, %[[IGNORE]]
// CHECK: %[[W:.*]] = trc.select %[[KEEP]]
// CHECK: %[[WL:.*]] = trc.mul %[[LOSS]], %[[W]]
// CHECK-DAG: %[[TOTAL:.*]] = trc.reduce sum %[[WL]] dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-DAG: %[[COUNT:.*]] = trc.reduce sum %[[W]] dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK: trc.div %[[TOTAL]], %[[COUNT]] : tensor<f32>
func.func @cross_entropy(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %0 = trc.cross_entropy %logits, %labels reduction = mean ignore_index = -100 : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// With log-probabilities given (NLL) there is no log_softmax; reduction none
// keeps one loss per sample.
// CHECK-LABEL: func.func @nll_none
// CHECK-NOT: trc.exp
// CHECK: trc.neg %{{.*}} : tensor<2x5xf32>
// CHECK-NOT: trc.reduce sum %{{.*}} -> tensor<f32>
// CHECK: return %{{.*}} : tensor<2x5xf32>
func.func @nll_none(%logp: tensor<2x3x5xf32>, %labels: tensor<2x5xi32>) -> tensor<2x5xf32> {
  %0 = trc.cross_entropy %logp, %labels reduction = none log_probs : (tensor<2x3x5xf32>, tensor<2x5xi32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// attention: the scores q k^T (scaled, the stretched mask's fill), softmax
// in f32, times v.
// CHECK-LABEL: func.func @attention
// CHECK: %[[S:.*]] = trc.dot_general %arg0, %arg1, batch = [0] x [0], contract = [2] x [2] : (tensor<2x8x4xbf16>, tensor<2x6x4xbf16>) -> tensor<2x8x6xbf16>
// CHECK-NOT: trc.recomputed
// CHECK: %[[SC:.*]] = trc.mul %[[S]]
// CHECK: %[[MB:.*]] = trc.broadcast_in_dim %arg3, dims = [0, 1, 2] : (tensor<1x8x6xi1>) -> tensor<2x8x6xi1>
// CHECK: %[[MS:.*]] = trc.select %[[MB]], %{{.*}}, %[[SC]]
// CHECK: %[[W:.*]] = trc.convert %[[MS]] : tensor<2x8x6xbf16> -> tensor<2x8x6xf32>
// CHECK: trc.reduce max %[[W]]
// CHECK: %[[P:.*]] = trc.convert %{{.*}} : tensor<2x8x6xf32> -> tensor<2x8x6xbf16>
// CHECK: %[[O:.*]] = trc.dot_general %[[P]], %arg2, batch = [0] x [0], contract = [2] x [1] : (tensor<2x8x6xbf16>, tensor<2x6x4xbf16>) -> tensor<2x8x4xbf16>
// CHECK: return %[[O]]
func.func @attention(%q: tensor<2x8x4xbf16>, %k: tensor<2x6x4xbf16>, %v: tensor<2x6x4xbf16>, %m: tensor<1x8x6xi1>) -> tensor<2x8x4xbf16> {
  %o = trc.attention %q, %k, %v mask %m fill = 0xFFF0000000000000 where true scale = 0.5 : (tensor<2x8x4xbf16>, tensor<2x6x4xbf16>, tensor<2x6x4xbf16>, tensor<1x8x6xi1>) -> tensor<2x8x4xbf16>
  return %o : tensor<2x8x4xbf16>
}

// -----

// attention_grad recomputes the probabilities (the scores' product and the
// mask's stretch marked trc.recomputed, so that CSE cannot merge them with
// the forward's), then dv = p^T g, ds = p (dp - sum(dp p)) masked and
// scaled, dq = ds k, dk = ds^T q.
// CHECK-LABEL: func.func @attention_grad
// CHECK: %[[S:.*]] = trc.dot_general %arg0, %arg1, batch = [0] x [0], contract = [2] x [2] {trc.recomputed}
// CHECK: trc.broadcast_in_dim %arg4, dims = [0, 1, 2] {trc.recomputed}
// CHECK: %[[DV:.*]] = trc.dot_general %{{.*}}, %arg3, batch = [0] x [0], contract = [1] x [1] : (tensor<2x8x6xf32>, tensor<2x8x4xf32>) -> tensor<2x6x4xf32>
// CHECK: %[[DP:.*]] = trc.dot_general %arg3, %arg2, batch = [0] x [0], contract = [2] x [2] : (tensor<2x8x4xf32>, tensor<2x6x4xf32>) -> tensor<2x8x6xf32>
// CHECK: %[[DS:.*]] = trc.select
// CHECK: %[[DSS:.*]] = trc.mul %[[DS]]
// CHECK: %[[DQ:.*]] = trc.dot_general %[[DSS]], %arg1, batch = [0] x [0], contract = [2] x [1] : (tensor<2x8x6xf32>, tensor<2x6x4xf32>) -> tensor<2x8x4xf32>
// CHECK: %[[DK:.*]] = trc.dot_general %[[DSS]], %arg0, batch = [0] x [0], contract = [1] x [1] : (tensor<2x8x6xf32>, tensor<2x8x4xf32>) -> tensor<2x6x4xf32>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @attention_grad(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x4xf32>, %g: tensor<2x8x4xf32>, %m: tensor<1x8x6xi1>) -> (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>) {
  %dq, %dk, %dv = trc.attention_grad %q, %k, %v, %g mask %m fill = 0xFFF0000000000000 where true scale = 0.5 : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<2x8x4xf32>, tensor<1x8x6xi1>) -> (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>)
  return %dq, %dk, %dv : tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>
}
