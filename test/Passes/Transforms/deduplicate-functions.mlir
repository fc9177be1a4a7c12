// trc-deduplicate-functions: outlined kernels (and private functions) with
// the same signature, attributes and body (locations aside) become one;
// launches (calls) of a copy name the first, the copies are erased. One
// differing in a constant, in its signature or in an attribute stays its
// own; public functions are never merged.
// RUN: trc-opt %s --split-input-file --trc-deduplicate-functions | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: gpu.launch_func @trc_kernels::@k0 {{.*}} args(%arg0 : memref<8xf32>)
// CHECK: gpu.launch_func @trc_kernels::@k0 {{.*}} args(%arg1 : memref<8xf32>)
// CHECK: gpu.launch_func @trc_kernels::@k2 {{.*}} args(%arg0 : memref<8xf32>)
// CHECK: gpu.launch_func @trc_kernels::@k3 {{.*}} args(%arg2 : memref<16xf32>)
// CHECK: gpu.launch_func @trc_kernels::@k4 {{.*}} args(%arg0 : memref<8xf32>)
// CHECK: gpu.launch_func @trc_kernels::@k0 {{.*}} args(%arg1 : memref<8xf32>)
// CHECK-LABEL: gpu.module @trc_kernels
// CHECK: gpu.func @k0(
// CHECK-NOT: gpu.func @k1(
// CHECK: gpu.func @k2(
// CHECK: gpu.func @k3(
// CHECK: gpu.func @k4(
// CHECK-NOT: gpu.func @k5(
module attributes {gpu.container_module} {
  func.func @main(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<16xf32>) {
    %one = arith.constant 1 : index
    %n = arith.constant 8 : index
    gpu.launch_func @trc_kernels::@k0 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<8xf32>)
    gpu.launch_func @trc_kernels::@k1 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%b : memref<8xf32>)
    gpu.launch_func @trc_kernels::@k2 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<8xf32>)
    gpu.launch_func @trc_kernels::@k3 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%c : memref<16xf32>)
    gpu.launch_func @trc_kernels::@k4 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<8xf32>)
    gpu.launch_func @trc_kernels::@k5 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%b : memref<8xf32>)
    return
  }
  gpu.module @trc_kernels {
    gpu.func @k0(%x: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<8xf32>
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %x[%i] : memref<8xf32>
      gpu.return
    }
    // k0's body at other locations: a copy.
    gpu.func @k1(%x: memref<8xf32>) kernel {
      %i = gpu.thread_id x loc("layer1")
      %v = memref.load %x[%i] : memref<8xf32> loc("layer1")
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %x[%i] : memref<8xf32>
      gpu.return
    }
    // Another constant.
    gpu.func @k2(%x: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<8xf32>
      %two = arith.constant 3.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %x[%i] : memref<8xf32>
      gpu.return
    }
    // Another signature.
    gpu.func @k3(%x: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<16xf32>
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %x[%i] : memref<16xf32>
      gpu.return
    }
    // Another attribute (the block size the launch promises).
    gpu.func @k4(%x: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<8xf32>
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %x[%i] : memref<8xf32>
      gpu.return
    }
    // A copy of k0 after others.
    gpu.func @k5(%x: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<8xf32>
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %x[%i] : memref<8xf32>
      gpu.return
    }
  }
}

// -----

// CHECK-LABEL: func.func private @loop0(
// CHECK-NOT: func.func private @loop1(
// CHECK: func.func private @loop2(
// CHECK: func.func @public_copy(
// CHECK-LABEL: func.func @main
// CHECK-NEXT: call @loop0(%arg0)
// CHECK-NEXT: call @loop0(%arg1)
// CHECK-NEXT: call @loop2(%arg0)
// CHECK-NEXT: call @public_copy(%arg1)
func.func private @loop0(%x: memref<8xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %x[%c0] : memref<8xf32>
  return
}
func.func private @loop1(%x: memref<8xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %x[%c0] : memref<8xf32>
  return
}
// Another attribute.
func.func private @loop2(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %x[%c0] : memref<8xf32>
  return
}
func.func @public_copy(%x: memref<8xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %x[%c0] : memref<8xf32>
  return
}
func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) {
  call @loop0(%a) : (memref<8xf32>) -> ()
  call @loop1(%b) : (memref<8xf32>) -> ()
  call @loop2(%a) : (memref<8xf32>) -> ()
  call @public_copy(%b) : (memref<8xf32>) -> ()
  return
}
