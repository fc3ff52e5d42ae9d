//! OpenCL: the device environment and compiled partitions.
pub mod env;
pub mod partition;

pub use env::ClEnv;
pub use partition::Partition;
