// --trc-compile="target=cuda": a small step with an elementwise chain, a
// softmax (reductions), a matrix product and a tanh of it compiles into host code that
// launches kernels and calls cuBLASLt, and cubins for sm_80 and sm_90.
// RUN: rm -rf %t && trc-opt %s --trc-compile="target=cuda" -o %t 2>&1 | FileCheck %s --check-prefix=MEM
// MEM: memory: arena {{[0-9]+}} bytes

// The manifest: target cuda, one cubin and one PTX file per chip with their
// sizes and hashes, then the kernel table in launch order: tanh and exp
// recomputed inside the softmax's kernel (a thread per row: its reductions
// start from their identities and stay in registers), the matrix product a
// library call, the tanh of its result one elementwise kernel.
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.trc
// MANIFEST: trc-artifact 1
// MANIFEST-NEXT: target cuda
// MANIFEST-NEXT: program program.so {{[0-9]+}} xxh3:{{[0-9a-f]+$}}
// MANIFEST-NEXT: entry trc_entry
// MANIFEST-NEXT: arena {{[0-9]+}}
// MANIFEST-NEXT: weights weights.bin 0 xxh3:{{[0-9a-f]+$}}
// MANIFEST-NEXT: cubin sm_80 kernels.sm_80.cubin {{[0-9]+}} xxh3:{{[0-9a-f]+$}}
// MANIFEST-NEXT: ptx sm_80 kernels.sm_80.ptx {{[0-9]+}} xxh3:{{[0-9a-f]+$}}
// MANIFEST-NEXT: cubin sm_90 kernels.sm_90.cubin {{[0-9]+}} xxh3:{{[0-9a-f]+$}}
// MANIFEST-NEXT: ptx sm_90 kernels.sm_90.ptx {{[0-9]+}} xxh3:{{[0-9a-f]+$}}
// MANIFEST-NEXT: kernel 0 main_k0_rows
// MANIFEST-NEXT: kernel 1 main_k1_generic
// MANIFEST-NOT: kernel
// MANIFEST: slot 0 input x f32 2 8 64
// MANIFEST: slot 1 input w f32 2 64 32
// MANIFEST: slot 2 output y f32 2 8 32
// MANIFEST: end

// Every kernel is an entry of both PTX files, each for its chip; the
// elementwise kernels use 16-byte vector accesses; math comes from
// libdevice, inlined (no calls left).
// RUN: FileCheck %s --check-prefix=PTX90 < %t/kernels.sm_90.ptx
// PTX90: .target sm_90
// PTX90: .visible .entry main_k0_rows(
// PTX90: max.NaN.f32
// PTX90: ex2.approx
// PTX90: div.rn.f32
// PTX90: .visible .entry main_k1_generic(
// PTX90: ld.global.v4.b32
// PTX90: st.global.v4.b32
// RUN: FileCheck %s --check-prefix=PTX80 < %t/kernels.sm_80.ptx
// PTX80: .target sm_80
// PTX80-COUNT-2: .visible .entry main_k
// RUN: not grep -q "call.uni" %t/kernels.sm_90.ptx

// The cubins are CUDA ELF files for their chips, with every kernel.
// RUN: llvm-readelf -h %t/kernels.sm_80.cubin | FileCheck %s --check-prefix=ELF80
// ELF80: Machine: NVIDIA CUDA architecture
// ELF80: Flags: {{.*}}sm_80
// RUN: llvm-readelf -h %t/kernels.sm_90.cubin | FileCheck %s --check-prefix=ELF90
// ELF90: Flags: {{.*}}sm_90
// RUN: llvm-readelf -s %t/kernels.sm_90.cubin | FileCheck %s --check-prefix=SYMS
// SYMS-DAG: FUNC GLOBAL DEFAULT {{.*}} main_k0_rows
// SYMS-DAG: FUNC GLOBAL DEFAULT {{.*}} main_k1_generic

// The host program calls the runtime only: launches and cuBLASLt.
// RUN: llvm-nm -D %t/program.so | FileCheck %s --check-prefix=HOST
// HOST-DAG: T trc_entry
// HOST-DAG: U trc_rt_cublaslt_matmul_f32
// HOST-DAG: U trc_rt_cuda_launch
// RUN: llvm-nm -D --undefined-only %t/program.so | FileCheck %s --check-prefix=UNDEF
// UNDEF-NOT: trc_rt_matmul_f32
// UNDEF-NOT: cu{{[A-Z]}}

func.func @main(%x: tensor<8x64xf32> {trc.input = "x"}, %w: tensor<64x32xf32> {trc.input = "w"})
    -> (tensor<8x32xf32> {trc.output = "y"}) {
  %t = trc.tanh %x : tensor<8x64xf32>
  %e = trc.exp %t : tensor<8x64xf32>
  %s = trc.softmax %e axis = 1 : tensor<8x64xf32>
  %p = trc.dot_general %s, %w, batch = [] x [], contract = [1] x [0] : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %y = trc.tanh %p : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
