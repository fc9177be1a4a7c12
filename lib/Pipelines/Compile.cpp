//===- Compile.cpp - an imported module -> an artifact ----------------------===//
//
// Parameters become arguments; the slot table (inputs, parameters, outputs,
// in @main's argument order) and the initial weights are read off the IR;
// zero-element arguments and results become rank 1 (bare pointers need
// static strides); the CPU pipeline lowers to LLVM; trc_entry unpacks the
// slot array into the step's arguments; the object is linked and the
// artifact published.
//
//===----------------------------------------------------------------------===//
#include "ArtifactWriter.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/ArtifactNames.h"
#include "trc/Abi/ProfileSpans.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Analysis/MemoryPlan.h"
#include "CudaArtifact.h"
#include "ObjectEmitter.h"
#include "trc/Dialect/Trc.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "runtime/formats/Initializer.h"
#include "runtime/support/Names.h"
#include "runtime/support/TensorSplit.h"

#include "llvm/Support/FormatVariadic.h"
#include <algorithm>

using namespace mlir;

namespace trc {

bool parseCompileOptions(llvm::StringRef text, CompileOptions &options,
                         std::string &error) {
  llvm::SmallVector<llvm::StringRef> items;
  std::string spaced = text.str();
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  llvm::StringRef(spaced).split(items, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    if (key == "target" && (value == "cpu" || value == "cuda")) {
      options.target = value.str();
    } else if (key == "cpu" && !value.empty()) {
      options.cpu = value.str();
    } else if (key == "opt" && (value == "0" || value == "1" || value == "2" || value == "3")) {
      options.optLevel = value[0] - '0';
    } else if (key == "entry" && !value.empty()) {
      options.entry = value.str();
    } else if (key == "emulate" && value == "cuda") {
      options.emulateCuda = true;
    } else if (key == "attention" && (value == "kernels" || value == "decomposed")) {
      options.attentionKernels = value == "kernels";
    } else if (key == "weights") {
      if (value != "values" && value != "init") {
        error = "--trc-compile: bad value '" + value.str() +
                "' for option 'weights' (expected weights=values or weights=init)";
        return false;
      }
      options.weights = value.str();
    } else if (key == "seed") {
      if (value.empty() || value.getAsInteger(10, options.seed)) {
        error = "--trc-compile: bad value '" + value.str() +
                "' for option 'seed' (expected a decimal integer from 0 to 2^64-1)";
        return false;
      }
    } else {
      error = "--trc-compile: unknown or bad option '" + item.str() +
              "' (expected target=cpu|cuda, cpu=NAME, opt=0..3, entry=FUNCTION, "
              "emulate=cuda, attention=kernels|decomposed, weights=values|init, seed=N)";
      return false;
    }
  }
  return true;
}

namespace {

/// What a trc.cross_entropy says of its labels: its classes and ignore
/// index (the manifest's `labels` record).
struct LabelBound {
  int64_t classes = 0; // 0: not the labels of a loss
  std::optional<int64_t> ignore;
};

/// The rows of the tables input argument `arg` indexes (trc.gather reading
/// it directly or through reshapes; the fewest when several), or 0: the
/// manifest's `bound` record, which the runtime checks the input against.
/// A table that is one rank's part of a split or sharded parameter (the
/// ids are global) bounds nothing. `labels` receives what a
/// trc.cross_entropy whose labels the argument is (through reshapes) says.
int64_t indexBoundOf(func::FuncOp main, unsigned arg, LabelBound &labels) {
  auto type = dyn_cast<RankedTensorType>(main.getArgument(arg).getType());
  if (!type || !(type.getElementType().isInteger(32) || type.getElementType().isInteger(64)))
    return 0;
  int64_t bound = 0;
  SmallVector<Value> worklist{main.getArgument(arg)};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<ReshapeOp>(user)) {
        worklist.push_back(user->getResult(0));
        continue;
      }
      if (auto loss = dyn_cast<CrossEntropyOp>(user); loss && loss.getLabels() == v) {
        auto logits = cast<RankedTensorType>(loss.getLogits().getType());
        int64_t classAxis = logits.getRank() >= 2 ? 1 : 0;
        if (logits.getRank() >= 1 && !logits.isDynamicDim(classAxis) && !labels.classes) {
          labels.classes = logits.getDimSize(classAxis);
          if (auto ignore = loss.getIgnoreIndex())
            labels.ignore = int64_t(*ignore);
        }
        continue;
      }
      auto gather = dyn_cast<GatherOp>(user);
      if (!gather || gather.getIndices() != v)
        continue;
      if (auto table = dyn_cast<BlockArgument>(gather.getOperand()))
        if (table.getOwner()->getParentOp() == main.getOperation() &&
            (main.getArgAttr(table.getArgNumber(), trc::abi::kSplitAttr) ||
             main.getArgAttr(table.getArgNumber(), trc::abi::kShardDegreeAttr)))
          return 0;
      auto tableType = cast<RankedTensorType>(gather.getOperand().getType());
      int64_t axis = gather.getAxis();
      if (axis < 0)
        axis += tableType.getRank();
      if (axis < 0 || axis >= tableType.getRank() || tableType.isDynamicDim(axis))
        return 0;
      int64_t rows = tableType.getDimSize(axis);
      bound = bound ? std::min(bound, rows) : rows;
    }
  }
  return bound;
}

