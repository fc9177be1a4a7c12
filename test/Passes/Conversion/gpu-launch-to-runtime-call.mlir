// trc-gpu-launch-to-runtime-call: launches (after gpu-to-llvm) become calls
// of trc_rt_cuda_launch with cuLaunchKernel's parameter array; the kernel
// table, in order of first launch, is the module's trc.cuda_kernels.
// RUN: trc-opt %s --trc-gpu-launch-to-runtime-call | FileCheck %s

// CHECK: module attributes {gpu.container_module, trc.cuda_kernels = ["main_k0_generic", "main_k1_reduce"]}
// CHECK: llvm.func @trc_rt_cuda_launch(i32, i64, i64, i64, i64, i64, i64, i32, !llvm.ptr, i32)
// CHECK-LABEL: llvm.func @main
// The parameter storage is in the entry block: an array of pointers and one
// slot per operand.
// CHECK: %[[PARAMS:[0-9]+]] = llvm.alloca %{{[0-9]+}} x !llvm.ptr : (i64) -> !llvm.ptr
// CHECK: %[[SLOT0:[0-9]+]] = llvm.alloca %{{[0-9]+}} x !llvm.ptr : (i64) -> !llvm.ptr
// CHECK: %[[SLOT1:[0-9]+]] = llvm.alloca %{{[0-9]+}} x f32 : (i64) -> !llvm.ptr
// CHECK-NOT: gpu.launch_func
// CHECK: llvm.store %arg0, %[[SLOT0]]
// CHECK: %[[AT0:[0-9]+]] = llvm.getelementptr %[[PARAMS]][0]
// CHECK: llvm.store %[[SLOT0]], %[[AT0]]
// CHECK: llvm.store %arg1, %[[SLOT1]]
// CHECK: %[[AT1:[0-9]+]] = llvm.getelementptr %[[PARAMS]][1]
// CHECK: llvm.store %[[SLOT1]], %[[AT1]]
// CHECK: %[[K0:[0-9]+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[SHARED:[0-9]+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[N:[0-9]+]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.call @trc_rt_cuda_launch(%[[K0]], %[[G:[0-9]+]], %[[ONE:[0-9]+]], %[[ONE]], %[[B:[0-9]+]], %[[ONE]], %[[ONE]], %[[SHARED]], %[[PARAMS]], %[[N]])
// The second kernel is index 1, the third launch reuses index 0.
// CHECK: %[[K1:[0-9]+]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @trc_rt_cuda_launch(%[[K1]],
// CHECK: %[[K2:[0-9]+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.call @trc_rt_cuda_launch(%[[K2]],
module attributes {gpu.container_module} {
  llvm.func @main(%p: !llvm.ptr, %x: f32) {
    %one = llvm.mlir.constant(1 : index) : i64
    %g = llvm.mlir.constant(4 : index) : i64
    %b = llvm.mlir.constant(256 : index) : i64
    gpu.launch_func @trc_kernels::@main_k0_generic blocks in (%g, %one, %one) threads in (%b, %one, %one) : i64 args(%p : !llvm.ptr, %x : f32)
    gpu.launch_func @trc_kernels::@main_k1_reduce blocks in (%one, %one, %one) threads in (%b, %one, %one) : i64 args(%p : !llvm.ptr)
    gpu.launch_func @trc_kernels::@main_k0_generic blocks in (%g, %one, %one) threads in (%b, %one, %one) : i64 args(%p : !llvm.ptr, %x : f32)
    llvm.return
  }
  gpu.binary @trc_kernels [#gpu.object<#nvvm.target<chip = "sm_90">, "">]
}
