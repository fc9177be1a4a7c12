//===- CalibrateKernels.cpp - the compiled kernel probe of --calibrate ----===//
//
// Built with the compiler only. The probe is a trc function over a [rows,
// 256] activation whose ops follow the mix of trc's GPT training step
// (trc-opt --trc-training-pipeline on the GPT-2 exports: mostly mul,
// reduce, broadcast_in_dim, add, transpose, sub; a layer norm, a softmax
// over attention heads, GPT-2's tanh GeLU, a select and an rsqrt; one
// weight transpose). Its unfused traffic is counted the way
// trc-print-fusion-summary counts "before" traffic (every op but
// constants, reshapes and the return is one op reading its operands and
// writing its results; splat constants are immediates), so the fitted
// rate prices the StepWork.h element counts of a step in the same units.
// It is compiled with the CPU pipeline (compileToArtifact) into a
// temporary folder, loaded, and timed through a Session: the same loops,
// OpenMP runtime and threads a training step's kernels run on.
//
//===----------------------------------------------------------------------===//
#include "trc/Driver/CalibrateKernels.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/ElementBytes.h"
#include "trc/InitAllDialects.h"
#include "trc/InitAllPasses.h"
#include "trc/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace trc {
namespace {

using rt::Status;

// The probe's IR for `rows` rows (a multiple of 64: sequences of 64
// tokens, 8 heads of 32).
std::string probeIr(int64_t rows) {
  const int64_t C = 256, H = 8, S = 64, B = rows / S, D = C / H;
  std::string t = "tensor<" + std::to_string(rows) + "x256xf32>";
  std::string t4 = "tensor<" + std::to_string(B) + "x64x8x32xf32>";
  std::string t4t = "tensor<" + std::to_string(B) + "x8x64x32xf32>";
  std::string tr = "tensor<" + std::to_string(rows) + "xf32>";
  std::string vec = "tensor<256xf32>", w = "tensor<256x256xf32>";
  (void)H, (void)S, (void)D;
  std::string s;
  s += "func.func @main(%x: " + t + " {trc.input = \"x\"}, %y: " + t +
       " {trc.input = \"y\"}, %g: " + vec + " {trc.input = \"g\"}, %b: " + vec +
       " {trc.input = \"b\"}, %w: " + w + " {trc.input = \"w\"}) -> (" + t +
       " {trc.output = \"out\"}, " + vec + " {trc.output = \"db\"}, " + w +
       " {trc.output = \"wt\"}) {\n";
  auto op = [&](const std::string &line) { s += "  " + line + "\n"; };
  auto splat = [&](const char *name, const char *value, const std::string &type) {
    op(std::string("%") + name + " = trc.constant dense<" + value + "> : " + type);
  };
  op("%ln = trc.layer_norm %x scale %g bias %b axis = 1 eps = 1.0e-5 : (" + t + ", " + vec +
     ", " + vec + ") -> " + t);
  op("%bb = trc.broadcast_in_dim %b, dims = [1] : (" + vec + ") -> " + t);
  op("%a1 = trc.add %ln, %bb : " + t);
  op("%r4 = trc.reshape %a1 : (" + t + ") -> " + t4);
  op("%hd = trc.transpose %r4, perm = [0, 2, 1, 3] : (" + t4 + ") -> " + t4t);
  splat("c1", "0.17677669", t4t);
  op("%sc = trc.mul %hd, %c1 : " + t4t);
  op("%sm = trc.softmax %sc axis = 3 : " + t4t);
  op("%tb = trc.transpose %sm, perm = [0, 2, 1, 3] : (" + t4t + ") -> " + t4);
  op("%r2 = trc.reshape %tb : (" + t4 + ") -> " + t);
  op("%m1 = trc.mul %r2, %y : " + t);
  // GPT-2's GeLU: 0.5 x (1 + tanh(0.79788 (x + 0.044715 x^3))).
  splat("c3", "3.0", t);
  op("%p3 = trc.pow %m1, %c3 : " + t);
  splat("c4", "0.044715", t);
  op("%m2 = trc.mul %p3, %c4 : " + t);
  op("%a2 = trc.add %m1, %m2 : " + t);
  splat("c5", "0.7978845608", t);
  op("%m3 = trc.mul %a2, %c5 : " + t);
  op("%th = trc.tanh %m3 : " + t);
  splat("c6", "1.0", t);
  op("%a3 = trc.add %th, %c6 : " + t);
  splat("c7", "0.5", t);
  op("%m4 = trc.mul %a3, %c7 : " + t);
  op("%m5 = trc.mul %m4, %m1 : " + t);
  // A backward-like tail: row sums broadcast back, a normalization, a mask.
  op("%d1 = trc.mul %m5, %y : " + t);
  op("%d2 = trc.sub %d1, %x : " + t);
  op("%r1 = trc.reduce sum %d2 dims = [1] : (" + t + ") -> " + tr);
  op("%q1 = trc.mul %r1, %r1 : " + tr);
  splat("c8", "1.0", tr);
  op("%q2 = trc.add %q1, %c8 : " + tr);
  op("%q3 = trc.rsqrt %q2 : " + tr);
  op("%br = trc.broadcast_in_dim %q3, dims = [0] : (" + tr + ") -> " + t);
  op("%d3 = trc.mul %br, %ln : " + t);
  op("%d4 = trc.sub %d2, %d3 : " + t);
  op("%cm = trc.compare gt, %d4, %x : " + t + " -> tensor<" + std::to_string(rows) +
     "x256xi1>");
  op("%se = trc.select %cm, %d4, %x : tensor<" + std::to_string(rows) + "x256xi1>, " + t);
  op("%db = trc.reduce sum %se dims = [0] : (" + t + ") -> " + vec);
  op("%d5 = trc.mul %se, %m1 : " + t);
  op("%out = trc.add %d5, %x : " + t);
  op("%wt = trc.transpose %w, perm = [1, 0] : (" + w + ") -> " + w);
  op("return %out, %db, %wt : " + t + ", " + vec + ", " + w);
  return s + "}\n";
}

int64_t bytesOf(mlir::Type type) {
  auto ranked = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return 0;
  return storageBytes(ranked);
}

// By name: the probe needs no op classes (and their headers) of its own.
bool isOp(mlir::Operation *op, llvm::StringRef name) {
  return op && op->getName().getStringRef() == name;
}

bool isSplat(mlir::Value v) {
  mlir::Operation *def = v.getDefiningOp();
  if (!isOp(def, trc::abi::kConstantOpName))
    return false;
  auto dense = def->getAttrOfType<mlir::DenseElementsAttr>("value");
  return dense && dense.isSplat();
}

// trc-print-fusion-summary's "before" count of `main`.
plan::KernelSample unfusedTraffic(mlir::func::FuncOp main) {
  plan::KernelSample k;
  main.walk([&](mlir::Operation *op) {
    if (isOp(op, trc::abi::kConstantOpName) || isOp(op, trc::abi::kReshapeOpName) ||
        llvm::isa<mlir::func::ReturnOp, mlir::func::FuncOp>(op))
      return;
    k.ops += 1;
    for (mlir::Value v : op->getOperands())
      if (!isSplat(v))
        k.bytes += double(bytesOf(v.getType()));
    for (mlir::Value v : op->getResults())
      k.bytes += double(bytesOf(v.getType()));
  });
  return k;
}

// Compiles the probe into a fresh temporary folder (`dir`, removed by the
// caller) and counts its traffic.
Status compileProbe(int64_t rows, std::string &dir, plan::KernelSample &traffic) {
  mlir::MLIRContext context;
  loadAllDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(probeIr(rows), &context);
  if (!module)
    return Status::error("--calibrate: the kernel probe does not parse (a trc bug)");
  auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
  traffic = unfusedTraffic(main);
  llvm::SmallString<128> folder;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("trc-calibrate", folder))
    return Status::error("--calibrate: cannot create a temporary folder: " + ec.message());
  dir = folder.str().str();
  CompileOptions options; // target cpu, the host's CPU, entry @main
  std::string log;
  llvm::raw_string_ostream logStream(log);
  if (mlir::failed(compileToArtifact(*module, options, dir + "/artifact", logStream)))
    return Status::error("--calibrate: the kernel probe does not compile (a trc bug):\n" + log);
  return Status::success();
}

} // namespace

