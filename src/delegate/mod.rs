//! Delegate support that does not need the interpreter: graph partitioning.
//!
//! - `partition.rs`: splitting an execution plan into topologically ordered subsets of
//!   nodes that a delegate does or does not take (TFLite's
//!   `PartitionGraphIntoIndependentNodeSubsets`). The interpreter turns each delegated
//!   subset into one delegate node (`interpreter::delegation`).

pub mod partition;
