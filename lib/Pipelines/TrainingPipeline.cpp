//===- TrainingPipeline.cpp - the forward graph to @train_step -------------===//
//
// buildTrainingPipeline (see TrainingPipeline.h) and its trc-opt
// registration: the command-line options below spell each pass's options
// with the same names as the passes themselves, and fill the same typed
// struct trc-run fills.
//
//===----------------------------------------------------------------------===//
#include "trc/Pipelines/TrainingPipeline.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

namespace trc {

bool setLossAndPrecision(TrainingPipelineOptions &o, llvm::StringRef loss, int64_t ignoreIndex,
                         llvm::StringRef precision, std::string &problem) {
  if (loss == "cross_entropy") {
    AppendLossOptions append;
    append.ignoreIndex = ignoreIndex;
    o.loss = append;
  } else if (loss != "none") {
    problem = "loss expects none or cross_entropy, got '" + loss.str() + "'";
    return false;
  }
  if (precision == "bf16" || precision == "fp16") {
    MixedPrecisionOptions mp;
    mp.type = precision == "bf16" ? "bf16" : "f16";
    mp.lossScale = precision == "fp16"; // f16's range needs dynamic loss scaling
    o.mixedPrecision = mp;
  } else if (precision != "fp32") {
    problem = "precision expects fp32, bf16 or fp16, got '" + precision.str() + "'";
    return false;
  }
  return true;
}

void buildTrainingPipeline(mlir::OpPassManager &pm, const TrainingPipelineOptions &o) {
  if (o.loss)
    pm.addPass(createAppendLoss(*o.loss));
  pm.addPass(createParametersToArguments());
  pm.addPass(createLowerDropout());
  // The ring (trc-ring-attention) is of fused attention.
  if (o.fuseAttention || (o.contextParallel && o.ringAttention))
    pm.addNestedPass<mlir::func::FuncOp>(createFuseAttention());
  if (o.mixedPrecision)
    pm.addPass(createMixedPrecision(*o.mixedPrecision));
  if (o.pipeline)
    pm.addPass(createPipelineStages(*o.pipeline));
  pm.addPass(createAutodiff(o.autodiff));
  if (o.recompute)
    pm.addPass(createRecompute(*o.recompute));
  if (o.offload)
    pm.addPass(createOffloadActivations(*o.offload));
  bool tensor = o.tensorParallel && o.tensorParallel->degree > 1;
  bool context = o.contextParallel && o.contextParallel->degree > 1;
  if (tensor)
    pm.addPass(createShardTensorParallel(*o.tensorParallel));
  if (context)
    pm.addPass(createShardContextParallel(*o.contextParallel));
  if (tensor || context)
    pm.addPass(createPartition());
  if (context && o.ringAttention)
    pm.addPass(createRingAttention());
  if (o.stopAtGradients)
    return;
  if (o.dataParallel)
    pm.addPass(createDataParallel(*o.dataParallel));
  if (o.pipeline)
    pm.addPass(createPipelineSplit(o.pipelineSplit));
  pm.addPass(createBuildTrainStep(o.trainStep));
  if (o.detectAnomaly)
    pm.addPass(createDetectAnomaly());
}

namespace {

/// trc-opt's spelling of TrainingPipelineOptions; the defaults are the
/// passes' own (their generated option structs).
struct TrainingPipelineCliOptions : public mlir::PassPipelineOptions<TrainingPipelineCliOptions> {
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("none (the model outputs its loss) or cross_entropy"),
                           llvm::cl::init("none")};
  Option<int64_t> ignoreIndex{*this, "ignore-index",
                              llvm::cl::desc("cross_entropy: targets equal to it count nothing"),
                              llvm::cl::init(AppendLossOptions().ignoreIndex)};
  Option<bool> fuseAttention{*this, "fuse-attention",
                             llvm::cl::desc("fuse attention before autodiff"),
                             llvm::cl::init(false)};
  Option<std::string> precision{*this, "precision", llvm::cl::desc("fp32, bf16 or fp16"),
                                llvm::cl::init("fp32")};
  Option<bool> recomputeStatistics{
      *this, "recompute-statistics",
      llvm::cl::desc("trc-autodiff's recompute-statistics (layer norm gradients)"),
      llvm::cl::init(AutodiffOptions().recomputeStatistics)};
  Option<std::string> recompute{*this, "recompute",
                                llvm::cl::desc("trc-recompute's policy: none, selective, full, "
                                               "budget"),
                                llvm::cl::init(RecomputeOptions().policy)};
  Option<int64_t> memoryBudget{*this, "memory-budget",
                               llvm::cl::desc("trc-recompute's budget (policy budget), bytes"),
                               llvm::cl::init(RecomputeOptions().budget)};
  Option<bool> offload{*this, "offload",
                       llvm::cl::desc("offload kept activations to host memory "
                                      "(trc-offload-activations)"),
                       llvm::cl::init(false)};
  Option<int64_t> horizon{*this, "horizon",
                          llvm::cl::desc("trc-offload-activations' horizon: layers ahead of "
                                         "its backward an activation is prefetched"),
                          llvm::cl::init(OffloadActivationsOptions().horizon)};
  Option<int64_t> offloadMinBytes{*this, "offload-min-bytes",
                                  llvm::cl::desc("trc-offload-activations' min-bytes"),
                                  llvm::cl::init(OffloadActivationsOptions().minBytes)};
  Option<int64_t> tensorDegree{*this, "tensor-degree",
                               llvm::cl::desc("tensor-parallel ranks (trc-shard-tensor-parallel)"),
                               llvm::cl::init(ShardTensorParallelOptions().degree)};
  Option<bool> sequenceParallel{*this, "sequence-parallel",
                                 llvm::cl::desc("with tensor-degree: Megatron's sequence parallelism"),
                                 llvm::cl::init(ShardTensorParallelOptions().sequenceParallel)};
  Option<int64_t> contextDegree{*this, "context-degree",
                                llvm::cl::desc("context-parallel ranks (trc-shard-context-parallel)"),
                                llvm::cl::init(ShardContextParallelOptions().degree)};
  Option<std::string> contextComm{*this, "context-comm",
                                  llvm::cl::desc("with context-degree: all_gather (keys and values "
                                                 "gathered) or p2p (the ring, trc-ring-attention; "
                                                 "fuses attention)"),
                                  llvm::cl::init("all_gather")};
  Option<bool> contextBalance{*this, "context-balance",
                              llvm::cl::desc("with context-degree: sequences split head-tail "
                                             "(causal load balancing; the ring skips hidden "
                                             "blocks)"),
                              llvm::cl::init(ShardContextParallelOptions().balance)};
  Option<int64_t> pipelineStages{*this, "pipeline-stages",
                                 llvm::cl::desc("pipeline ranks (trc-pipeline-stages); 1: none"),
                                 llvm::cl::init(1)};
  Option<int64_t> pipelineVirtual{*this, "pipeline-virtual",
                                  llvm::cl::desc("model chunks per pipeline rank"),
                                  llvm::cl::init(1)};
  Option<std::string> pipelineBalance{*this, "pipeline-balance",
                                      llvm::cl::desc("cost, layers or pieces"),
                                      llvm::cl::init("cost")};
  Option<int64_t> pipelineShardDegree{
      *this, "pipeline-shard-degree",
      llvm::cl::desc("with pipeline-stages: ZeRO-1 over each stage's data ranks "
                     "(trc-pipeline-split's shard-degree)"),
      llvm::cl::init(PipelineSplitOptions().shardDegree)};
  Option<int64_t> pipelineZeroStage{
      *this, "pipeline-zero-stage",
      llvm::cl::desc("with pipeline-shard-degree: 1 shards the optimizer state, 2 the "
                     "gradient accumulators as well, 3 the parameters too "
                     "(trc-pipeline-split's zero-stage)"),
      llvm::cl::init(PipelineSplitOptions().zeroStage)};
  Option<bool> dataParallel{*this, "data-parallel",
                            llvm::cl::desc("average gradients over the ranks (trc-data-parallel)"),
                            llvm::cl::init(false)};
  Option<int64_t> zeroStage{*this, "zero-stage", llvm::cl::desc("trc-data-parallel's zero-stage"),
                            llvm::cl::init(DataParallelOptions().zeroStage)};
  Option<int64_t> shardDegree{*this, "shard-degree",
                              llvm::cl::desc("trc-data-parallel's shard-degree"),
                              llvm::cl::init(DataParallelOptions().shardDegree)};
  Option<double> bucketMb{*this, "bucket-mb", llvm::cl::desc("trc-data-parallel's bucket-mb"),
                          llvm::cl::init(DataParallelOptions().bucketMb)};
  Option<bool> hybrid{*this, "hybrid", llvm::cl::desc("trc-data-parallel's hybrid"),
                      llvm::cl::init(DataParallelOptions().hybrid)};
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::desc("adamw, adam or sgd"),
                                llvm::cl::init(BuildTrainStepOptions().optimizer)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("decoupled (adamw) or L2 weight decay; -1: default"),
                             llvm::cl::init(BuildTrainStepOptions().weightDecay)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(BuildTrainStepOptions().momentum)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(BuildTrainStepOptions().nesterov)};
  Option<double> clipNorm{*this, "clip-norm",
                          llvm::cl::desc("clip the global gradient norm (0: off)"),
                          llvm::cl::init(BuildTrainStepOptions().clipNorm)};
  Option<bool> accumulate{*this, "accumulate", llvm::cl::desc("gradient accumulation buffers"),
                          llvm::cl::init(BuildTrainStepOptions().accumulate)};
  Option<bool> detectAnomaly{*this, "detect-anomaly",
                             llvm::cl::desc("check every float value for NaN/inf "
                                            "(trc-detect-anomaly)"),
                             llvm::cl::init(false)};
  Option<bool> stopAtGradients{*this, "stop-at-gradients",
                               llvm::cl::desc("end at @main_grad, stages tagged, not split "
                                              "(trc-print-stage-work)"),
                               llvm::cl::init(false)};
};