rt::StatusOr<plan::KernelSample> runKernelProbe(int64_t rows, rt::Communicator &world,
                                                double window) {
  registerAllPasses();
  std::string dir;
  plan::KernelSample sample;
  Status compiled = compileProbe(rows, dir, sample);
  struct Remove {
    std::string dir;
    ~Remove() {
      if (!dir.empty())
        llvm::sys::fs::remove_directories(dir);
    }
  } remove{dir};
  if (!compiled)
    return compiled;
  rt::CpuBackend backend;
  rt::StatusOr<std::unique_ptr<rt::Artifact>> artifact = rt::Artifact::load(dir + "/artifact", "cpu");
  if (!artifact.ok())
    return artifact.status();
  rt::StatusOr<std::unique_ptr<rt::Session>> session = rt::Session::create(**artifact, backend);
  if (!session.ok())
    return session.status();
  for (auto [name, shape] : {std::pair<const char *, std::vector<int64_t>>{"x", {rows, 256}},
                             {"y", {rows, 256}}, {"g", {256}}, {"b", {256}}, {"w", {256, 256}}}) {
    rt::HostTensor value;
    if (Status s = value.allocate(rt::DType::F32, shape); !s)
      return s;
    float *data = value.as<float>();
    for (int64_t i = 0; i < value.numElements(); ++i)
      data[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    if (Status s = (*session)->setInput(name, value); !s)
      return s;
  }
  Status failed;
  rt::StatusOr<double> seconds = timeOnEveryRank(world, window, [&] {
    if (Status s = (*session)->run(); !s)
      failed = s;
  });
  if (!failed)
    return failed;
  if (!seconds.ok())
    return seconds.status();
  sample.seconds = *seconds;
  return sample;
}

} // namespace trc
