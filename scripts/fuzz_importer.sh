#!/usr/bin/env bash
# scripts/fuzz_importer.sh — fuzzes the ONNX importer with libFuzzer + ASan + UBSan.
#
#   scripts/fuzz_importer.sh [SECONDS]        (default 300)
#
# 1. configures and builds build-fuzz/ (clang-22, -DTRC_ENABLE_FUZZER=ON,
#    RelWithDebInfo) and only its trc-import-fuzzer target, niced and -j1;
# 2. builds a seed corpus in a temporary folder: the GPT-2 exports of
#    scripts/export_models.py (opset 13, as users export them), shrunk GPT-2 /
#    BERT / GPT-J exports that fit in -max_len, single-node models made with
#    onnx.helper, and ~50 node tests from /usr/share/libonnx-testdata;
# 3. runs the fuzzer for SECONDS with one job and prints the final stats line.
#
# Crash/leak/timeout/OOM inputs land in $WORK/artifacts/ (WORK is printed; set
# FUZZ_WORK=DIR to choose it). FUZZ_MAX_LEN=N caps the input size (default
# 65536, which keeps the shrunk model seeds whole; 4096 runs ~15x more
# executions per second on the small graphs the mutations mostly make). Reproduce one with
#   build-fuzz/tools/trc-import-fuzzer/trc-import-fuzzer FILE
# Preconditions: scripts/setup.sh has run (clang-22, libclang-rt-22-dev, .venv
# with onnx and torch, libonnx-testdata).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_TO_RUN=${1:-300}
MAX_LEN=${FUZZ_MAX_LEN:-65536}
PY=$ROOT/.venv/bin/python
FUZZER=$ROOT/build-fuzz/tools/trc-import-fuzzer/trc-import-fuzzer

# --- 1. build ---------------------------------------------------------------
CC=clang-22 CXX=clang++-22 nice -n 10 cmake -G Ninja -S "$ROOT" -B "$ROOT/build-fuzz" \
  -DTRC_ENABLE_FUZZER=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! nice -n 10 ninja -C "$ROOT/build-fuzz" -j1 trc-import-fuzzer \
    >"$ROOT/build-fuzz/fuzzer-build.log" 2>&1; then
  cat "$ROOT/build-fuzz/fuzzer-build.log" >&2
  exit 1
fi

# --- 2. seed corpus ---------------------------------------------------------
WORK=${FUZZ_WORK:-$(mktemp -d /tmp/trc-fuzz.XXXXXX)}
SEEDS=$WORK/seeds
CORPUS=$WORK/corpus
mkdir -p "$SEEDS" "$CORPUS" "$WORK/artifacts"
echo "fuzz work folder: $WORK"

