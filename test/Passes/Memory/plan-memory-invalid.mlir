// trc-plan-memory owns every temporary: a dealloc is an error, @main must
// exist, and the host arena is only the copy engine's.
// RUN: trc-opt %s --trc-plan-memory -split-input-file -verify-diagnostics

func.func @main(%out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  // expected-error @+1 {{planned buffers must not be deallocated}}
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// expected-error @+1 {{trc-plan-memory needs a function @main with a body}}
module {
  func.func @not_main() {
    return
  }
}

// -----

// A host-arena buffer is read only through the pointers the copy engine's
// calls take: the program cannot address the host arena.
func.func @main(%out: memref<4xf32>) {
  %h = memref.alloc() {trc.host_pool} : memref<4xf32>
  // expected-error @+1 {{a host-arena buffer may only be passed to the copy engine's calls, not read by 'memref.copy'}}
  memref.copy %h, %out : memref<4xf32> to memref<4xf32>
  return
}