/// The bytes of a parameter's initial value, splats expanded into `storage`.
llvm::ArrayRef<char> initialBytes(ElementsAttr value, std::vector<char> &storage) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  auto dense = cast<DenseElementsAttr>(value);
  llvm::ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat())
    return raw;
  for (int64_t i = 0, n = dense.getNumElements(); i < n; ++i)
    storage.insert(storage.end(), raw.begin(), raw.end());
  return storage;
}

/// A zero-element tensor of rank other than 1 as tensor<0xT>, else null.
/// (The LLVM lowering cannot pass e.g. memref<0x3xf32> as a bare pointer:
/// its strides are not static. tensor<0xT> is the same empty buffer.)
RankedTensorType flatEmptyType(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || t.getNumElements() != 0 || t.getRank() == 1)
    return {};
  return RankedTensorType::get({0}, t.getElementType());
}

/// Gives @main's zero-element arguments and results the type tensor<0xT>,
/// reshaping at the boundary. Slot types are read before this.
void flattenEmptyBoundaryTensors(func::FuncOp main) {
  Block &body = main.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  for (BlockArgument arg : body.getArguments()) {
    auto flat = flatEmptyType(arg.getType());
    if (!flat)
      continue;
    auto original = cast<RankedTensorType>(arg.getType());
    arg.setType(flat);
    auto reshaped = b.create<ReshapeOp>(main.getLoc(), original, arg);
    arg.replaceAllUsesExcept(reshaped, reshaped);
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  for (OpOperand &operand : ret->getOpOperands())
    if (auto flat = flatEmptyType(operand.get().getType()))
      operand.set(b.create<ReshapeOp>(main.getLoc(), flat, operand.get()));
  main.setFunctionType(b.getFunctionType(body.getArgumentTypes(), ret.getOperandTypes()));
}

/// Makes @`entry` the function compiled (trc-select-entry).
LogicalResult selectEntry(ModuleOp module, llvm::StringRef entry, TimingScope &timing) {
  if (!module.lookupSymbol<func::FuncOp>(entry))
    return failure();
  PassManager select(module.getContext());
  select.enableTiming(timing);
  SelectEntryOptions options;
  options.entry = entry.str();
  select.addPass(createSelectEntry(options));
  return select.run(module);
}

/// An imported model's @main returns the new values of parameters a
/// training step updates besides the optimizer (BatchNormalization's running
/// statistics: `trc.update` without `trc.output`) for trc-autodiff; run as
/// the model itself (evaluation) nothing is updated, so they are dropped.
void dropParameterUpdates(func::FuncOp main) {
  llvm::BitVector drop(main.getNumResults());
  for (unsigned i = 0; i < main.getNumResults(); ++i)
    if (main.getResultAttr(i, trc::abi::kUpdateAttr) &&
        !main.getResultAttr(i, trc::abi::kOutputAttr))
      drop.set(i);
  if (drop.none())
    return;
  for (Block &block : main.getBody())
    if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator()))
      ret->eraseOperands(drop);
  (void)main.eraseResults(drop);
}

