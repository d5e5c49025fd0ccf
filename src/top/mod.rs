//! `nrl top`: a live view of a user's runs in a namespace (RayJobs, long-lived RayClusters,
//! Gym runs), and of one selected run: its clusters' pods, the latest events of its
//! objects, its driver log, and training progress read from that log.
//!
//! Everything on screen is a [`model::TopView`], built by the session from one watch per
//! resource kind (nothing is polled) and the driver log's stream. The full-screen terminal
//! UI, `nrl top --once`, `-o json` and `top::snapshot()` all show that one value.

pub mod actions;
pub mod model;
pub mod progress;
pub mod screen;
pub mod session;
pub mod sources;
pub mod state;
pub mod ui;
