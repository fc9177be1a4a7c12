// test-trc-print-pipeline-schedule prints the runtime's own schedule table
// (the one trc-run executes), its check and its simulated bubble against
// the formula: 1F1B at 2 ranks x 4 microbatches (warm-up of p - r - 1
// forwards, bubble (p-1)/m = 0.25, rank 0 holds 2 microbatches, rank 1 one),
// GPipe (all forwards first: m in flight), ZB-H1 (W's deferred, bubble
// (p-1)/(3m) at B = W = F), interleaved 1F1B taking the ranks and chunks
// from the module's trc.pipeline; bad keys are errors naming them.
// RUN: trc-opt %s --test-trc-print-pipeline-schedule="schedule=1f1b ranks=2 microbatches=4" -o /dev/null | FileCheck %s --check-prefix=ONE
// RUN: trc-opt %s --test-trc-print-pipeline-schedule="schedule=gpipe ranks=2 microbatches=4" -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: trc-opt %s --test-trc-print-pipeline-schedule="schedule=zb_h1 ranks=4 microbatches=8" -o /dev/null | FileCheck %s --check-prefix=ZB
// RUN: trc-opt %s --test-trc-print-pipeline-schedule="schedule=interleaved_1f1b microbatches=4" -o /dev/null | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not trc-opt %s --test-trc-print-pipeline-schedule="schedule=dualpipe ranks=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not trc-opt %s --test-trc-print-pipeline-schedule="schedule=interleaved_1f1b ranks=2 virtual=2 microbatches=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GROUPS

module attributes {trc.pipeline = {stages = 2 : i64, virtual = 2 : i64}} {}

// ONE: pipeline schedule 1f1b: 2 ranks, 4 microbatches, 1 chunk per rank, 2 stages
// ONE: rank 0: F0 F1 B0 F2 B1 F3 B2 B3
// ONE-NEXT: rank 1: F0 B0 F1 B1 F2 B2 F3 B3
// ONE-NEXT: check: ok
// ONE-NEXT: bubble: simulated 0.2500, formula 0.2500
// ONE-NEXT: in flight: 2 1

// GPIPE: rank 0: F0 F1 F2 F3 B0 B1 B2 B3
// GPIPE: in flight: 4 4

// ZB: rank 3: F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1
// ZB: check: ok
// ZB-NEXT: bubble: simulated 0.1250, formula 0.1250

// INTERLEAVED: pipeline schedule interleaved_1f1b: 2 ranks, 4 microbatches, 2 chunks per rank, 4 stages
// INTERLEAVED: check: ok

// KIND: error: test-trc-print-pipeline-schedule: key 'pipeline_schedule': expected one of gpipe, 1f1b, interleaved_1f1b, zb_h1, got 'dualpipe'
// GROUPS: error: test-trc-print-pipeline-schedule: key 'microbatches': interleaved_1f1b runs microbatches in groups