/// The typed options of the command line; false (with `problem`) on a
/// value no pass accepts.
bool toTypedOptions(const TrainingPipelineCliOptions &cli, TrainingPipelineOptions &o,
                    std::string &problem) {
  if (!setLossAndPrecision(o, cli.loss, cli.ignoreIndex, cli.precision, problem))
    return false;
  o.fuseAttention = cli.fuseAttention;
  o.autodiff.recomputeStatistics = cli.recomputeStatistics;
  {
    // Always run: policy none changes nothing and records its estimate
    // (test-trc-print-recompute prints every policy alike).
    RecomputeOptions recompute;
    recompute.policy = cli.recompute;
    recompute.budget = cli.memoryBudget;
    o.recompute = recompute;
  }
  if (cli.offload) {
    if (cli.horizon < 0 || cli.offloadMinBytes < 0) {
      problem = "horizon and offload-min-bytes must not be negative";
      return false;
    }
    OffloadActivationsOptions offload;
    offload.horizon = cli.horizon;
    offload.minBytes = cli.offloadMinBytes;
    o.offload = offload;
  }
  if (cli.tensorDegree < 1) {
    problem = "tensor-degree must be at least 1, got " + std::to_string(cli.tensorDegree);
    return false;
  }
  if (cli.tensorDegree > 1) {
    ShardTensorParallelOptions tp;
    tp.degree = cli.tensorDegree;
    tp.sequenceParallel = cli.sequenceParallel;
    o.tensorParallel = tp;
  }
  if (cli.contextDegree < 1) {
    problem = "context-degree must be at least 1, got " + std::to_string(cli.contextDegree);
    return false;
  }
  if (cli.contextComm != "all_gather" && cli.contextComm != "p2p") {
    problem = "context-comm expects all_gather or p2p, got '" + cli.contextComm + "'";
    return false;
  }
  if (cli.contextDegree > 1) {
    ShardContextParallelOptions cp;
    cp.degree = cli.contextDegree;
    cp.balance = cli.contextBalance;
    o.contextParallel = cp;
    o.ringAttention = cli.contextComm == "p2p";
  }
  if (cli.pipelineStages < 1 || cli.pipelineVirtual < 1) {
    problem = "pipeline-stages and pipeline-virtual must be at least 1";
    return false;
  }
  if (cli.pipelineStages * cli.pipelineVirtual > 1) {
    if (cli.dataParallel) {
      problem = "pipeline-stages does not combine with data-parallel in one compiled step "
                "(trc-run averages each stage's gradients over its data ranks)";
      return false;
    }
    if (cli.offload) {
      problem = "offload does not combine with pipeline-stages (trc-run's pipeline executor "
                "offloads the stages' stashes)";
      return false;
    }
    if (cli.detectAnomaly) {
      problem = "detect-anomaly does not combine with pipeline-stages yet";
      return false;
    }
    PipelineStagesOptions pp;
    pp.stages = cli.pipelineStages;
    pp.virtualStages = cli.pipelineVirtual;
    pp.balance = cli.pipelineBalance;
    o.pipeline = pp;
    o.pipelineSplit.shardDegree = cli.pipelineShardDegree;
    o.pipelineSplit.zeroStage = cli.pipelineZeroStage;
  }
  if (cli.pipelineShardDegree < 1 ||
      (cli.pipelineShardDegree > 1 && cli.pipelineStages * cli.pipelineVirtual == 1)) {
    problem = "pipeline-shard-degree is at least 1, and above 1 only with pipeline-stages";
    return false;
  }
  if (cli.dataParallel) {
    DataParallelOptions dp;
    dp.zeroStage = cli.zeroStage;
    dp.shardDegree = cli.shardDegree;
    dp.bucketMb = cli.bucketMb;
    dp.hybrid = cli.hybrid;
    o.dataParallel = dp;
  }
  o.trainStep.optimizer = cli.optimizer;
  o.trainStep.weightDecay = cli.weightDecay;
  o.trainStep.momentum = cli.momentum;
  o.trainStep.nesterov = cli.nesterov;
  o.trainStep.clipNorm = cli.clipNorm;
  o.trainStep.accumulate = cli.accumulate;
  o.detectAnomaly = cli.detectAnomaly;
  o.stopAtGradients = cli.stopAtGradients;
  return true;
}

} // namespace

void registerTrainingPipeline() {
  // registerPassPipeline rather than PassPipelineRegistration: a value no
  // pass accepts must fail the pipeline's parsing with its diagnostic.
  mlir::registerPassPipeline(
      "trc-training-pipeline",
      "the imported forward graph to @train_step: loss, mixed precision, autodiff, "
      "recomputation, offloading, tensor/data/pipeline parallelism, optimizer (the pipeline "
      "trc-run compiles)",
      [](mlir::OpPassManager &pm, llvm::StringRef text,
         llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler) {
        TrainingPipelineCliOptions cli;
        if (mlir::failed(cli.parseFromString(text)))
          return mlir::failure();
        TrainingPipelineOptions options;
        std::string problem;
        if (!toTypedOptions(cli, options, problem))
          return errorHandler("--trc-training-pipeline: " + problem);
        buildTrainingPipeline(pm, options);
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(TrainingPipelineCliOptions());
      });
}

} // namespace trc
