// trc-linalg-to-gpu: each linalg op on buffers becomes one gpu.launch in
// @trc_kernels; host loop nests become kernels too; what would still touch
// memory on the host is an error.
// RUN: trc-opt %s --split-input-file --trc-linalg-to-gpu --verify-diagnostics | FileCheck %s

// An elementwise op whose innermost dimension is a multiple of 4 and
// contiguous: 4 points per thread (8x64 / 4 = 128 threads, one block), 16-byte
// vector loads and stores; the row operand is read once for the 4 lanes.
// CHECK-LABEL: func.func @elementwise
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[ONE:[a-z0-9_]+]], {{.*}}) threads({{.*}}) in (%{{.*}} = %[[T:[a-z0-9_]+]], {{.*}}) module(@trc_kernels) function(@elementwise_k0_generic)
// CHECK: %[[ITEM:[0-9]+]] = arith.addi
// CHECK: %[[COL:[0-9]+]] = arith.remui %[[ITEM]], %c16
// CHECK: %[[ROW:[0-9]+]] = arith.divui %[[ITEM]], %c16
// CHECK: %[[FIRST:[0-9]+]] = arith.muli %[[COL]], %c4
// CHECK: vector.load %arg0[%[[ROW]], %[[FIRST]]] {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// CHECK: memref.load %arg1[%[[ROW]]] : memref<8xf32>
// CHECK-COUNT-4: math.exp
// CHECK: vector.store %{{.*}}, %arg2[%[[ROW]], %[[FIRST]]] {alignment = 16 : i64}
// CHECK: gpu.terminator
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @elementwise(%a: memref<8x64xf32>, %b: memref<8xf32>, %c: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<8x64xf32>, memref<8xf32>) outs(%c : memref<8x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.subf %x, %y : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A reduction over a middle dimension: one thread per output point (30 of
// a warp, guarded), the reduced dimension a loop whose accumulator is an
// iter_arg; the output is read once and written once.
// CHECK-LABEL: func.func @reduce
// CHECK: gpu.launch {{.*}} function(@reduce_k0_reduce)
// CHECK: %[[IN:[0-9]+]] = arith.cmpi ult, %{{.*}}, %c30
// CHECK: scf.if %[[IN]]
// CHECK: %[[INIT:[0-9]+]] = memref.load %arg1
// CHECK: %[[SUM:[0-9]+]] = scf.for %[[K:[a-z0-9]+]] = %c0 to %c10 step %c1{{.*}} iter_args(%[[ACC:[a-z0-9]+]] = %[[INIT]]) -> (f32)
// CHECK: %[[X:[0-9]+]] = memref.load %arg0[%{{[0-9]+}}, %[[K]], %{{[0-9]+}}]
// CHECK: %[[M:[0-9]+]] = arith.maximumf %[[X]], %[[ACC]]
// CHECK: scf.yield %[[M]]
// CHECK: memref.store %[[SUM]], %arg1
func.func @reduce(%a: memref<6x10x5xf32>, %c: memref<6x5xf32>) {
  linalg.reduce ins(%a : memref<6x10x5xf32>) outs(%c : memref<6x5xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %m = arith.maximumf %x, %acc : f32
      linalg.yield %m : f32
    }
  return
}

// -----

// A reduction right after a constant fill of its output starts from the
// constant: one kernel, the output never read.
// CHECK-LABEL: func.func @fill_then_reduce
// CHECK-NOT: linalg.fill
// CHECK: function(@fill_then_reduce_k0_reduce)
// CHECK: %[[NEG:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-NOT: memref.load %arg1
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEG]])
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: gpu.launch
func.func @fill_then_reduce(%a: memref<4x8xf32>, %c: memref<4xf32>) {
  %neg = arith.constant 0xFF800000 : f32
  linalg.fill ins(%neg : f32) outs(%c : memref<4xf32>)
  linalg.reduce ins(%a : memref<4x8xf32>) outs(%c : memref<4xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %m = arith.maximumf %x, %acc : f32
      linalg.yield %m : f32
    }
  return
}