/// Slot names of the training step's extra arguments and results: optimizer
/// state is an input named after its slot ("adam.m:wte.weight"), the rate
/// and step count trc.lr and trc.step (unit attributes), and each new value
/// of an argument an output "update:<that argument's name>"; trc-autodiff's
/// gradients (trc.grad_of) are outputs "grad:<parameter>".
std::string inputName(func::FuncOp main, unsigned i) {
  if (auto name = main.getArgAttrOfType<StringAttr>(i, trc::abi::kInputAttr))
    return name.str();
  if (auto state = main.getArgAttrOfType<StringAttr>(i, trc::abi::kStateAttr))
    return state.str();
  if (main.getArgAttr(i, trc::abi::kLearningRate))
    return trc::abi::kLearningRate;
  if (main.getArgAttr(i, trc::abi::kStepCount))
    return trc::abi::kStepCount;
  return "input" + std::to_string(i);
}

std::string outputName(func::FuncOp main, unsigned i) {
  if (auto name = main.getResultAttrOfType<StringAttr>(i, trc::abi::kOutputAttr))
    return name.str();
  if (auto update = main.getResultAttrOfType<StringAttr>(i, trc::abi::kUpdateAttr))
    return trc::abi::kUpdatePrefix + update.str();
  if (auto grad = main.getResultAttrOfType<StringAttr>(i, trc::abi::kGradOfAttr))
    return trc::abi::kGradPrefix + grad.str();
  return "output" + std::to_string(i);
}

/// The slot names (trc.param, trc.input, ...) have been read into the slot
/// table. LLVM IR translation has no meaning for them and warns about each
/// one, printing the whole function into every warning: for GPT-2 124M's
/// training step that was 75 s of an 86 s compile.
void dropSlotAttributes(LLVM::LLVMFuncOp fn) {
  auto keepLlvmOnly = [](DictionaryAttr attrs) {
    SmallVector<NamedAttribute> kept;
    for (NamedAttribute attr : attrs)
      if (attr.getNameDialect() && attr.getNameDialect()->getNamespace() == "llvm")
        kept.push_back(attr);
    return kept;
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    fn.setArgAttrs(i, keepLlvmOnly(fn.getArgAttrDict(i)));
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    fn.setResultAttrs(i, keepLlvmOnly(fn.getResultAttrDict(i)));
}

/// llvm.func @trc_entry(%slots: !llvm.ptr, %arena: !llvm.ptr) calling
/// @trc_step(slot 0, ..., slot S-1, arena).
void addEntry(ModuleOp module, int64_t slots) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr});
  auto entry = b.create<LLVM::LLVMFuncOp>(loc, trc::abi::kEntrySymbol, type);
  Block *block = entry.addEntryBlock(b);
  b.setInsertionPointToStart(block);
  SmallVector<Value> args;
  for (int64_t i = 0; i < slots; ++i) {
    Value at = b.create<LLVM::GEPOp>(loc, ptr, ptr, block->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    args.push_back(b.create<LLVM::LoadOp>(loc, ptr, at));
  }
  args.push_back(block->getArgument(1));
  auto step = module.lookupSymbol<LLVM::LLVMFuncOp>("trc_step");
  b.create<LLVM::CallOp>(loc, step, args);
  b.create<LLVM::ReturnOp>(loc, ValueRange{});
}
/// The constant `trc_signature`: `text` and a NUL, exported.
void addSignature(ModuleOp module, llvm::StringRef text) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  std::string bytes = text.str();
  bytes.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  b.create<LLVM::GlobalOp>(module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::External,
                           trc::abi::kSignatureSymbol, b.getStringAttr(bytes));
}
} // namespace

