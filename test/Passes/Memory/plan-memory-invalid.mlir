// trc-plan-memory owns every temporary: a dealloc is an error, and @main
// must exist.
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