if [ ! -f "$SEEDS/.done" ]; then
  nice -n 10 "$PY" "$ROOT/scripts/export_models.py" --out "$WORK/export" \
    --models gpt2 --opsets 13 >/dev/null
  cp "$WORK"/export/*.onnx "$SEEDS/"

  nice -n 10 "$PY" - "$ROOT/scripts" "$SEEDS" <<'PYEOF'
import os, sys, warnings
warnings.filterwarnings("ignore")
scripts, out = sys.argv[1], sys.argv[2]
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Shrunk versions of the exported models: the same graphs, few KiB of weights.
sys.path.insert(0, scripts)
import export_models as em
em.VOCAB, em.CONTEXT, em.WIDTH, em.HEADS, em.LAYERS = 32, 16, 16, 2, 1
for name in ("gpt2", "bert", "gptj"):
    for opset in (13, 17):
        for dynamic in (False, True):
            path = os.path.join(out, f"small_{name}_op{opset}{'_dyn' if dynamic else ''}.onnx")
            em.export(em.build(name), path, opset, dynamic)

F, I64 = TensorProto.FLOAT, TensorProto.INT64

def save(name, nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, f"node_{name}.onnx"))

def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)

def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

save("matmul", [helper.make_node("MatMul", ["a", "b"], ["y"])],
     [vi("a", F, [2, 3, 4]), vi("b", F, [4, 5])], [vi("y", F, [2, 3, 5])])
save("reshape", [helper.make_node("Reshape", ["x", "s"], ["y"])],
     [vi("x", F, [2, 3, 4])], [vi("y", F, [6, 4])], [i64("s", [-1, 4])])
save("slice", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
     [vi("x", F, [4, 8])], [vi("y", F, [4, 3])],
     [i64("st", [1]), i64("en", [-1]), i64("ax", [1]), i64("sp", [2])])
save("gather", [helper.make_node("Gather", ["w", "ids"], ["y"], axis=0)],
     [vi("ids", I64, [2, 3])], [vi("y", F, [2, 3, 4])],
     [numpy_helper.from_array(np.ones((10, 4), np.float32), "w")])
save("softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
     [vi("x", F, [2, 5])], [vi("y", F, [2, 5])])
save("einsum", [helper.make_node("Einsum", ["q", "k"], ["y"], equation="bqhd,bkhd->bhqk")],
     [vi("q", F, [1, 3, 2, 4]), vi("k", F, [1, 3, 2, 4])], [vi("y", F, [1, 2, 3, 3])])
save("layernorm", [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"],
                                    axis=-1, epsilon=1e-5)],
     [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])],
     [numpy_helper.from_array(np.ones(4, np.float32), "g"),
      numpy_helper.from_array(np.zeros(4, np.float32), "b")], opset=17)
save("sce_loss", [helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"],
                                   reduction="mean", ignore_index=-100)],
     [vi("logits", F, [6, 10]), vi("labels", I64, [6])], [vi("loss", F, [])])
PYEOF

  # ~50 ONNX node tests of ops the importer handles (plus a few it rejects).
  # Integer inputs (shapes, axes, repeats) become initializers holding the
  # test's values, since the importer needs those constant.
  NODE_TESTS=(matmul_2d matmul_4d gemm_all_attributes gemm_transposeA
    einsum_batch_matmul einsum_transpose einsum_sum layer_normalization_3d_axis1_epsilon
    layer_normalization_4d_axis_negative_1 softmax_axis_1 softmax_negative_axis
    logsoftmax_axis_0 reshape_negative_dim reshape_allowzero_reordered reshape_reduced_dims
    transpose_all_permutations_3 slice slice_neg_steps slice_default_axes slice_end_out_of_bounds
    concat_3d_axis_negative_2 split_equal_parts_2d split_variable_parts_1d_opset18
    squeeze_negative_axes unsqueeze_unsorted_axes unsqueeze_negative_axes expand_dim_changed
    tile tile_precomputed flatten_negative_axis1 gather_2d_indices gather_negative_indices
    trilu_lower trilu_upper_zero reduce_sum_keepdims_random reduce_mean_do_not_keepdims_example
    reduce_max_negative_axes_keepdims_example where_long_example clip_splitbounds
    cast_FLOAT_to_DOUBLE range_int32_type_negative_delta range_float_type_positive_delta_expanded
    constantofshape_int_zeros shape_start_negative_1 size_example
    sce_mean_weight_ii sce_NCd1_mean_weight_negative_ii nllloss_NCd1d2_with_weight_reduction_mean
    dropout_default_mask gelu_tanh_2 pow_bcast_array erf less_equal_bcast
    layer_normalization_2d_axis0_expanded softmax_axis_0_expanded conv_with_strides_padding
    lstm_defaults)
  nice -n 10 "$PY" - "$SEEDS" /usr/share/libonnx-testdata/data/node "${NODE_TESTS[@]}" <<'PYEOF'
import glob, os, sys
import onnx
from onnx import TensorProto
out, root, tests = sys.argv[1], sys.argv[2], sys.argv[3:]
INTS = (TensorProto.INT64, TensorProto.INT32)
for t in tests:
    folder = os.path.join(root, "test_" + t)
    if not os.path.isfile(os.path.join(folder, "model.onnx")):
        continue
    model = onnx.load(os.path.join(folder, "model.onnx"))
    values = {}
    pbs = sorted(glob.glob(os.path.join(folder, "test_data_set_0", "input_*.pb")))
    for i, pb in enumerate(pbs):
        tensor = onnx.TensorProto()
        with open(pb, "rb") as f:
            tensor.ParseFromString(f.read())
        if i < len(model.graph.input):
            values[model.graph.input[i].name] = tensor
    keep = []
    for vi in model.graph.input:
        tensor = values.get(vi.name)
        if tensor is not None and vi.type.tensor_type.elem_type in INTS:
            tensor.name = vi.name
            model.graph.initializer.append(tensor)
        else:
            keep.append(vi)
    del model.graph.input[:]
    model.graph.input.extend(keep)
    onnx.save(model, os.path.join(out, "test_" + t + ".onnx"))
PYEOF
  touch "$SEEDS/.done"
fi
echo "seeds: $(ls "$SEEDS" | wc -l) files"

# --- 3. fuzz ----------------------------------------------------------------
# The fuzzer runs inside $WORK, so it could not read anything of the checkout
# even if it tried (external data is refused anyway).
cd "$WORK"
set +e
nice -n 10 "$FUZZER" "$CORPUS" "$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" -rss_limit_mb=4096 -timeout=20 \
  -jobs=1 -workers=1 -print_final_stats=1 -artifact_prefix="$WORK/artifacts/" \
  >"$WORK/fuzz.log" 2>&1
rc=$?
set -e
# With -jobs the output goes to fuzz-0.log in the current folder.
LOG=$WORK/fuzz-0.log
[ -f "$LOG" ] || LOG=$WORK/fuzz.log
grep -E '^#[0-9]+' "$LOG" | tail -1 || true
grep -E '^stat::' "$LOG" || true
echo "fuzzer exit status $rc; log: $LOG; artifacts: $(ls "$WORK/artifacts" | wc -l) in $WORK/artifacts"
exit $rc