// -----

// A softmax (reductions over the last dimension and the elementwise ops
// between and after them) is one kernel, one thread per row: the max and
// the sum stay in registers, exp(x - max) is recomputed where it is read,
// and only the result, read after the group, is stored. The temporaries
// (views of the arena) are never written.
// CHECK-LABEL: func.func @softmax_rows
// CHECK: gpu.launch {{.*}} function(@softmax_rows_k0_rows)
// CHECK-NOT: gpu.launch
// CHECK: %[[MAX:[0-9]+]] = scf.for {{.*}} -> (f32)
// CHECK: arith.maximumf
// CHECK: %[[SUM:[0-9]+]] = scf.for {{.*}} -> (f32)
// CHECK: arith.subf %{{[0-9]+}}, %[[MAX]]
// CHECK: math.exp
// CHECK: scf.for
// CHECK: %[[E:[0-9]+]] = math.exp
// CHECK: %[[Y:[0-9]+]] = arith.divf %[[E]], %[[SUM]]
// CHECK: memref.store %[[Y]], %arg1[
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
#full = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @softmax_rows(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %arena: memref<256xi8>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %neg = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.view %arena[%c0][] : memref<256xi8> to memref<4xf32>
  %s = memref.view %arena[%c64][] : memref<256xi8> to memref<4xf32>
  %e = memref.view %arena[%c128][] : memref<256xi8> to memref<4x8xf32>
  linalg.fill ins(%neg : f32) outs(%m : memref<4xf32>)
  linalg.reduce ins(%x : memref<4x8xf32>) outs(%m : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<4x8xf32>, memref<4xf32>) outs(%e : memref<4x8xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %d = arith.subf %in, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.reduce ins(%e : memref<4x8xf32>) outs(%s : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<4x8xf32>, memref<4xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Rows of 64 or more with combiners that have a neutral element: a warp per
// row. 6 rows x 32 lanes in one block of 6 warps (the most, up to 8, that
// divide the rows: no lane is past the end, so all reach the shuffles);
// each lane folds every 32nd element of its row from the neutral element
// (-inf for the max, 0 for the sum), five xor shuffles (16 ... 1) give every
// lane the total, the fill's value is folded in, the lanes store the
// elementwise result in the same stride, and lane 0 alone stores the
// row's sum (read after the group).
// CHECK-LABEL: func.func @warp_rows
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c192,
// CHECK-SAME: function(@warp_rows_k0_rows)
// CHECK: %[[LANE:[0-9]+]] = arith.remui %{{[0-9]+}}, %c32
// CHECK: %[[ROW:[0-9]+]] = arith.divui %{{[0-9]+}}, %c32
// CHECK: %[[MAXP:[0-9]+]] = scf.for %{{.*}} = %[[LANE]] to %c128{{[_0-9]*}} step %c32{{[_0-9]*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: memref.load %arg0[%[[ROW]], %{{.*}}]
// CHECK: arith.maximumf
// CHECK: %{{.*}}, %{{.*}} = gpu.shuffle  xor %[[MAXP]], %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32{{[_0-9]*}}, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32{{[_0-9]*}}, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32{{[_0-9]*}}, %c32_i32
// CHECK: %[[LASTMAX:.*]], %{{.*}} = gpu.shuffle  xor %{{.*}}, %c1_i32{{[_0-9]*}}, %c32_i32
// CHECK: %[[MAX:[0-9]+]] = arith.maximumf %[[LASTMAX]], %{{[0-9]+}}
// CHECK: %[[ROWMAX:[0-9]+]] = arith.maximumf %[[MAX]], %cst
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c128{{[_0-9]*}} step %c32{{[_0-9]*}}
// CHECK: arith.subf %{{[0-9]+}}, %[[ROWMAX]]
// CHECK: gpu.shuffle  xor
// CHECK: %[[SUM:[0-9]+]] = arith.addf %{{[0-9]+}}, %cst
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c128{{[_0-9]*}} step %c32{{[_0-9]*}}
// CHECK: arith.divf %{{[0-9]+}}, %[[SUM]]
// CHECK: memref.store %{{.*}}, %arg1[%[[ROW]], %{{.*}}]
// CHECK: %[[FIRST:[0-9]+]] = arith.cmpi eq, %[[LANE]], %c0{{[_0-9]*}}
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %[[SUM]], %arg2[%[[ROW]]]
// CHECK: gpu.terminator
#full = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @warp_rows(%x: memref<6x128xf32>, %y: memref<6x128xf32>, %sums: memref<6xf32>,
                     %arena: memref<4096xi8>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %neg = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.view %arena[%c0][] : memref<4096xi8> to memref<6xf32>
  %e = memref.view %arena[%c64][] : memref<4096xi8> to memref<6x128xf32>
  linalg.fill ins(%neg : f32) outs(%m : memref<6xf32>)
  linalg.reduce ins(%x : memref<6x128xf32>) outs(%m : memref<6xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<6x128xf32>, memref<6xf32>) outs(%e : memref<6x128xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %d = arith.subf %in, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%sums : memref<6xf32>)
  linalg.reduce ins(%e : memref<6x128xf32>) outs(%sums : memref<6xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%e, %sums : memref<6x128xf32>, memref<6xf32>) outs(%y : memref<6x128xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A buffer that overlaps one the group writes (here the sum's, inside the
// bytes of exp(x - max)) ends the group: its bytes could be changed by
// another row's thread.
// CHECK-LABEL: func.func @overlapping
// CHECK: function(@overlapping_k0_rows)
// CHECK: memref.store
// CHECK: function(@overlapping_k1_reduce)
#full = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @overlapping(%x: memref<4x8xf32>, %arena: memref<256xi8>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c192 = arith.constant 192 : index
  %m = memref.view %arena[%c0][] : memref<256xi8> to memref<4xf32>
  %e = memref.view %arena[%c128][] : memref<256xi8> to memref<4x8xf32>
  %s = memref.view %arena[%c192][] : memref<256xi8> to memref<4xf32>
  linalg.reduce ins(%x : memref<4x8xf32>) outs(%m : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<4x8xf32>, memref<4xf32>) outs(%e : memref<4x8xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %d = arith.subf %in, %max : f32
    linalg.yield %d : f32
  }
  linalg.reduce ins(%e : memref<4x8xf32>) outs(%s : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// An op reading a row result across rows (here along the other
// dimension) cannot join the row kernel: two kernels.
// CHECK-LABEL: func.func @across_rows
// CHECK: function(@across_rows_k0_reduce)
// CHECK: function(@across_rows_k1_generic)
#full = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @across_rows(%x: memref<4x4xf32>, %m: memref<4xf32>, %y: memref<4x4xf32>) {
  linalg.reduce ins(%x : memref<4x4xf32>) outs(%m : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #col, #full], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<4x4xf32>, memref<4xf32>) outs(%y : memref<4x4xf32>) {
  ^bb0(%in: f32, %v: f32, %out: f32):
    %r = arith.subf %in, %v : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Named ops are generalized first: a transpose (innermost not a multiple of
// 4: one point per thread) and a fill (its scalar operand used as is); the
// kernels are numbered in program order.
// CHECK-LABEL: func.func @named
// CHECK: function(@named_k0_transpose)
// CHECK: %[[V:[0-9]+]] = memref.load %arg0[%[[I:[0-9]+]], %[[J:[0-9]+]]] : memref<3x5xf32>
// CHECK: memref.store %[[V]], %arg1[%[[J]], %[[I]]] : memref<5x3xf32>
// CHECK: function(@named_k1_fill)
// CHECK: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.0
// CHECK: memref.store %[[ZERO]], %arg0
func.func @named(%a: memref<3x5xf32>, %c: memref<5x3xf32>) {
  linalg.transpose ins(%a : memref<3x5xf32>) outs(%c : memref<5x3xf32>) permutation = [1, 0]
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%a : memref<3x5xf32>)
  return
}

// -----

// A constant global read by a kernel is recreated inside it (the host's copy
// is not device memory); without a 16-byte alignment it is not read with
// vector loads.
// CHECK-LABEL: func.func @constant
// CHECK-NOT: memref.get_global
// CHECK: gpu.launch
// CHECK: %[[T:[0-9]+]] = memref.get_global @table
// CHECK-NOT: vector.load
// CHECK: memref.load %[[T]]
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @constant(%c: memref<4xf32>) {
  %t = memref.get_global @table : memref<4xf32>
  linalg.copy ins(%t : memref<4xf32>) outs(%c : memref<4xf32>)
  return
}

// -----

// A bufferized scatter_add: every store is in the innermost loop and indexes
// the last dimension with its induction variable, so each thread takes one
// column (3 of a warp) and runs the outer loops in order (deterministic).
// CHECK-LABEL: func.func @scatter
// CHECK: gpu.launch {{.*}} function(@scatter_k0_loop)
// CHECK: scf.if
// CHECK: %[[COL:[0-9]+]] = arith.addi %c0{{.*}}, %{{[0-9]+}} : index
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}, %[[COL]]]
// CHECK: memref.store %{{.*}}, %arg0[%{{[0-9]+}}, %[[COL]]]
func.func @scatter(%t: memref<5x3xf32>, %i: memref<2x2xi64>, %u: memref<2x2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  scf.for %a = %c0 to %c2 step %c1 {
    scf.for %b = %c0 to %c2 step %c1 {
      scf.for %k = %c0 to %c3 step %c1 {
        %0 = memref.load %i[%a, %b] : memref<2x2xi64>
        %1 = arith.index_cast %0 : i64 to index
        %2 = memref.load %u[%a, %b, %k] : memref<2x2x3xf32>
        %3 = memref.load %t[%1, %k] : memref<5x3xf32>
        %4 = arith.addf %3, %2 : f32
        memref.store %4, %t[%1, %k] : memref<5x3xf32>
      }
    }
  }
  return
}

// -----

// A loop nest whose iterations may touch the same element (the store's last
// index is not the innermost induction variable) runs on one thread.
// CHECK-LABEL: func.func @serial
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c1{{.*}}, {{.*}}) module(@trc_kernels) function(@serial_k0_loop)
func.func @serial(%t: memref<4xf32>, %i: memref<8xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-remark @below {{this loop nest runs on one GPU thread}}
  scf.for %k = %c0 to %c8 step %c1 {
    %j = memref.load %i[%k] : memref<8xindex>
    %x = memref.load %t[%j] : memref<4xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %t[%j] : memref<4xf32>
  }
  return
}

// -----

// A static memref.reshape becomes a reinterpret_cast: no shape buffer is
// read on the host.
// CHECK-LABEL: func.func @reshape
// CHECK-NOT: memref.reshape
// CHECK: memref.reinterpret_cast %arg0 to offset: [0], sizes: [2, 6], strides: [6, 1]
func.func @reshape(%a: memref<3x4xf32>, %shape: memref<2xi64>, %c: memref<2x6xf32>) {
  %r = memref.reshape %a(%shape) : (memref<3x4xf32>, memref<2xi64>) -> memref<2x6xf32>
  linalg.copy ins(%r : memref<2x6xf32>) outs(%c : memref<2x6xf32>)
  return
}

// -----

// Errors: what would still run on the host.
func.func @host_alloc(%c: memref<4xf32>) {
  // expected-error @below {{'memref.alloc' allocates on the host}}
  %t = memref.alloc() : memref<4xf32>
  linalg.copy ins(%t : memref<4xf32>) outs(%c : memref<4xf32>)
  return
}

// -----

func.func private @helper(memref<4xf32>)
func.func @host_call(%c: memref<4xf32>) {
  // expected-error @below {{'func.call' calls @helper on the host}}
  func.call @helper(%c) : (memref<4xf32>) -> ()
  return
}

// -----

memref.global "private" constant @weights : memref<4xf32> = dense<1.0>
func.func private @trc_rt_use(memref<4xf32>)
func.func @host_constant() {
  // expected-error @below {{reads constant @weights on the host (for 'func.call')}}
  %w = memref.get_global @weights : memref<4xf32>
  func.call @trc_rt_use(%w) : (memref<4xf32>) -> ()
  return
}

// -----

func.func @dynamic(%a: memref<?xf32>, %c: memref<?xf32>) {
  // expected-error @below {{the CUDA backend needs static shapes, strides and offsets}}
  linalg.copy ins(%a : memref<?xf32>) outs(%c : memref<?xf32>)
  return
}

// -----

// A lone reduction over rows of 64 or more is a row kernel too (a warp per
// row); over shorter rows, a thread per output point.
// CHECK-LABEL: func.func @lone_row_sum
// CHECK: function(@lone_row_sum_k0_rows)
// CHECK: gpu.shuffle  xor
// CHECK: function(@lone_row_sum_k1_reduce)
// CHECK-NOT: gpu.shuffle
// CHECK: return
func.func @lone_row_sum(%x: memref<16x256xf32>, %s: memref<16xf32>, %y: memref<16x8xf32>,
                        %t: memref<16xf32>) {
  linalg.reduce ins(%x : memref<16x256xf32>) outs(%s : memref<16xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.reduce ins(%y : memref<16x8xf32>) outs(%t : memref<16xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// Elementwise ops right before a reduction over their space join its row
// kernel (a warp per row): the mask's select of the scores is recomputed in
// each loop that reads it and never stored (nothing after the group reads
// it), so the masked scores make no pass over memory of their own. Over
// rows too short for a warp the select stays a kernel of its own.
// CHECK-LABEL: func.func @masked_softmax
// CHECK: function(@masked_softmax_k0_rows)
// CHECK-NOT: gpu.launch
// CHECK: scf.for
// CHECK: memref.load %arg1
// CHECK: arith.select
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor
// CHECK: scf.for
// CHECK: memref.load %arg1
// CHECK: arith.select
// CHECK: math.exp
// CHECK-NOT: memref.store %{{.*}}, %view
// CHECK: memref.store %{{.*}}, %arg2
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: gpu.launch {{.*}} function(@masked_softmax_k1_generic)
// CHECK: gpu.launch {{.*}} function(@masked_softmax_k2_reduce)
// CHECK: return
#full = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @masked_softmax(%mask: memref<4x128xi1>, %x: memref<4x128xf32>, %y: memref<4x128xf32>,
                          %short: memref<4x8xf32>, %shortMask: memref<4x8xi1>,
                          %shortMax: memref<4xf32>, %arena: memref<8192xi8>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %neg = arith.constant 0xFF800000 : f32
  %fill = arith.constant -1.0e4 : f32
  %masked = memref.view %arena[%c64][] : memref<8192xi8> to memref<4x128xf32>
  %m = memref.view %arena[%c0][] : memref<8192xi8> to memref<4xf32>
  linalg.generic {indexing_maps = [#full, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %x : memref<4x128xi1>, memref<4x128xf32>) outs(%masked : memref<4x128xf32>) {
  ^bb0(%hide: i1, %in: f32, %out: f32):
    %r = arith.select %hide, %fill, %in : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%neg : f32) outs(%m : memref<4xf32>)
  linalg.reduce ins(%masked : memref<4x128xf32>) outs(%m : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%masked, %m : memref<4x128xf32>, memref<4xf32>) outs(%y : memref<4x128xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %d = arith.subf %in, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  %shortMasked = memref.view %arena[%c4096][] : memref<8192xi8> to memref<4x8xf32>
  linalg.generic {indexing_maps = [#full, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%shortMask, %short : memref<4x8xi1>, memref<4x8xf32>) outs(%shortMasked : memref<4x8xf32>) {
  ^bb0(%hide: i1, %in: f32, %out: f32):
    %r = arith.select %hide, %fill, %in : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%neg : f32) outs(%shortMax : memref<4xf32>)
  linalg.reduce ins(%shortMasked : memref<4x8xf32>) outs(%shortMax : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// Results the memory plan put over other rows' bytes in another layout (a
// product's bf16 scores read by the select; the select's f32 output) join
// the group while they are never stored: exp(x - max) lands over the bf16
// input and the bf16 probabilities over the select's f32 output, both only
// in registers, so a bf16 softmax and the copy of its result are one kernel
// that reads the scores and writes the probabilities. When exp(x - max) is
// also read by an op that cannot join (@overwritten_stored: a sum across
// rows) it would be stored over rows other warps still read: the group
// ends before it.
// CHECK-LABEL: func.func @overwritten
// CHECK: function(@overwritten_k0_rows)
// CHECK-NOT: memref.store %{{.*}}, %view
// CHECK: memref.store %{{.*}}, %arg2[{{.*}}] : memref<4x128xbf16>
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func.func @overwritten_stored
// CHECK: function(@overwritten_stored_k0_rows)
// CHECK: function(@overwritten_stored_k1_generic)
// CHECK: function(@overwritten_stored_k2_reduce)
#full = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @overwritten(%mask: memref<4x128xi1>, %arena: memref<16384xi8>,
                       %probs: memref<4x128xbf16>) {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %neg = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %fill = arith.constant -1.0e4 : f32
  %x = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x128xbf16>
  %masked = memref.view %arena[%c4096][] : memref<16384xi8> to memref<4x128xf32>
  %m = memref.view %arena[%c8192][] : memref<16384xi8> to memref<4xf32>
  linalg.generic {indexing_maps = [#full, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %x : memref<4x128xi1>, memref<4x128xbf16>) outs(%masked : memref<4x128xf32>) {
  ^bb0(%hide: i1, %in: bf16, %o: f32):
    %w = arith.extf %in : bf16 to f32
    %r = arith.select %hide, %fill, %w : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%neg : f32) outs(%m : memref<4xf32>)
  linalg.reduce ins(%masked : memref<4x128xf32>) outs(%m : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x128xf32>
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%masked, %m : memref<4x128xf32>, memref<4xf32>) outs(%e : memref<4x128xf32>) {
  ^bb0(%in: f32, %max: f32, %o: f32):
    %d = arith.subf %in, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  %s = memref.view %arena[%c8192][] : memref<16384xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.reduce ins(%e : memref<4x128xf32>) outs(%s : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %p = memref.view %arena[%c4096][] : memref<16384xi8> to memref<4x128xbf16>
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<4x128xf32>, memref<4xf32>) outs(%p : memref<4x128xbf16>) {
  ^bb0(%in: f32, %sum: f32, %o: bf16):
    %q = arith.divf %in, %sum : f32
    %r = arith.truncf %q : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.copy ins(%p : memref<4x128xbf16>) outs(%probs : memref<4x128xbf16>)
  return
}

func.func @overwritten_stored(%mask: memref<4x128xi1>, %arena: memref<16384xi8>,
                              %out: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %neg = arith.constant 0xFF800000 : f32
  %fill = arith.constant -1.0e4 : f32
  %x = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x128xbf16>
  %masked = memref.view %arena[%c4096][] : memref<16384xi8> to memref<4x128xf32>
  %m = memref.view %arena[%c8192][] : memref<16384xi8> to memref<4xf32>
  linalg.generic {indexing_maps = [#full, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %x : memref<4x128xi1>, memref<4x128xbf16>) outs(%masked : memref<4x128xf32>) {
  ^bb0(%hide: i1, %in: bf16, %o: f32):
    %w = arith.extf %in : bf16 to f32
    %r = arith.select %hide, %fill, %w : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%neg : f32) outs(%m : memref<4xf32>)
  linalg.reduce ins(%masked : memref<4x128xf32>) outs(%m : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x128xf32>
  linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%masked, %m : memref<4x128xf32>, memref<4xf32>) outs(%e : memref<4x128xf32>) {
  ^bb0(%in: f32, %max: f32, %o: f32):
    %d = arith.subf %in, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  linalg.reduce ins(%e : memref<4x128xf32>) outs(%out : memref<128xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return
}
