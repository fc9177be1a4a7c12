// Verifier errors of the discardable trc.* attributes (trc/Abi/AttrNames.h):
// a name outside the list, a known name in the wrong place, or a value of
// the wrong kind. Each case is a separate module; the last one is valid.
// RUN: trc-opt %s -split-input-file -verify-diagnostics

// A misspelled slot name is not silently ignored.
// expected-error @+1 {{argument 0: unknown trc attribute 'trc.inputs'}}
func.func @unknown_arg(%x: tensor<4xf32> {trc.inputs = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Unknown on an op.
func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown trc attribute 'trc.stages'}}
  %y = trc.neg %x {trc.stages = 0 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Unknown on a module.
// expected-error @+1 {{unknown trc attribute 'trc.arena_size'}}
module attributes {trc.arena_size = 64 : i64} {
}

// -----

// A slot name is a string.
// expected-error @+1 {{argument 0: 'trc.input' must be a string, not 3 : i64}}
func.func @input_kind(%x: tensor<4xf32> {trc.input = 3 : i64}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// An input names an argument, not a result.
// expected-error @+1 {{result 0: 'trc.input' may not be on a result, only on an argument}}
func.func @input_on_result(%x: tensor<4xf32>) -> (tensor<4xf32> {trc.input = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// A module attribute is not an argument's.
// expected-error @+1 {{argument 0: 'trc.grid' may not be on an argument, only on an operation}}
func.func @grid_on_arg(%x: tensor<4xf32> {trc.grid = {tensor = 2 : i64}}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A gradient's parameter is named by a string.
// expected-error @+1 {{result 0: 'trc.grad_of' must be a string, not unit}}
func.func @grad_of_kind(%x: tensor<4xf32>) -> (tensor<4xf32> {trc.grad_of}) {
  return %x : tensor<4xf32>
}

// -----

// A shard's degree is an integer.
// expected-error @+1 {{argument 0: 'trc.shard_degree' must be an integer, not "2"}}
func.func @shard_degree_kind(%x: tensor<4xf32> {trc.shard_degree = "2"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A split is [dim, blocks, degree] as an array<i64>.
// expected-error @+1 {{argument 0: 'trc.split' must be an array<i64: ...>, not [0, 1, 2]}}
func.func @split_kind(%x: tensor<4xf32> {trc.split = [0, 1, 2]}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// An op's stage is an integer.
func.func @stage_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trc.stage' must be an integer, not "first"}}
  %y = trc.neg %x {trc.stage = "first"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// On an op, trc.sharding holds one sharding per result.
func.func @sharding_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'trc.sharding' must be a #trc.sharding (on an argument) or an array of them, one per result (on an op)}}
  %y = trc.neg %x {trc.sharding = #trc.sharding<[{}]>} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The device grid is a module dictionary.
// expected-error @+1 {{'trc.grid' must be a dictionary, not 4 : i64}}
module attributes {trc.grid = 4 : i64} {
}

// -----

// Every attribute in its place and of its kind.
module attributes {trc.grid = {tensor = 2 : i64}, trc.opset = 17 : i64, trc.producer = "pytorch 2.4"} {
  func.func @main(%x: tensor<4xf32> {trc.input = "x"},
                  %w: tensor<4xf32> {trc.param = "w", trc.stage = 0 : i64,
                                     trc.sharding = #trc.sharding<[{}]>},
                  %m: tensor<2xf32> {trc.state = "adam.m:w", trc.shard_degree = 2 : i64,
                                     trc.shard_of = array<i64: 4>},
                  %lr: tensor<f32> {trc.lr}, %step: tensor<f32> {trc.step})
      -> (tensor<4xf32> {trc.output = "y"}, tensor<4xf32> {trc.grad_of = "w", trc.norm_excluded},
          tensor<4xf32> {trc.update = "w"}) {
    %y = trc.neg %x {trc.stage = 0 : i64, trc.backward, trc.recompute = 3 : i64} : tensor<4xf32>
    return %y, %w, %w : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
