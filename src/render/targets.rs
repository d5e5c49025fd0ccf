//! `--target kuberay.<role>|deployments.<name>` selection for `cluster up/down`.

use crate::config::node::Node;
use crate::config::schema::{InfraConfig, Role};
use crate::diag::{Diag, Result};

use super::{deployment, raycluster};

/// One thing `cluster up/down` acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Role(Role),
    Deployment(String),
}

impl Target {
    pub fn label(&self) -> String {
        match self {
            Target::Role(r) => format!("kuberay.{}", r.as_str()),
            Target::Deployment(d) => format!("deployments.{d}"),
        }
    }
}

/// Resolve target strings (`--role R` is accepted as `kuberay.R`). No targets means every
/// declared role (generation, gym, training) then every deployment.
pub fn parse_targets(infra: &InfraConfig, targets: &[String]) -> Result<Vec<Target>> {
    let mut out = Vec::new();
    if targets.is_empty() {
        out.extend(infra.kuberay.roles().map(|(r, _)| Target::Role(r)));
        out.extend(
            infra
                .deployments
                .keys()
                .map(|k| Target::Deployment(k.clone())),
        );
        if out.is_empty() {
            return Err(Diag::new(
                "nrl::cluster::no_targets",
                "no resources defined in the recipe",
            )
            .help("declare `infra.kuberay.<role>` or `infra.deployments.<name>`"));
        }
        return Ok(out);
    }
    for t in targets {
        let t = t.trim();
        let (kind, key) = match t.split_once('.') {
            Some((k, n)) if !n.is_empty() => (k, n),
            _ if Role::parse(t).is_some() => ("kuberay", t),
            _ => {
                return Err(Diag::new(
                    "nrl::cluster::target",
                    format!("invalid target '{t}' — expected kind.name (e.g. kuberay.training)"),
                )
                .help("use kuberay.<generation|gym|training> or deployments.<name>"));
            }
        };
        match kind {
            "kuberay" => {
                let role = Role::parse(key).filter(|r| infra.kuberay.get(*r).is_some());
                match role {
                    Some(r) => out.push(Target::Role(r)),
                    None => {
                        let declared: Vec<_> =
                            infra.kuberay.roles().map(|(r, _)| r.as_str()).collect();
                        return Err(Diag::new(
                            "nrl::cluster::target",
                            format!("kuberay.{key} is not defined in the recipe"),
                        )
                        .help(if declared.is_empty() {
                            "the recipe declares no kuberay roles".to_string()
                        } else {
                            format!("declared roles: {}", declared.join(", "))
                        }));
                    }
                }
            }
            "deployments" => {
                if infra.deployments.contains_key(key) {
                    out.push(Target::Deployment(key.to_string()));
                } else {
                    let names: Vec<_> = infra.deployments.keys().cloned().collect();
                    let mut d = Diag::new(
                        "nrl::cluster::target",
                        format!("deployments.{key} is not defined in the recipe"),
                    );
                    if let Some(best) =
                        crate::config::suggest::did_you_mean(key, names.iter().map(String::as_str))
                    {
                        d = d.help(format!("did you mean `deployments.{best}`?"));
                    }
                    return Err(d);
                }
            }
            other => {
                return Err(Diag::new(
                    "nrl::cluster::target",
                    format!(
                        "unknown resource kind: '{other}' (expected 'kuberay' or 'deployments')"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// What `cluster up --dry-run` prints: the RayCluster or Deployment of each target
/// (no DRA objects, no Services, as the reference).
pub fn up_manifests(infra: &InfraConfig, targets: &[Target]) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for t in targets {
        match t {
            Target::Role(r) => {
                if let Some(c) = infra.kuberay.get(*r) {
                    out.push(raycluster::raycluster(infra, c, *r)?);
                }
            }
            Target::Deployment(k) => {
                if let Some(d) = infra.deployments.get(k) {
                    out.push(deployment::deployment(infra, k, d)?);
                }
            }
        }
    }
    Ok(out)
}
