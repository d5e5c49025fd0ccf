//! One snapshot per diagnostic class: the message users see (code, file:line:col, label,
//! help), rendered without colour at 80 columns. Inputs are small files under
//! tests/data/diag so the paths in the snapshots are stable.

use std::path::PathBuf;
use std::sync::Arc;

use nrl::config::layers::LoadRequest;
use nrl::diag::Diag;

use crate::support::data::golden_env;

const DIR: &str = "tests/data/diag";

fn req(recipe: &str, infra: Option<&str>, overrides: &[&str]) -> LoadRequest {
    let mut r = LoadRequest::new(PathBuf::from(DIR).join(recipe), Arc::new(golden_env()));
    r.infra = infra.map(|i| PathBuf::from(DIR).join(i));
    r.overrides = overrides.iter().map(|s| s.to_string()).collect();
    r
}

fn err(recipe: &str, infra: Option<&str>, overrides: &[&str]) -> Diag {
    match nrl::launch::check::check(&req(recipe, infra, overrides), true) {
        Ok(_) => panic!("expected an error for {recipe} {infra:?} {overrides:?}"),
        Err(e) => e,
    }
}

fn render(d: &Diag) -> String {
    // Keep snapshots independent of the checkout location.
    let cwd = std::env::current_dir()
        .unwrap_or_default()
        .display()
        .to_string();
    d.render(false, 80).replace(&cwd, "<repo>")
}

macro_rules! snap {
    ($name:ident, $code:expr, $recipe:expr, $infra:expr, [$($ov:expr),*]) => {
        #[test]
        fn $name() {
            let d = err($recipe, $infra, &[$($ov),*]);
            assert_eq!(d.code, $code, "{}", render(&d));
            assert_eq!(d.exit, nrl::diag::Exit::Input);
            insta::assert_snapshot!(stringify!($name), render(&d));
        }
    };
}

snap!(
    yaml_syntax,
    "nrl::config::yaml_syntax",
    "yaml_syntax.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    duplicate_key,
    "nrl::config::duplicate_key",
    "duplicate_key.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    not_a_mapping,
    "nrl::config::not_a_mapping",
    "not_a_mapping.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    file_not_found,
    "nrl::config::file_not_found",
    "file_not_found.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    defaults_cycle,
    "nrl::config::defaults_cycle",
    "cycle-a.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    merge_conflict,
    "nrl::config::merge",
    "merge.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    infra_twice,
    "nrl::config::infra_twice",
    "recipe-with-infra.yaml",
    Some("base-infra.yaml"),
    []
);
snap!(
    infra_not_mapping,
    "nrl::config::infra_not_mapping",
    "infra_not_mapping.yaml",
    None,
    []
);
snap!(
    unknown_key,
    "nrl::config::unknown_key",
    "recipe.yaml",
    Some("unknown_key.yaml"),
    []
);
snap!(
    wrong_type,
    "nrl::config::type",
    "recipe.yaml",
    Some("type.yaml"),
    []
);
snap!(
    enum_value,
    "nrl::config::enum",
    "recipe.yaml",
    Some("enum.yaml"),
    []
);
snap!(
    required_field,
    "nrl::config::required",
    "recipe.yaml",
    Some("required.yaml"),
    []
);
snap!(
    cross_field_rule,
    "nrl::config::rule",
    "recipe.yaml",
    Some("rule.yaml"),
    []
);
snap!(
    override_syntax,
    "nrl::override::syntax",
    "recipe.yaml",
    Some("base-infra.yaml"),
    ["policy.name=A[B"]
);
snap!(
    override_missing_key,
    "nrl::override::missing_key",
    "recipe.yaml",
    Some("base-infra.yaml"),
    ["policy.lrr=3"]
);
snap!(
    override_exists,
    "nrl::override::exists",
    "recipe.yaml",
    Some("base-infra.yaml"),
    ["+policy.lr=3"]
);
snap!(
    override_delete,
    "nrl::override::delete",
    "recipe.yaml",
    Some("base-infra.yaml"),
    ["~policy.nope"]
);
snap!(
    override_sweep,
    "nrl::override::sweep",
    "recipe.yaml",
    Some("base-infra.yaml"),
    ["policy.lr=1,2"]
);
snap!(
    override_infra_root,
    "nrl::override::infra_root",
    "recipe.yaml",
    Some("base-infra.yaml"),
    ["infra=x"]
);
snap!(
    interp_shell_variable,
    "nrl::interp::missing_key",
    "recipe.yaml",
    Some("interp_shell.yaml"),
    []
);
snap!(
    interp_cycle,
    "nrl::interp::cycle",
    "recipe.yaml",
    Some("interp_cycle.yaml"),
    []
);
snap!(
    interp_syntax,
    "nrl::interp::syntax",
    "recipe.yaml",
    Some("interp_syntax.yaml"),
    []
);
snap!(
    interp_resolver,
    "nrl::interp::resolver",
    "recipe.yaml",
    Some("interp_resolver.yaml"),
    []
);
snap!(
    interp_missing_value,
    "nrl::interp::missing_value",
    "recipe.yaml",
    Some("interp_missing_value.yaml"),
    []
);
snap!(
    render_segments,
    "nrl::render::segments",
    "recipe.yaml",
    Some("segments.yaml"),
    []
);
snap!(
    render_schema,
    "nrl::render::schema",
    "recipe.yaml",
    Some("schema_nodeselecter.yaml"),
    []
);
