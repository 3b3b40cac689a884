//! The seccomp filter every sandboxed command runs under (placeholder; being written).
