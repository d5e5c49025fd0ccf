//! Arguments shared by the commands that take a recipe.

use std::path::PathBuf;

use clap::Args;

/// `RECIPE [--infra FILE] [OVERRIDES…]`
#[derive(Debug, Clone, Args)]
pub struct RecipeArgs {
    /// The NeMo-RL recipe YAML (its `defaults:` chain is followed).
    pub recipe: PathBuf,
    /// Infra YAML; alternatively the recipe may carry an `infra:` block (not both).
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides: `a.b=v`, `+a.b=v`, `++a.b=v`, `~a.b`; `infra.*` keys go to
    /// the infra layer.
    #[arg(value_name = "OVERRIDES", allow_hyphen_values = false)]
    pub overrides: Vec<String>,
}

impl RecipeArgs {
    /// A load request over the real process environment.
    pub fn load_request(&self) -> crate::config::layers::LoadRequest {
        let mut req = crate::config::layers::LoadRequest::new(
            self.recipe.clone(),
            std::sync::Arc::new(crate::config::env::ProcessEnv),
        );
        req.infra = self.infra.clone();
        req.overrides = self.overrides.clone();
        req
    }
}
