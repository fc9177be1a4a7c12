// trc-collectives-to-runtime-call: each collective reads a read-only buffer
// of its operand and writes a fresh one through the runtime's entry, with
// include/trc/Abi/CollectiveAbi.h's codes (groups world 0 / shard 1 / replica 2,
// reductions sum 0 / avg 1 / max 2 / min 3, dtype f32 0, bf16 3).
// RUN: trc-opt %s --trc-collectives-to-runtime-call | FileCheck %s
// RUN: trc-opt %s --trc-collectives-to-runtime-call --trc-cpu-lowering | FileCheck %s --check-prefix=LLVM

// CHECK-DAG: func.func private @trc_rt_all_reduce(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @trc_rt_reduce_scatter(i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @trc_rt_all_gather(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @trc_rt_broadcast(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @trc_rt_shard_slice(i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @main
// CHECK: %[[IN:.*]] = bufferization.to_buffer %arg0 read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: call @trc_rt_all_reduce(%c0_i64{{.*}}, %c0_i64{{.*}}, %c1_i64{{.*}}, %c32_i64
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: call @trc_rt_reduce_scatter(%c1_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %c4_i64{{.*}}, %c8_i64
// CHECK: call @trc_rt_all_gather(%c1_i64{{.*}}, %c0_i64{{.*}}, %c4_i64{{.*}}, %c8_i64
// CHECK: call @trc_rt_broadcast(%c0_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}}, %c32_i64
// CHECK: call @trc_rt_shard_slice(%c1_i64{{.*}}, %c0_i64{{.*}}, %c4_i64{{.*}}, %c8_i64
// CHECK: call @trc_rt_all_reduce(%c2_i64{{.*}}, %c3_i64{{.*}}, %c2_i64{{.*}}, %c8_i64
// CHECK-NOT: trc.all_reduce
// LLVM-LABEL: llvm.func @main
// LLVM-COUNT-6: llvm.call @trc_rt_

// With overlap, all-reduce, reduce-scatter and all-gather are started with
// tickets 0, 1, 2 (the last all-reduce 3) and finished right before their
// results' first use: the reduce-scatter's by the all-gather, the
// all-reduces' by the return; the finish reads the operand through a second
// view (kept apart from the start's by trc.finish_view). Broadcast and
// shard slice stay blocking. The CPU pipeline bufferizes and plans it.
// RUN: trc-opt %s --trc-collectives-to-runtime-call="overlap=1" | FileCheck %s --check-prefix=OVERLAP
// RUN: trc-opt %s --trc-collectives-to-runtime-call="overlap=1" --trc-cpu-lowering | FileCheck %s --check-prefix=LLVM-OVERLAP
// OVERLAP-DAG: func.func private @trc_rt_all_reduce_start(i64, i64, i64, i64, i64, i64, i64)
// OVERLAP-DAG: func.func private @trc_rt_reduce_scatter_start(i64, i64, i64, i64, i64, i64, i64, i64)
// OVERLAP-DAG: func.func private @trc_rt_all_gather_start(i64, i64, i64, i64, i64, i64, i64)
// OVERLAP-DAG: func.func private @trc_rt_collective_finish(i64, i64, i64)
// OVERLAP-LABEL: func.func @main
// OVERLAP: call @trc_rt_all_reduce_start({{.*}}, %c0_i64{{[_0-9]*}})
// OVERLAP: call @trc_rt_reduce_scatter_start({{.*}}, %c1_i64{{[_0-9]*}})
// OVERLAP: %[[S:.*]] = bufferization.to_tensor %[[SOUT:.*]] restrict writable
// OVERLAP: bufferization.to_buffer %arg1 read_only {trc.finish_view}
// OVERLAP: call @trc_rt_collective_finish(%c1_i64
// OVERLAP-NEXT: bufferization.to_buffer %[[S]] read_only :
// OVERLAP: call @trc_rt_all_gather_start({{.*}}, %c2_i64{{[_0-9]*}})
// OVERLAP: call @trc_rt_collective_finish
// OVERLAP: call @trc_rt_broadcast(
// OVERLAP: call @trc_rt_shard_slice(
// OVERLAP: call @trc_rt_all_reduce_start({{.*}}, %c3_i64{{[_0-9]*}})
// OVERLAP: call @trc_rt_collective_finish(%c0_i64
// OVERLAP: call @trc_rt_collective_finish(%c3_i64
// OVERLAP-NEXT: return
// LLVM-OVERLAP-LABEL: llvm.func @main
// LLVM-OVERLAP-COUNT-10: llvm.call @trc_rt_
func.func @main(%x: tensor<4x8xf32>, %flat: tensor<32xf32>, %h: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<32xf32>, tensor<8xf32>, tensor<8xbf16>) {
  %a = trc.all_reduce %x avg group = world : tensor<4x8xf32>
  %s = trc.reduce_scatter %flat sum group = shard shards = 4 : (tensor<32xf32>) -> tensor<8xf32>
  %g = trc.all_gather %s group = shard shards = 4 : (tensor<8xf32>) -> tensor<32xf32>
  %b = trc.broadcast_from %g root = 0 group = world : tensor<32xf32>
  %m = trc.shard_slice %b group = shard shards = 4 : (tensor<32xf32>) -> tensor<8xf32>
  %r = trc.all_reduce %h max group = replica : tensor<8xbf16>
  return %a, %b, %m, %r : tensor<4x8xf32>, tensor<32xf32>, tensor<8xf32>, tensor<8xbf16>
}
