//===- TrcDialect.td - umbrella for the trc dialect --------*- tablegen -*-===//
#ifndef TRC_DIALECT_TD
#define TRC_DIALECT_TD
include "TrcBase.td"
include "TrcOps.td"
include "TrcFusion.td"
include "TrcCollectives.td"
include "TrcSharding.td"
include "TrcAttention.td"
include "TrcMemory.td"
#endif
