//===- Optimizers.h - optimizer update rules as trc IR ----------*- C++ -*-===//
//
// One definition of each optimizer's update, emitted as trc ops on tensors,
// shared by the ONNX importer (the ai.onnx.preview.training Adam, Adagrad and
// Momentum ops, so ONNX's node tests check the numerics) and by the training
// step builder (torch.optim's SGD, Adam and AdamW).
//
// Every function takes the parameter X, its gradient G and its state, and
// returns the new parameter and new state. Hyper-parameters that vary per
// step (learning rate, step count) are rank-0 f32 tensors; constants are
// doubles. Preconditions: X, G and the state share one float tensor type.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TRAINING_OPTIMIZERS_H
#define TRC_TRAINING_OPTIMIZERS_H

#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"

namespace trc::training {

/// Small helpers over rank-0 and full tensors, used by the rules.
class UpdateBuilder {
public:
  UpdateBuilder(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type)
      : b_(b), loc_(loc), type_(type) {}

  mlir::RankedTensorType type() const { return type_; }
  mlir::Value constant(double v);                 // splat of `type`
  mlir::Value scalarConstant(double v);           // tensor<f32-or-type>
  mlir::Value expand(mlir::Value scalar);         // rank-0 -> `type`
  mlir::Value toElement(mlir::Value scalar);      // rank-0 of type's element
  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value sub(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value div(mlir::Value a, mlir::Value c);
  mlir::Value sqrt(mlir::Value a);
  mlir::Value pow(mlir::Value a, mlir::Value e);
  mlir::Value select(mlir::Value pred, mlir::Value a, mlir::Value c);
  mlir::Value greaterThanZero(mlir::Value a);
  mlir::OpBuilder &builder() { return b_; }
  mlir::Location loc() const { return loc_; }

private:
  mlir::OpBuilder &b_;
  mlir::Location loc_;
  mlir::RankedTensorType type_;
};

struct Update {
  mlir::Value param;
  mlir::SmallVector<mlir::Value, 2> state;
};

/// Where epsilon enters Adam: torch adds it to sqrt(v / (1 - beta2^t));
/// ONNX adds it to sqrt(v) before the bias correction is applied to the rate.
enum class AdamEpsilon { Torch, Onnx };

struct AdamOptions {
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weightDecay = 0.0;  // L2 added to the gradient (Adam, ONNX norm_coefficient)
  double decoupledDecay = 0.0; // AdamW: p *= 1 - lr * wd before the step
  double postDecay = 0.0;    // ONNX norm_coefficient_post: p *= 1 - c after
  bool biasCorrection = true;
  AdamEpsilon epsilonMode = AdamEpsilon::Torch;
};

/// state = {first moment, second moment}. The bias corrections use
/// 1 - beta^step (torch counts steps from 1); ONNX counts from 0 and skips
/// the correction at T == 0, which `stepIsZero` (rank-0 i1) expresses.
Update adam(UpdateBuilder &u, mlir::Value x, mlir::Value g, mlir::Value m,
            mlir::Value v, mlir::Value lr, mlir::Value step, const AdamOptions &o,
            mlir::Value stepIsZero = {});

struct MomentumOptions {
  double momentum = 0.0;     // alpha
  double gradScale = 1.0;    // beta (torch: 1 - dampening)
  double weightDecay = 0.0;  // L2 added to the gradient
  bool nesterov = false;
};

/// state = {velocity}: v = momentum * v + s * G with s = gradScale, except
/// s = 1 on the `first` step (rank-0 i1), as ONNX's Momentum does; with v
/// starting at zero that is torch's SGD (first buffer = G, no dampening).
Update momentum(UpdateBuilder &u, mlir::Value x, mlir::Value g, mlir::Value velocity,
                mlir::Value lr, mlir::Value first, const MomentumOptions &o);

struct AdagradOptions {
  double epsilon = 1e-10;
  double weightDecay = 0.0;
};

/// state = {sum of squared gradients}.
Update adagrad(UpdateBuilder &u, mlir::Value x, mlir::Value g, mlir::Value h,
               mlir::Value lr, const AdagradOptions &o);

} // namespace trc::training

#endif
