// Verifier errors of the offloading ops: every copy is waited for once, from
// its own operand; a prefetch reads a host copy; a host copy is read only by
// prefetches. Each case is a separate module.
// RUN: trc-opt %s -split-input-file -verify-diagnostics

// An offload nobody waits for.
func.func @unwaited(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result must have exactly one use, the trc.copy_wait that ends the copy (it has 0)}}
  %h = trc.offload %x : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// The in-flight copy read by an ordinary op.
func.func @read_in_flight(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result must be read only by trc.copy_wait as its copy}}
  %h = trc.offload %x : tensor<4xf32>
  %s = trc.add %h, %x : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Waited for from another value than the one it copies.
func.func @other_source(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is waited for from another value than its operand}}
  %h = trc.offload %x : tensor<4xf32>
  %hx = trc.copy_wait %h from %y : tensor<4xf32>
  %p = trc.prefetch %hx : tensor<4xf32>
  %r = trc.copy_wait %p from %hx : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A prefetch of a device value.
func.func @prefetch_device(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand must be a host copy (the trc.copy_wait of a trc.offload)}}
  %p = trc.prefetch %x : tensor<4xf32>
  %r = trc.copy_wait %p from %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A wait of something that is not a copy.
func.func @not_a_copy(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = trc.neg %x : tensor<4xf32>
  // expected-error @+1 {{copy must be the result of trc.offload or trc.prefetch}}
  %r = trc.copy_wait %n from %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A host copy read on the device.
func.func @host_read(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = trc.offload %x : tensor<4xf32>
  // expected-error @+1 {{result is a host copy: only trc.prefetch may read it, not 'trc.neg'}}
  %hx = trc.copy_wait %h from %x : tensor<4xf32>
  %n = trc.neg %hx : tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// The copy and its wait change the type.
func.func @types(%x: tensor<4xf32>) -> tensor<4xf16> {
  %h = trc.offload %x : tensor<4xf32>
  // expected-error @+1 {{requires the same type for all operands and results}}
  %hx = "trc.copy_wait"(%h, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %hx : tensor<4xf16>
}