std::string describeMemoryPlan(const MemoryPlanSummary &m) {
  auto ratio = [&](int64_t over) {
    return llvm::formatv("{0:F3}", over ? double(m.arenaBytes) / double(over) : 1.0).str();
  };
  std::string text = "memory: arena " + std::to_string(m.arenaBytes) + " bytes, lower bound " +
                     std::to_string(m.lowerBoundBytes) + " (arena/bound " +
                     ratio(m.lowerBoundBytes) + "), no reuse " + std::to_string(m.noReuseBytes) +
                     " (arena/no-reuse " + ratio(m.noReuseBytes) + ")";
  if (m.hostArenaBytes > 0)
    text += ", host arena " + std::to_string(m.hostArenaBytes) + " bytes";
  if (!m.program.empty())
    text += " for " + m.program;
  return text;
}

LogicalResult compileToArtifact(ModuleOp module, const CompileOptions &options,
                                llvm::StringRef outPath, llvm::raw_ostream &log,
                                TimingScope *timing, CompileReport *report) {
  // Untimed callers time into a scope that records nothing.
  TimingScope untimed;
  TimingScope &root = timing ? *timing : untimed;
  auto fail = [&](const llvm::Twine &message) {
    log << "error: " << outPath << ": " << message << "\n";
    return failure();
  };
  // A step split into pipeline stages is a folder of stage programs.
  if (options.entry == "main" && isPipelineModule(module))
    return compilePipelineArtifact(module, options, outPath, log, report);
  bool cuda = options.target == "cuda";
  if (options.target != "cpu" && !cuda)
    return fail("unknown target '" + options.target + "' (expected cpu or cuda)");
  if (cuda && options.emulateCuda)
    return fail("emulate=cuda runs the CUDA kernels on the CPU: it needs target=cpu");

  PassManager prepare(module.getContext());
  TimingScope prepareTiming = root.nest("prepare");
  prepare.enableTiming(prepareTiming);
  prepare.addPass(createParametersToArguments());
  if (failed(prepare.run(module)))
    return failure();
  if (options.entry != "main" && failed(selectEntry(module, options.entry, prepareTiming)))
    return fail("there is no function @" + options.entry + " to compile");
  prepareTiming.stop();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (options.entry == "main")
    dropParameterUpdates(main);

  // The slot table, read before lowering erases the names.
  ArtifactContents contents;
  contents.target = options.target;
  std::vector<std::vector<char>> expanded(main.getNumArguments());
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    ArtifactSlot slot;
    slot.type = cast<RankedTensorType>(main.getArgument(i).getType());
    if (auto name = main.getArgAttrOfType<StringAttr>(i, trc::abi::kParamAttr)) {
      auto param = module.lookupSymbol<ParameterOp>(name);
      if (!param.getInitialValueAttr())
        return fail("parameter '" + name.getValue() + "' has no initial value");
      slot.kind = ArtifactSlot::Kind::Param;
      slot.name = name.str();
      slot.trainable = param.isTrainable();
      slot.initialBytes = initialBytes(param.getInitialValueAttr(), expanded[i]);
      // weights=init: a trainable parameter becomes the recipe its values
      // follow (docs/ARTIFACT.md); its bytes stay out of weights.bin.
      if (options.weights == "init" && slot.trainable) {
        rt::DType dtype;
        rt::Initializer init;
        auto elementType = param.getInitialValueAttr().getShapedType().getElementType();
        int64_t count = param.getInitialValueAttr().getShapedType().getNumElements();
        if (rt::parseDType(manifestDType(elementType), dtype) && rt::isInitializable(dtype) &&
            slot.initialBytes.size() == size_t(count) * rt::dtypeSize(dtype) &&
            rt::deriveInitializer(dtype, slot.initialBytes.data(), uint64_t(count),
                                  rt::parameterSeed(options.seed, slot.name), init)) {
          slot.init = init;
          slot.initialBytes = {};
        } else {
          log << "note: " << outPath << ": parameter '" << slot.name
              << "' keeps its values in weights.bin (no initializer describes them)\n";
        }
      }
    } else {
      slot.kind = ArtifactSlot::Kind::Input;
      slot.name = inputName(main, i);
      LabelBound labels;
      slot.indexBound = indexBoundOf(main, i, labels);
      slot.labelClasses = labels.classes;
      slot.labelIgnore = labels.ignore;
    }
    // Tensor-parallel parts (trc-partition) carry how the logical tensor is
    // split (dim, blocks, degree) and its shape; a split param's initial
    // value is the logical tensor (weights.bin holds it whole).
    if (auto split = main.getArgAttrOfType<DenseI64ArrayAttr>(i, trc::abi::kSplitAttr)) {
      auto full = main.getArgAttrOfType<DenseI64ArrayAttr>(i, trc::abi::kSplitOfAttr);
      if (!full || split.asArrayRef().size() != 4)
        return fail("argument " + llvm::Twine(i) +
                    ": trc.split needs [dim, blocks, degree, mirrored] and trc.split_of");
      slot.splitDim = split.asArrayRef()[0];
      slot.splitBlocks = split.asArrayRef()[1];
      slot.splitDegree = split.asArrayRef()[2];
      slot.splitMirrored = split.asArrayRef()[3] != 0;
      slot.splitShape.assign(full.asArrayRef().begin(), full.asArrayRef().end());
      std::vector<int64_t> logical(slot.splitShape.begin(), slot.splitShape.end());
      if (rt::Status s = rt::checkSplit(
              logical, rt::TensorSplit{slot.splitDim, slot.splitBlocks, slot.splitDegree,
                                       slot.splitMirrored});
          !s)
        return fail("argument " + llvm::Twine(i) + ": trc.split: " + s.message());
      if (auto name = main.getArgAttrOfType<StringAttr>(i, trc::abi::kParamAttr)) {
        auto initial = module.lookupSymbol<ParameterOp>(name).getInitialValueAttr();
        if (initial.getShapedType().getShape() != llvm::ArrayRef<int64_t>(logical))
          return fail("parameter '" + name.getValue() +
                      "' is split but its initial value is not the logical tensor "
                      "(trc.split_of)");
      }
    }
    // Shards (trc-data-parallel) carry the full tensor's shape (a split
    // slot's: its tensor rank's part).
    if (auto degree = main.getArgAttrOfType<IntegerAttr>(i, trc::abi::kShardDegreeAttr)) {
      auto full = main.getArgAttrOfType<DenseI64ArrayAttr>(i, trc::abi::kShardOfAttr);
      if (!full)
        return fail("argument " + llvm::Twine(i) + " is a shard without trc.shard_of");
      slot.shardDegree = degree.getInt();
      slot.fullShape.assign(full.asArrayRef().begin(), full.asArrayRef().end());
    }
    contents.slots.push_back(slot);
  }
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    ArtifactSlot slot;
    slot.kind = ArtifactSlot::Kind::Output;
    slot.type = cast<RankedTensorType>(main.getResultTypes()[i]);
    slot.name = outputName(main, i);
    contents.slots.push_back(slot);
  }
  for (const auto &slot : contents.slots)
    if (manifestDType(slot.type.getElementType()).empty())
      return fail("slot '" + slot.name + "' has an element type the artifact cannot hold");

  // Lower. The parameter symbols are no longer read (their bytes are kept
  // alive by the module's resource blobs until the weights are written).
  ArtifactWriter writer(outPath);
  std::string error;
  std::string stage = writer.stage(error);
  if (stage.empty())
    return fail(error);
  flattenEmptyBoundaryTensors(main);
  SmallVector<Operation *> params;
  for (auto p : module.getOps<ParameterOp>())
    params.push_back(p);
  PassManager lower(module.getContext());
  TimingScope lowerTiming = root.nest("lower");
  lower.enableTiming(lowerTiming);
  // trc-opt's --mlir-print-ir-* options reach the lowering; where they are
  // not registered (trc-run, unit tests) this fails and changes nothing.
  (void)applyPassManagerCLOptions(lower);
  if (cuda)
    buildCudaLoweringPipeline(lower, options.attentionKernels);
  else if (options.emulateCuda)
    buildCudaEmulationPipeline(lower, options.attentionKernels);
  else
    buildCpuLoweringPipeline(lower);
  if (failed(lower.run(module))) {
    if (report)
      module.walk([&](func::FuncOp f) { report->unsupported |= f->hasAttr(trc::abi::kUnsupportedAttr); });
    return fail(cuda ? "lowering to the CUDA backend failed"
                     : "lowering to the CPU backend failed");
  }
  lowerTiming.stop();
  // CUDA: the kernels' PTX -> cubins next to the program, kernel table.
  if (cuda) {
    TimingScope kernelTiming = root.nest("kernel binaries (ptxas)");
    if (failed(emitCudaKernels(module, stage, contents.records, error)))
      return fail(error);
  }
  auto arena = module->getAttrOfType<IntegerAttr>(trc::abi::kArenaBytesAttr);
  auto bound = module->getAttrOfType<IntegerAttr>(trc::abi::kArenaLowerBoundBytesAttr);
  auto noReuse = module->getAttrOfType<IntegerAttr>(trc::abi::kArenaNoReuseBytesAttr);
  auto hostArena = module->getAttrOfType<IntegerAttr>(kHostArenaBytesAttr);
  contents.arenaBytes = arena ? arena.getInt() : 0;
  contents.hostArenaBytes = hostArena ? hostArena.getInt() : 0;
  if (arena && bound && noReuse) {
    MemoryPlanSummary memory{arena.getInt(), bound.getInt(), noReuse.getInt(),
                             contents.hostArenaBytes, options.program};
    log << describeMemoryPlan(memory) << "\n";
    if (report)
      report->programs.push_back(memory);
  }

  // trc-profile-calls' spans and trc-detect-anomaly's sites: the
  // manifest's `span` and `site` records.
  for (auto [attr, keyword] : {std::pair{trc::abi::kProfileSpansAttr, "span"},
                               std::pair{trc::abi::kAnomalySitesAttr, "site"}})
    if (auto rows = module->getAttrOfType<ArrayAttr>(attr))
      for (auto [id, row] : llvm::enumerate(rows)) {
        std::string record = std::string(keyword) + " " + std::to_string(id);
        for (Attribute field : cast<ArrayAttr>(row)) {
          llvm::StringRef text = cast<StringAttr>(field).getValue();
          record += " " + (text.empty() ? std::string("-")
                           : text == "-" ? std::string("%2D")
                                         : rt::percentEncode(text));
        }
        contents.records.push_back(record);
      }

  auto step = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
  if (!step)
    return fail("the lowered module has no @main");
  step.setSymName("trc_step");
  dropSlotAttributes(step);
  addEntry(module, static_cast<int64_t>(contents.slots.size()));
  // Translation must not see trc ops: take the weights' bytes out first.
  std::vector<std::vector<char>> weightCopies;
  weightCopies.reserve(contents.slots.size());
  for (auto &slot : contents.slots)
    if (slot.kind == ArtifactSlot::Kind::Param) {
      weightCopies.emplace_back(slot.initialBytes.begin(), slot.initialBytes.end());
      slot.initialBytes = weightCopies.back();
    }
  for (Operation *p : params)
    p->erase();
  // What the program is compiled for, exported beside its entry so the
  // loader can refuse a manifest that says otherwise.
  std::string signature;
  if (!ArtifactWriter::signature(contents, signature, error))
    return fail(error);
  addSignature(module, signature);

  {
    TimingScope objectTiming = root.nest("host object (LLVM codegen, link)");
    if (failed(emitSharedObject(module, options, stage + "/" + trc::abi::kProgramFile, error, objectTiming)))
      return fail(error);
  }
  TimingScope writeTiming = root.nest("write artifact");
  if (!writer.finish(contents, error))
    return fail(error);
  return success();
}

} // namespace trc
