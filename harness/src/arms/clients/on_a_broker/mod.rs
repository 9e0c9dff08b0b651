//! Each driver's clients arm run as the runner runs it (knobs in, one record out) against the test environment's
//! broker: what the record says of the client (its command, what it applied, its counts) for every listener.

mod c_tool;
mod java;
mod paced;
mod partitionline;
