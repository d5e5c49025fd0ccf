//! The cluster commands through the `nrl` binary against the fake API server (and a stub
//! or real Ray dashboard behind the head pods' port 8265): `cluster up|down|list|
//! dashboard`, `status`, `logs`, asserting on what reached the API server.

mod common;
mod dashboard;
mod faults;
mod lifecycle;
mod orchestrate;
mod owner;
mod update;
