//! Protected entries under writable roots (being written).
