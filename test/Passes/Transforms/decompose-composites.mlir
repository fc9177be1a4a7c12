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

// cross_entropy: log_softmax over classes, a one-hot pick of the label's
// log-probability, ignored labels weighted 0, mean over the kept ones.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[IGNORE:.*]] = trc.constant dense<-100> : tensor<4xi64>
// CHECK: %[[IOTA:.*]] = trc.iota dim = 1 : tensor<4x10xi64>
// CHECK: %[[LB:.*]] = trc.broadcast_in_dim %arg1, dims = [0] : (tensor<4xi64>) -> tensor<4x10xi64>
// CHECK: %[[HIT:.*]] = trc.compare eq, %[[IOTA]], %[[LB]]
// CHECK: trc.select %[[HIT]]
// CHECK: trc.reduce sum %{{.*}} dims = [1] : (tensor<4x10xf32>) -> tensor<4xf32>
// CHECK: trc.neg
// CHECK: %[[KEEP:.*]] = trc.compare ne, %arg1, %[[IGNORE]]
// CHECK: %[[W:.*]] = trc.select %[[KEEP]]
// CHECK: %[[WL:.*]] = trc.mul %{{.*}}, %[[W]]
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
