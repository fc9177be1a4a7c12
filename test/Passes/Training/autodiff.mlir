// trc-autodiff: @main_grad returns the loss and one gradient per trainable
// parameter, built from each op's VJP rule (the numbers are checked against
// finite differences in test/unittests/VjpTest.cpp; here, the IR's shape).
// RUN: trc-opt %s --trc-autodiff --split-input-file -verify-diagnostics | FileCheck %s

// Elementwise and a matrix product: the seed 1 folds away, tanh' = 1 - r^2
// reuses the forward result, and dW = x^T g is one dot_general contracting
// the batch rows (no transpose). @main is kept; the loss keeps its name.
// CHECK-LABEL: func.func @main(
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {trc.input = "x"}, %[[W:[a-z0-9]+]]: tensor<3x4xf32> {trc.param = "w"})
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"}, tensor<3x4xf32> {trc.grad_of = "w"})
// CHECK: %[[Y:.*]] = trc.dot_general %[[X]], %[[W]]
// CHECK: %[[T:.*]] = trc.tanh %[[Y]]
// CHECK: %[[L:.*]] = trc.reduce  sum %[[T]]
// CHECK: %[[SQ:.*]] = trc.mul %[[T]], %[[T]]
// CHECK: %[[ONE:.*]] = trc.constant dense<1.000000e+00> : tensor<2x4xf32>
// CHECK: %[[D:.*]] = trc.sub %[[ONE]], %[[SQ]]
// CHECK: %[[DW:.*]] = trc.dot_general %[[X]], %[[D]], batch = [] x [], contract = [0] x [0] : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: return %[[L]], %[[DW]]
module {
  trc.parameter @w : tensor<3x4xf32>
  func.func @main(%x: tensor<2x3xf32> {trc.input = "x"}, %w: tensor<3x4xf32> {trc.param = "w"}) -> (tensor<f32> {trc.output = "loss"}) {
    %y = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %t = trc.tanh %y : tensor<2x4xf32>
    %l = trc.reduce sum %t dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Binary ops: div gives g/y and -(g/y) * r; max shares ties in halves (the
// mask is 1 where x wins, 1/2 on ties); select routes g to the branch that
// was picked and nothing to the predicate.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {trc.grad_of = "a"}, tensor<3xf32> {trc.grad_of = "b"})
// CHECK: %[[Q:.*]] = trc.div %arg0, %arg1
// CHECK: %[[M:.*]] = trc.max %[[Q]], %arg1
// CHECK: %[[P:.*]] = trc.compare  gt, %arg0, %arg1
// CHECK: %[[ONE:.*]] = trc.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK: %[[ZERO:.*]] = trc.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: %[[GM:.*]] = trc.select %[[P]], %[[ONE]], %[[ZERO]]
// CHECK: %[[GA0:.*]] = trc.select %[[P]], %[[ZERO]], %[[ONE]]
// CHECK: %[[HALF:.*]] = trc.constant dense<5.000000e-01> : tensor<3xf32>
// CHECK: %[[TIE:.*]] = trc.compare  eq, %[[Q]], %arg1
// CHECK: %[[TIES:.*]] = trc.select %[[TIE]], %[[HALF]], %[[ZERO]]
// CHECK: %[[WIN:.*]] = trc.compare  gt, %[[Q]], %arg1
// CHECK: %[[SHARE:.*]] = trc.select %[[WIN]], %{{.*}}, %[[TIES]]
// CHECK: %[[GQ:.*]] = trc.mul %[[GM]], %[[SHARE]]
// CHECK: %[[GB0:.*]] = trc.sub %[[GM]], %[[GQ]]
// CHECK: %[[GA1:.*]] = trc.div %[[GQ]], %arg1
// CHECK: %[[GR:.*]] = trc.mul %[[GA1]], %[[Q]]
// CHECK: %[[GB1:.*]] = trc.neg %[[GR]]
// CHECK: %[[GA:.*]] = trc.add %[[GA0]], %[[GA1]]
// CHECK: %[[GB:.*]] = trc.add %[[GB0]], %[[GB1]]
// CHECK: return %{{.*}}, %[[GA]], %[[GB]]
module {
  trc.parameter @a : tensor<3xf32>
  trc.parameter @b : tensor<3xf32>
  func.func @main(%a: tensor<3xf32> {trc.param = "a"}, %b: tensor<3xf32> {trc.param = "b"}) -> tensor<f32> {
    %q = trc.div %a, %b : tensor<3xf32>
    %m = trc.max %q, %b : tensor<3xf32>
    %p = trc.compare gt, %a, %b : tensor<3xf32> -> tensor<3xi1>
    %s = trc.select %p, %m, %a : tensor<3xi1>, tensor<3xf32>
    %l = trc.reduce sum %s dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// dot_general with a batch dim and two contracting dims in different orders:
// each gradient is a dot_general contracting the other operand's free dims,
// then one transpose back to the operand's dimension order.
// CHECK-LABEL: func.func @main_grad(
// CHECK: %[[G:.*]] = trc.constant dense<1.000000e+00> : tensor<2x4x6xf32>
// CHECK: %[[PA:.*]] = trc.dot_general %[[G]], %arg1, batch = [0] x [1], contract = [2] x [2] : (tensor<2x4x6xf32>, tensor<5x2x6x3xf32>) -> tensor<2x4x5x3xf32>
// CHECK: %[[DA:.*]] = trc.transpose %[[PA]], perm = [0, 3, 1, 2] : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
// CHECK: %[[PB:.*]] = trc.dot_general %arg0, %[[G]], batch = [0] x [0], contract = [2] x [1] : (tensor<2x3x4x5xf32>, tensor<2x4x6xf32>) -> tensor<2x3x5x6xf32>
// CHECK: %[[DB:.*]] = trc.transpose %[[PB]], perm = [2, 0, 3, 1] : (tensor<2x3x5x6xf32>) -> tensor<5x2x6x3xf32>
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
module {
  trc.parameter @a : tensor<2x3x4x5xf32>
  trc.parameter @b : tensor<5x2x6x3xf32>
  func.func @main(%a: tensor<2x3x4x5xf32> {trc.param = "a"}, %b: tensor<5x2x6x3xf32> {trc.param = "b"}) -> tensor<f32> {
    %c = trc.dot_general %a, %b, batch = [0] x [1], contract = [1, 3] x [3, 0] : (tensor<2x3x4x5xf32>, tensor<5x2x6x3xf32>) -> tensor<2x4x6xf32>
    %l = trc.reduce sum %c dims = [0, 1, 2] : (tensor<2x4x6xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// reduce max routes the gradient to every element equal to the maximum; a
// strided slice pads it back: reshape/pad/reshape interleaves stride - 1
// zeros per strided dim, one trc.pad places it at the start.
// CHECK-LABEL: func.func @main_grad(
// CHECK: %[[S:.*]] = trc.slice %arg0{{\[\[}}1, 0] : [7, 5] : [2, 3]]
// CHECK: %[[M:.*]] = trc.reduce  max %[[S]] dims = [1]
// CHECK: %[[MB:.*]] = trc.broadcast_in_dim %[[M]], dims = [0] : (tensor<3xf32>) -> tensor<3x2xf32>
// CHECK: %[[HIT:.*]] = trc.compare  eq, %[[S]], %[[MB]]
// CHECK: %[[G:.*]] = trc.select %[[HIT]]
// CHECK: %[[R0:.*]] = trc.reshape %[[G]] : (tensor<3x2xf32>) -> tensor<3x1x2xf32>
// CHECK: %[[Z:.*]] = trc.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[P0:.*]] = trc.pad %[[R0]], %[[Z]], low = [0, 0, 0], high = [0, 1, 0] : (tensor<3x1x2xf32>, tensor<f32>) -> tensor<3x2x2xf32>
// CHECK: %[[R1:.*]] = trc.reshape %[[P0]] : (tensor<3x2x2xf32>) -> tensor<6x2x1xf32>
// CHECK: %[[P1:.*]] = trc.pad %[[R1]], %[[Z]], low = [0, 0, 0], high = [0, 0, 2] : (tensor<6x2x1xf32>, tensor<f32>) -> tensor<6x2x3xf32>
// CHECK: %[[R2:.*]] = trc.reshape %[[P1]] : (tensor<6x2x3xf32>) -> tensor<6x6xf32>
// CHECK: %[[DX:.*]] = trc.pad %[[R2]], %[[Z]], low = [1, 0], high = [0, 0] : (tensor<6x6xf32>, tensor<f32>) -> tensor<7x6xf32>
// CHECK: return %{{.*}}, %[[DX]]
module {
  trc.parameter @x : tensor<7x6xf32>
  func.func @main(%x: tensor<7x6xf32> {trc.param = "x"}) -> tensor<f32> {
    %s = trc.slice %x[[1, 0] : [7, 5] : [2, 3]] : (tensor<7x6xf32>) -> tensor<3x2xf32>
    %m = trc.reduce max %s dims = [1] : (tensor<3x2xf32>) -> tensor<3xf32>
    %l = trc.reduce sum %m dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Slices that split a tensor (attention's q, k, v): the zero-padded
// gradients of disjoint pieces are joined into one concatenate (zeros fill
// the gaps) rather than padded and added.
// CHECK-LABEL: func.func @main_grad(
// CHECK: %[[Q:.*]] = trc.slice %arg0
// CHECK: %[[V:.*]] = trc.slice %arg0
// CHECK: %[[GV:.*]] = trc.exp %[[V]] : tensor<2x3xf32>
// CHECK: %[[GQ:.*]] = trc.add %[[Q]], %[[Q]]
// CHECK-DAG: %[[Z:.*]] = trc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[GAP:.*]] = trc.constant dense<0.000000e+00> : tensor<2x1xf32>
// CHECK: %[[J:.*]] = trc.concatenate %[[GQ]], %[[GAP]], %[[GV]] dim = 1 : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
// CHECK-NEXT: %[[DX:.*]] = trc.pad %[[J]], %[[Z]], low = [0, 0], high = [0, 1] : (tensor<2x7xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.*}}, %[[DX]]
module {
  trc.parameter @x : tensor<2x8xf32>
  func.func @main(%x: tensor<2x8xf32> {trc.param = "x"}) -> tensor<f32> {
    %q = trc.slice %x[[0, 0] : [2, 3] : [1, 1]] : (tensor<2x8xf32>) -> tensor<2x3xf32>
    %v = trc.slice %x[[0, 4] : [2, 7] : [1, 1]] : (tensor<2x8xf32>) -> tensor<2x3xf32>
    %e = trc.exp %v : tensor<2x3xf32>
    %p = trc.mul %q, %q : tensor<2x3xf32>
    %s = trc.add %p, %e : tensor<2x3xf32>
    %l = trc.reduce sum %s dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Data movement: concatenate slices the gradient per input, pad slices the
// interior (and the padding value gets the border's sum), reverse reverses,
// broadcast_in_dim sums the broadcast dims and reshapes size-1 dims back.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: tensor<2x1xf32> {trc.grad_of = "a"}, tensor<2x2xf32> {trc.grad_of = "b"}, tensor<f32> {trc.grad_of = "v"}, tensor<1x3xf32> {trc.grad_of = "c"}
// CHECK: %[[G:.*]] = trc.constant dense<1.000000e+00> : tensor<4x6xf32>
// CHECK: %[[GR:.*]] = trc.reverse %[[G]], dims = [1] : tensor<4x6xf32>
// CHECK: %[[GP:.*]] = trc.slice %[[GR]]{{\[\[}}0, 0] : [4, 3] : [1, 1]]
// CHECK: %[[GB:.*]] = trc.slice %[[GR]]{{\[\[}}0, 3] : [4, 6] : [1, 1]]
// CHECK: %[[SUM:.*]] = trc.reduce  sum %[[GB]] dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
// CHECK: %[[DC:.*]] = trc.reshape %[[SUM]] : (tensor<3xf32>) -> tensor<1x3xf32>
// CHECK: %[[GC:.*]] = trc.slice %[[GP]]{{\[\[}}1, 0] : [3, 3] : [1, 1]] : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[IN:.*]] = trc.reduce  sum %[[GC]] dims = [0, 1]
// CHECK: %[[ALL:.*]] = trc.reduce  sum %[[GP]] dims = [0, 1]
// CHECK: %[[DV:.*]] = trc.sub %[[ALL]], %[[IN]] : tensor<f32>
// CHECK: %[[DA:.*]] = trc.slice %[[GC]]{{\[\[}}0, 0] : [2, 1] : [1, 1]]
// CHECK: %[[DB:.*]] = trc.slice %[[GC]]{{\[\[}}0, 1] : [2, 3] : [1, 1]]
// CHECK: return %{{.*}}, %[[DA]], %[[DB]], %[[DV]], %[[DC]]
module {
  trc.parameter @a : tensor<2x1xf32>
  trc.parameter @b : tensor<2x2xf32>
  trc.parameter @v : tensor<f32>
  trc.parameter @c : tensor<1x3xf32>
  func.func @main(%a: tensor<2x1xf32> {trc.param = "a"}, %b: tensor<2x2xf32> {trc.param = "b"}, %v: tensor<f32> {trc.param = "v"}, %c: tensor<1x3xf32> {trc.param = "c"}) -> tensor<f32> {
    %ab = trc.concatenate %a, %b dim = 1 : (tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
    %p = trc.pad %ab, %v, low = [1, 0], high = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %cb = trc.broadcast_in_dim %c, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<4x3xf32>
    %j = trc.concatenate %p, %cb dim = 1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
    %r = trc.reverse %j, dims = [1] : tensor<4x6xf32>
    %l = trc.reduce sum %r dims = [0, 1] : (tensor<4x6xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A tied embedding: the table is read by gather (its gradient a scatter_add
// into zeros) and, transposed, by the LM head (a dot_general; the transpose
// back is folded into the product's operand order); the two are summed.
// cross_entropy's gradient is (softmax - onehot) / N. The frozen parameter
// and the integer ids get no gradient.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<5x3xf32> {trc.grad_of = "wte"})
// CHECK: %[[E:.*]] = trc.gather %arg1, %arg0 axis = 0
// CHECK: %[[H:.*]] = trc.add %[[E]], %arg2
// CHECK: %[[WT:.*]] = trc.transpose %arg1, perm = [1, 0]
// CHECK: %[[LOGITS:.*]] = trc.dot_general %[[H]], %[[WT]]
// CHECK: %[[LOSS:.*]] = trc.cross_entropy %[[LOGITS]], %arg0
// CHECK: %[[IDS:.*]] = trc.broadcast_in_dim %arg0, dims = [0] : (tensor<4xi64>) -> tensor<4x5xi64>
// CHECK: %[[CLS:.*]] = trc.iota dim = 1 : tensor<4x5xi64>
// CHECK: %[[HIT:.*]] = trc.compare  eq, %[[CLS]], %[[IDS]]
// CHECK: %[[INV:.*]] = trc.constant dense<2.500000e-01> : tensor<4x5xf32>
// CHECK: %[[SM:.*]] = trc.softmax %[[LOGITS]] axis = 1
// CHECK: %[[ONE:.*]] = trc.constant dense<1.000000e+00> : tensor<4x5xf32>
// CHECK: %[[SM1:.*]] = trc.sub %[[SM]], %[[ONE]]
// CHECK: %[[D:.*]] = trc.select %[[HIT]], %[[SM1]], %[[SM]]
// CHECK: %[[GL:.*]] = trc.mul %[[D]], %[[INV]]
// CHECK: %[[GH:.*]] = trc.dot_general %[[GL]], %[[WT]], batch = [] x [], contract = [1] x [1] : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
// CHECK: %[[HEAD:.*]] = trc.dot_general %[[GL]], %[[H]], batch = [] x [], contract = [0] x [0] : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
// CHECK: %[[ZERO:.*]] = trc.constant dense<0.000000e+00> : tensor<5x3xf32>
// CHECK: %[[EMB:.*]] = trc.scatter_add %[[ZERO]], %arg0, %[[GH]] axis = 0
// CHECK: %[[DW:.*]] = trc.add %[[HEAD]], %[[EMB]]
// CHECK: return %[[LOSS]], %[[DW]]
module {
  trc.parameter @wte : tensor<5x3xf32>
  trc.parameter @pos frozen : tensor<4x3xf32>
  func.func @main(%ids: tensor<4xi64> {trc.input = "ids"}, %wte: tensor<5x3xf32> {trc.param = "wte"}, %pos: tensor<4x3xf32> {trc.param = "pos"}) -> tensor<f32> {
    %e = trc.gather %wte, %ids axis = 0 : (tensor<5x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %h = trc.add %e, %pos : tensor<4x3xf32>
    %wt = trc.transpose %wte, perm = [1, 0] : (tensor<5x3xf32>) -> tensor<3x5xf32>
    %logits = trc.dot_general %h, %wt, batch = [] x [], contract = [1] x [0] : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %l = trc.cross_entropy %logits, %ids reduction = mean : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Composites use their closed forms: softmax dx = r (g - sum(g r)), and
// layer_norm recomputes x^ and rstd: dbias = sum(g), dscale = sum(g x^)
// over the leading dims, dx = rstd (h - mean h - x^ mean(h x^)), h = g scale.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: tensor<4xf32> {trc.grad_of = "g"}, tensor<4xf32> {trc.grad_of = "b"}
// CHECK: %[[Y:.*]] = trc.layer_norm %arg0 scale %arg1 bias %arg2
// CHECK: %[[R:.*]] = trc.softmax %[[Y]] axis = 1
// CHECK: %[[DOT:.*]] = trc.reduce  sum %[[R]] dims = [1]
// CHECK: %[[DOTB:.*]] = trc.broadcast_in_dim %[[DOT]], dims = [0]
// CHECK: %[[GS:.*]] = trc.sub %{{.*}}, %[[DOTB]]
// CHECK: %[[GY:.*]] = trc.mul %[[R]], %[[GS]]
// CHECK: %[[RSTD:.*]] = trc.rsqrt
// CHECK: %[[XHAT:.*]] = trc.mul %{{.*}}, %[[RSTD]]
// CHECK: %[[GXHAT:.*]] = trc.mul %[[GY]], %[[XHAT]]
// CHECK: %[[DG:.*]] = trc.reduce  sum %[[GXHAT]] dims = [0] : (tensor<3x4xf32>) -> tensor<4xf32>
// CHECK: %[[DB:.*]] = trc.reduce  sum %[[GY]] dims = [0] : (tensor<3x4xf32>) -> tensor<4xf32>
// CHECK-NOT: trc.layer_norm
// CHECK: return %{{.*}}, %[[DG]], %[[DB]]
module {
  trc.parameter @g : tensor<4xf32>
  trc.parameter @b : tensor<4xf32>
  func.func @main(%x: tensor<3x4xf32>, %g: tensor<4xf32> {trc.param = "g"}, %b: tensor<4xf32> {trc.param = "b"}) -> tensor<f32> {
    %y = trc.layer_norm %x scale %g bias %b axis = 1 eps = 1.0e-05 : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %s = trc.softmax %y axis = 1 : tensor<3x4xf32>
    %l = trc.reduce sum %s dims = [0, 1] : (tensor<3x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Attention's VJP is one trc.attention_grad on the forward's operands (its
// probabilities are not kept); the mask gets no gradient.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: tensor<2x8x4xf32> {trc.grad_of = "wq"}, tensor<2x8x4xf32> {trc.grad_of = "wk"}, tensor<2x8x4xf32> {trc.grad_of = "wv"}
// CHECK: %[[O:.*]] = trc.attention %arg1, %arg2, %arg3 mask %arg0 fill = 0xFFF0000000000000 where true scale = 5.000000e-01
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = trc.attention_grad %arg1, %arg2, %arg3, %{{.*}} mask %arg0 fill = 0xFFF0000000000000 where true scale = 5.000000e-01
// CHECK-NOT: trc.softmax
// CHECK: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]]
module {
  trc.parameter @wq : tensor<2x8x4xf32>
  trc.parameter @wk : tensor<2x8x4xf32>
  trc.parameter @wv : tensor<2x8x4xf32>
  func.func @main(%m: tensor<1x8x8xi1>, %q: tensor<2x8x4xf32> {trc.param = "wq"}, %k: tensor<2x8x4xf32> {trc.param = "wk"}, %v: tensor<2x8x4xf32> {trc.param = "wv"}) -> tensor<f32> {
    %o = trc.attention %q, %k, %v mask %m fill = 0xFFF0000000000000 where true scale = 0.5 : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<1x8x8xi1>) -> tensor<2x8x4xf32>
    %l = trc.reduce sum %o dims = [0, 1, 2] : (tensor<2x8x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A path through integers carries nothing: d/dw of convert(convert(w, i32))
// is zero, so only the direct term remains; a parameter the loss does not
// read gets a zero gradient.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {trc.grad_of = "w"}, tensor<2xf32> {trc.grad_of = "unused"})
// CHECK-DAG: %[[ONE:.*]] = trc.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[ZERO:.*]] = trc.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %[[ONE]], %[[ZERO]]
module {
  trc.parameter @w : tensor<3xf32>
  trc.parameter @unused : tensor<2xf32>
  func.func @main(%w: tensor<3xf32> {trc.param = "w"}, %u: tensor<2xf32> {trc.param = "unused"}) -> tensor<f32> {
    %i = trc.convert %w : tensor<3xf32> -> tensor<3xi32>
    %f = trc.convert %i : tensor<3xi32> -> tensor<3xf32>
    %s = trc.add %f, %w : tensor<3xf32>
    %l = trc.reduce sum %s dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The loss must be a scalar float.
module {
  trc.parameter @w : tensor<2xf32>
  // expected-error @+1 {{trc-autodiff needs @main's first result to be the loss, a scalar float tensor; got 'tensor<2xf32>'}}
  func.func @main(%w: tensor<2xf32> {trc.param = "w"}) -> tensor<2xf32> {
    return %w : tensor<2xf32>
  }
}

// -----

module {
  trc.parameter @w : tensor<2xf32>
  // expected-error @+1 {{got 'tensor<i64>'}}
  func.func @main(%w: tensor<2xf32> {trc.param = "w"}) -> tensor<i64> {
    %c = trc.constant dense<0> : tensor<i64>
    return %c : tensor<i64>
  }
}

// -----

// An op without a VJP rule on the path from a parameter to the loss is named.
module {
  trc.parameter @w : tensor<3xf32>
  func.func @main(%w: tensor<3xf32> {trc.param = "w"}) -> tensor<f32> {
    // expected-error @+1 {{'trc.dropout' has no VJP rule, and it is on the path from a trainable parameter to the loss}}
    %d = trc.dropout %w ratio = 1.000000e-01 seed = 0 : tensor<3xf32>
    %l = trc.reduce sum %d dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Off the path (here: only the frozen parameter reaches the dropout), no
// rule is needed: dw = dropout(f).
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {trc.grad_of = "w"})
// CHECK: %[[D:.*]] = trc.dropout %arg1
// CHECK: return %{{.*}}, %[[D]]
module {
  trc.parameter @w : tensor<3xf32>
  trc.parameter @f frozen : tensor<3xf32>
  func.func @main(%w: tensor<3xf32> {trc.param = "w"}, %f: tensor<3xf32> {trc.param = "f"}) -> tensor<f32> {
    %d = trc.dropout %f ratio = 1.000000e-01 seed = 0 : tensor<3xf32>
    %s = trc.mul %d, %w : tensor<3xf32>
    %l = trc.reduce sum %s dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Trainable parameters must be arguments (trc-parameters-to-arguments first).
module {
  trc.parameter @w : tensor<3xf32>
  func.func @main() -> tensor<f32> {
    // expected-error @+1 {{reads trainable parameter @w: run trc-parameters-to-arguments before trc-autodiff}}
    %w = trc.get_parameter @w : tensor<3xf32>
    %l = trc.reduce sum %w dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error @+1 {{trc-autodiff: the module already has a symbol @main_grad}}
module {
  func.func @main(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @main_grad(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// An op with regions that reads a parameter from above is on the path too.
module {
  trc.parameter @w : tensor<3xf32>
  func.func @main(%w: tensor<3xf32> {trc.param = "w"}) -> tensor<f32> {
    // expected-error @+1 {{'scf.execute_region' has no VJP rule}}
    %r = scf.execute_region -> tensor<3xf32> {
      %e = trc.exp %w : tensor<3xf32>
      scf.yield %e : tensor<3xf32>
    }
    %l = trc.reduce sum %r dims = [0] : (tensor<3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// @main's trc.update results (a frozen parameter's new value, such as
// batch normalization's running statistics) follow the gradients.
// CHECK-LABEL: func.func @main_grad(
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"}, tensor<4xf32> {trc.grad_of = "w"}, tensor<4xf32> {trc.update = "stat"})
// CHECK: %[[N:.*]] = trc.add %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[N]] :
module {
  trc.parameter @w : tensor<4xf32>
  trc.parameter @stat frozen : tensor<4xf32>
  func.func @main(%x: tensor<4xf32> {trc.input = "x"}, %w: tensor<4xf32> {trc.param = "w"}, %s: tensor<4xf32> {trc.param = "stat"}) -> (tensor<f32> {trc.output = "loss"}, tensor<4xf32> {trc.update = "stat"}) {
    %p = trc.mul %w, %x : tensor<4xf32>
    %l = trc.reduce sum %p dims = [0] : (tensor<4xf32>) -> tensor<f32>
    %n = trc.add %s, %x : tensor<4xf32>
    return %l, %n : tensor<f32>, tensor<4xf32>
  }
}
