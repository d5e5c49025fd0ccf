//! End-to-end scenarios against the real control plane (`testbed/`): the real
//! kube-apiserver, controllers and scheduler, kwok's simulated nodes and pods, and the real
//! KubeRay operator, once per operator version the testbed runs (`kuberay_v1_5_1`,
//! `kuberay_v1_6_2`). Ray jobs run on a real Ray head on loopback that stands for the head
//! pods' dashboards (see `support::testbed`).
//!
//! Run them with `cargo test --test it real_cluster::` after `make testbed-up`.

mod admission;
mod cluster_ops;
mod deploy_dra;
mod gym;
mod raycluster;
mod rayjob;

use std::time::Duration;

use serde_json::Value;

use crate::support::context::TestContext;
use crate::support::ray_head;
use crate::support::testbed::{Namespace, Testbed};

/// One `#[test]` per KubeRay version of the testbed, in a module named after the scenario:
/// `real_cluster::rayjob::upload_succeeds::kuberay_v1_5_1`. The body gets the testbed.
macro_rules! on_each_kuberay {
    ($(#[$meta:meta])* fn $name:ident($tb:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn scenario($tb: &'static $crate::support::testbed::Testbed) $body
            #[test]
            fn kuberay_v1_5_1() {
                if let Some(tb) = $crate::support::testbed::Testbed::get("v1.5.1") {
                    scenario(tb)
                }
            }
            #[test]
            fn kuberay_v1_6_2() {
                if let Some(tb) = $crate::support::testbed::Testbed::get("v1.6.2") {
                    scenario(tb)
                }
            }
        }
    };
}
pub(crate) use on_each_kuberay;

/// The versions `on_each_kuberay!` runs are the testbed's: bumping one without the other
/// fails here.
#[test]
fn the_scenarios_cover_every_kuberay_version_of_the_testbed() {
    assert_eq!(
        crate::support::testbed::kuberay_versions(),
        ["v1.5.1", "v1.6.2"]
    );
}

/// A scenario's world: its own namespace on the testbed, a context acting in it, and (for
/// flows that reach Ray) the shared real Ray head attached as every head pod's dashboard.
pub struct World {
    pub ns: Namespace,
    pub ctx: TestContext,
}

impl World {
    /// A namespace without a dashboard (flows that never reach Ray).
    pub fn new(tb: &'static Testbed, prefix: &str) -> World {
        let ns = tb.namespace(prefix);
        let ctx = ns.ctx().user("tester");
        World { ns, ctx }
    }

    /// A namespace whose head pods' dashboards are the shared real Ray head; `None`
    /// (skipped, after a notice) without Ray outside CI.
    pub fn with_ray(tb: &'static Testbed, prefix: &str) -> Option<World> {
        let head = ray_head::shared()?;
        let mut w = World::new(tb, prefix);
        w.ns.attach_dashboard(head.address());
        Some(w)
    }

    pub fn record(&self, run: &str) -> Value {
        let path = self.ctx.home().join(format!(".cache/nrl/runs/{run}.json"));
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the run record"))
            .expect("a JSON record")
    }

    /// `nrl ARGS… -n <ns>`.
    pub fn nrl(&self, args: &[&str]) -> std::process::Output {
        self.ctx
            .nrl()
            .args(args)
            .args(["-n", &self.ns.name])
            .output()
            .expect("nrl runs")
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn run_id(prefix: &str) -> String {
    format!("{prefix}-{:06}", fastrand::u32(..1_000_000))
}

pub const LONG: Duration = Duration::from_secs(120);
