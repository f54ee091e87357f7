//! DAG benchmark (being written).

fn main() {}
