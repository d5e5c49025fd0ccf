//! Code-source upload rules. They apply only when the user asked for an upload — with
//! `--code-source upload` or by writing `launch.codeSource: upload` — and the launch is not
//! a RayJob (which uploads nothing). The shipped default `upload` alone does not trigger
//! them: most RayJob launches never upload and rightly `cd` into the image's code.

use regex::Regex;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::rules::{UPLOAD_TOO_LARGE, UPLOAD_UNUSED};
use super::text::{narrow, occurrence};
use super::{Ctx, Finding};
use crate::config::node::Node;
use crate::config::schema::CodeSource;
use crate::config::source::{SourceKind, Span};
use crate::ray::package::{DEFAULT_UPLOAD_PATHS, RAY_PACKAGE_LIMIT, UploadSet, mib};

/// Where the request for an upload came from.
enum Asked {
    Flag,
    Infra(Option<Span>),
}

fn asked(ctx: &Ctx) -> Option<Asked> {
    if ctx.opts.rayjob {
        return None;
    }
    if let Some(cs) = ctx.opts.code_source {
        return (cs == CodeSource::Upload).then_some(Asked::Flag);
    }
    if ctx.cfg.infra.launch.code_source != CodeSource::Upload {
        return None;
    }
    let span = ctx
        .cfg
        .infra
        .source
        .get_path("launch.codeSource")
        .and_then(|n| n.span);
    match span {
        Some(s) if s.kind() != SourceKind::Shipped => Some(Asked::Infra(Some(s))),
        _ => None,
    }
}

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    let Some(asked) = asked(ctx) else { return };
    let (asked_span, asked_text) = match asked {
        Asked::Flag => (None, "--code-source upload".to_string()),
        Asked::Infra(span) => (span, "launch.codeSource: upload".to_string()),
    };
    cd_absolute(ctx, asked_span, &asked_text, out);
    too_large(ctx, asked_span, &asked_text, out);
}

fn cd_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"(?m)(?:^|[;&|(]|\bthen\b|\bdo\b)[ \t]*(cd|pushd)[ \t]+['"]?(/[^\s'";&|)]*)"#)
            .expect("static regex")
    })
}

/// The first `cd /absolute/path` (or `pushd`) at a command position: where it starts,
/// its text as written, and the command shown as `cd /path`.
pub(crate) fn first_cd(text: &str) -> Option<(usize, &str, String)> {
    let c = cd_re().captures(text)?;
    let (verb, dir) = (c.get(1)?, c.get(2)?);
    let raw = text.get(verb.start()..dir.end())?;
    Some((
        verb.start(),
        raw,
        format!("{} {}", verb.as_str(), dir.as_str()),
    ))
}

fn cd_absolute(ctx: &Ctx, asked_span: Option<Span>, asked_text: &str, out: &mut Vec<Finding>) {
    let Some(text) = ctx.cfg.infra.launch.entrypoint.as_deref() else {
        return;
    };
    let Some((at, raw, cmd)) = first_cd(text) else {
        return;
    };
    let dir = cmd.split_once(' ').map_or("", |(_, d)| d);
    let span = ctx
        .cfg
        .infra
        .source
        .get_path("launch.entrypoint")
        .and_then(Node::best_span);
    out.push(
        Finding::new(
            UPLOAD_UNUSED,
            format!(
                "the code source is upload ({asked_text}) but the entrypoint runs `{cmd}`: the job would run the code at {dir}, not the uploaded working_dir"
            ),
        )
        .at(narrow(span, raw, occurrence(text, raw, at)), "leaves the uploaded working_dir")
        .also(asked_span, "upload asked for here")
        .fix(format!(
            "drop the `cd` (a job starts in its uploaded working_dir), or use `codeSource: image` with `codePath: {dir}` if the image's code is what should run"
        )),
    );
}

fn too_large(ctx: &Ctx, asked_span: Option<Span>, asked_text: &str, out: &mut Vec<Finding>) {
    let root = ctx
        .opts
        .repo_root
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let launch = &ctx.cfg.infra.launch;
    let paths: Vec<String> = match &launch.ray_upload_paths {
        Some(p) => p.clone(),
        None => DEFAULT_UPLOAD_PATHS.iter().map(|s| s.to_string()).collect(),
    };
    // Unreadable or conflicting paths are reported by the upload itself, with context.
    let Ok(set) = UploadSet::from_include_paths(&root, &paths) else {
        return;
    };
    let recipe = crate::launch::rayjob::manifest::staged_recipe_yaml(ctx.cfg).len() as u64;
    let total = set.total_bytes() + recipe;
    if total <= RAY_PACKAGE_LIMIT {
        return;
    }
    let mut largest: Vec<(&str, u64)> = set.files().collect();
    largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let paths_span = ctx
        .cfg
        .infra
        .source
        .get_path("launch.rayUploadPaths")
        .and_then(Node::best_span);
    let list = if launch.ray_upload_paths.is_some() {
        "infra.launch.rayUploadPaths"
    } else {
        "the default upload list"
    };
    let mut f = Finding::new(
        UPLOAD_TOO_LARGE,
        format!(
            "the working_dir upload ({asked_text}) from {} would be {} ({} files, {list}), over Ray's limit of {}",
            root.display(),
            mib(total),
            set.file_count() + 1,
            mib(RAY_PACKAGE_LIMIT)
        ),
    )
    .at(paths_span.or(asked_span), "uploaded paths")
    .also(asked_span, "upload asked for here")
    .fix("narrow `launch.rayUploadPaths` to the code the job needs, move data to shared storage, or use `codeSource: image`/`lustre`");
    for (name, size) in largest.iter().take(3) {
        f = f.note(format!("{name}: {}", mib(*size)));
    }
    out.push(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cd_at_command_positions_only() {
        let cd = |t: &str| first_cd(t).map(|c| c.2);
        assert_eq!(
            cd("set -eu\ncd /opt/nemo-rl\npython x").as_deref(),
            Some("cd /opt/nemo-rl")
        );
        assert_eq!(
            first_cd("mkdir -p x && cd \"/work\" && y").map(|c| c.1),
            Some("cd \"/work")
        );
        assert_eq!(
            cd("mkdir -p x && cd \"/work\" && y").as_deref(),
            Some("cd /work")
        );
        assert_eq!(
            cd("if true; then pushd /a; fi").as_deref(),
            Some("pushd /a")
        );
        assert!(first_cd("cd examples && python run.py").is_none());
        assert!(first_cd("echo cd /x").is_none());
        assert!(first_cd("cd $HOME").is_none());
    }
}
