//! Training-backend rules: DTensor-only optimizer overrides on Megatron recipes, and MoE
//! recipes that enable both backends.

use regex::Regex;
use std::sync::OnceLock;

use super::effective::{EntryOverride, effective, truthy};
use super::pods::quantity;
use super::rules::{DTENSOR_ONLY_OVERRIDE, TWO_BACKENDS};
use super::{Ctx, Finding, Severity};

const MEGATRON: &str = "policy.megatron_cfg.enabled";
const DTENSOR: &str = "policy.dtensor_cfg.enabled";
/// Keys that only DTensor's torch optimizers have.
const DTENSOR_ONLY: &[&str] = &[
    "policy.optimizer.kwargs.foreach",
    "policy.optimizer.kwargs.fused",
];

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    let ovs = ctx.entry_overrides();
    let Some(megatron) = effective(ctx.cfg, ovs, MEGATRON).filter(|e| truthy(&e.value)) else {
        return;
    };
    let megatron_label = if megatron.from_entrypoint {
        "the entrypoint enables Megatron"
    } else {
        "Megatron enabled here"
    };
    dtensor_only(ctx, ovs, megatron.span, megatron_label, out);

    let Some(dtensor) = effective(ctx.cfg, ovs, DTENSOR).filter(|e| truthy(&e.value)) else {
        return;
    };
    let Some(why_moe) = moe(ctx, ovs) else {
        return;
    };
    out.push(
        Finding::new(
            TWO_BACKENDS,
            format!(
                "this MoE recipe ({why_moe}) enables both training backends: {MEGATRON} and {DTENSOR} are true"
            ),
        )
        .at(dtensor.span, "DTensor enabled here")
        .also(megatron.span, megatron_label)
        .fix(format!(
            "MoE models train with Megatron: set `{DTENSOR}=false` (in the recipe, as NeMo-RL's MoE recipes do, or as an override)"
        )),
    );
}

fn dtensor_only(
    ctx: &Ctx,
    ovs: &[EntryOverride],
    megatron_span: Option<crate::config::source::Span>,
    megatron_label: &str,
    out: &mut Vec<Finding>,
) {
    let no_effect =
        "Megatron reads `policy.megatron_cfg.optimizer`, so this override has no effect";
    for ov in &ctx.cfg.layers.recipe_overrides {
        let key = ov.dotted_key();
        if DTENSOR_ONLY.contains(&key.as_str()) {
            out.push(
                finding(&ov.text, no_effect, Severity::Warning)
                    .at(Some(ov.span), "DTensor-only override")
                    .also(megatron_span, megatron_label),
            );
        }
    }
    for ov in ovs
        .iter()
        .filter(|o| DTENSOR_ONLY.contains(&o.key.as_str()))
    {
        let text = format!("{}{}", ov.op, ov.key);
        // Megatron recipes usually null `policy.optimizer`; then Hydra fails on the key.
        let (why, severity) = if ctx.cfg.recipe.get_path(&ov.key).is_some() {
            (no_effect.to_string(), Severity::Warning)
        } else {
            (
                format!(
                    "the recipe has no `{}` (Megatron recipes set `policy.optimizer: null`), so Hydra fails in the pod",
                    ov.key
                ),
                Severity::Error,
            )
        };
        out.push(
            finding(&text, &why, severity)
                .at(ov.span(), "DTensor-only override in the entrypoint")
                .also(megatron_span, megatron_label),
        );
    }
}

fn finding(text: &str, why: &str, severity: Severity) -> Finding {
    Finding::new(
        DTENSOR_ONLY_OVERRIDE,
        format!("`{text}` only exists for DTensor optimizers but this recipe trains with Megatron: {why}"),
    )
    .with_severity(severity)
    .fix(format!(
        "drop `{text}`; Megatron's optimizer settings live under `policy.megatron_cfg.optimizer`"
    ))
}

/// Why the recipe is a mixture-of-experts one, if it is: expert parallelism, or a model
/// name in the usual MoE spellings (`Qwen3-30B-A3B`, `Mixtral`, `…MoE…`).
fn moe(ctx: &Ctx, ovs: &[EntryOverride]) -> Option<String> {
    let ep = "policy.megatron_cfg.expert_model_parallel_size";
    if let Some(e) = effective(ctx.cfg, ovs, ep)
        && let Some(n) = quantity(&e.value).filter(|n| *n > 1)
    {
        return Some(format!("expert_model_parallel_size {n}"));
    }
    static NAME: OnceLock<Regex> = OnceLock::new();
    let re = NAME.get_or_init(|| {
        Regex::new(r"(?i)(moe|mixtral|-a\d+(\.\d+)?b\b|deepseek-v[23])").expect("static regex")
    });
    let model = effective(ctx.cfg, ovs, "policy.model_name")?;
    let name = model.value.as_str()?;
    re.is_match(name).then(|| format!("model {name}"))
}
