//! `data` (global functions): regular expressions, JSON and YAML in and out, and tables.

use rhai::plugin::*;
use rhai::{Array, Dynamic, Map};

use crate::config::source::{SourceKind, add_source};
use crate::diag::Diag;
use crate::render::emit;
use crate::script::convert::{dynamic_to_json, dynamic_to_node, node_to_dynamic};
use crate::script::errors::{RhaiResult, fail, usage};
use crate::script::host::host;
use crate::script::output::Stream;
use crate::terminal_text::Wrap;

#[export_module]
pub mod data_module {
    use super::*;

    /// Whether `pattern` (Rust regex syntax) matches anywhere in `text`.
    #[rhai_fn(return_raw)]
    pub fn regex_match(ctx: NativeCallContext, text: &str, pattern: &str) -> RhaiResult<bool> {
        let re = host(&ctx)?.regex(pattern).map_err(fail)?;
        Ok(re.is_match(text))
    }

    /// The first match of `pattern` in `text`, or `()`.
    #[rhai_fn(return_raw)]
    pub fn regex_find(ctx: NativeCallContext, text: &str, pattern: &str) -> RhaiResult<Dynamic> {
        let re = host(&ctx)?.regex(pattern).map_err(fail)?;
        Ok(re
            .find(text)
            .map(|m| Dynamic::from(m.as_str().to_string()))
            .unwrap_or(Dynamic::UNIT))
    }

    /// Every match of `pattern` in `text`, in order.
    #[rhai_fn(return_raw)]
    pub fn regex_find_all(ctx: NativeCallContext, text: &str, pattern: &str) -> RhaiResult<Array> {
        let re = host(&ctx)?.regex(pattern).map_err(fail)?;
        Ok(re
            .find_iter(text)
            .map(|m| Dynamic::from(m.as_str().to_string()))
            .collect())
    }

    /// The groups of the first match: `[whole, group1, …]` (`()` for a group that did not
    /// take part), or `()` when nothing matches.
    #[rhai_fn(return_raw)]
    pub fn regex_captures(
        ctx: NativeCallContext,
        text: &str,
        pattern: &str,
    ) -> RhaiResult<Dynamic> {
        let re = host(&ctx)?.regex(pattern).map_err(fail)?;
        Ok(match re.captures(text) {
            Some(caps) => Dynamic::from_array(
                caps.iter()
                    .map(|g| {
                        g.map(|m| Dynamic::from(m.as_str().to_string()))
                            .unwrap_or(Dynamic::UNIT)
                    })
                    .collect(),
            ),
            None => Dynamic::UNIT,
        })
    }

    /// Replace every match of `pattern` in `text` (`$1`, `${name}` refer to groups).
    #[rhai_fn(return_raw)]
    pub fn regex_replace(
        ctx: NativeCallContext,
        text: &str,
        pattern: &str,
        replacement: &str,
    ) -> RhaiResult<String> {
        let re = host(&ctx)?.regex(pattern).map_err(fail)?;
        Ok(re.replace_all(text, replacement).into_owned())
    }

    /// Parse JSON text (null becomes `()`).
    #[rhai_fn(return_raw)]
    pub fn parse_json(text: &str) -> RhaiResult<Dynamic> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            fail(
                Diag::new("nrl::script::json", format!("invalid JSON: {e}"))
                    .help("check the text is one JSON value"),
            )
        })?;
        Ok(crate::script::convert::json_to_dynamic(&v))
    }

    /// `value` as compact JSON.
    #[rhai_fn(return_raw)]
    pub fn dump_json(value: Dynamic) -> RhaiResult<String> {
        let v = dynamic_to_json(&value).map_err(fail)?;
        Ok(v.to_string())
    }

    /// `value` as JSON, indented when `pretty` is true.
    #[rhai_fn(name = "dump_json", return_raw)]
    pub fn dump_json_pretty(value: Dynamic, pretty: bool) -> RhaiResult<String> {
        let v = dynamic_to_json(&value).map_err(fail)?;
        Ok(if pretty {
            serde_json::to_string_pretty(&v).unwrap_or_default()
        } else {
            v.to_string()
        })
    }

    /// Parse YAML text (OmegaConf's dialect, as recipes are read).
    #[rhai_fn(return_raw)]
    pub fn parse_yaml(text: &str) -> RhaiResult<Dynamic> {
        let id = add_source("<parse_yaml>", None, text.to_string(), SourceKind::Text);
        let node = crate::config::yaml::parse_source(id).map_err(fail)?;
        Ok(node_to_dynamic(&node))
    }

    /// `value` as YAML (maps come out in key order).
    #[rhai_fn(return_raw)]
    pub fn dump_yaml(value: Dynamic) -> RhaiResult<String> {
        let node = dynamic_to_node(&value).map_err(fail)?;
        Ok(emit::to_yaml(&node))
    }

    /// An array of maps as a text table; the columns are every key, in order of first
    /// appearance.
    #[rhai_fn(return_raw)]
    pub fn table(rows: Array) -> RhaiResult<String> {
        render_table(&rows, None)
    }

    /// An array of maps as a text table with the given columns (keys), in that order.
    #[rhai_fn(name = "table", return_raw)]
    pub fn table_with(rows: Array, columns: Array) -> RhaiResult<String> {
        let cols = columns.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        render_table(&rows, Some(cols))
    }

    /// Print an array of maps as a table to stdout.
    #[rhai_fn(return_raw)]
    pub fn print_table(ctx: NativeCallContext, rows: Array) -> RhaiResult<()> {
        let text = render_table(&rows, None)?;
        host(&ctx)?.line(Stream::Stdout, &text);
        Ok(())
    }

    /// Print an array of maps as a table with the given columns to stdout.
    #[rhai_fn(name = "print_table", return_raw)]
    pub fn print_table_with(ctx: NativeCallContext, rows: Array, columns: Array) -> RhaiResult<()> {
        let cols = columns.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let text = render_table(&rows, Some(cols))?;
        host(&ctx)?.line(Stream::Stdout, &text);
        Ok(())
    }
}

/// Rows (maps) as a plain table: upper-case headers, two spaces between columns.
pub fn render_table(rows: &Array, columns: Option<Vec<String>>) -> RhaiResult<String> {
    let mut maps = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        match r.read_lock::<Map>() {
            Some(m) => maps.push(m.clone()),
            None => {
                return Err(usage(
                    "nrl::script::table",
                    format!("row {i} is a {}, not a map", r.type_name()),
                    "pass an array of maps: [#{name: \"a\", status: \"ok\"}, …]",
                ));
            }
        }
    }
    let columns = columns.unwrap_or_else(|| {
        let mut cols: Vec<String> = Vec::new();
        for m in &maps {
            for k in m.keys() {
                if !cols.iter().any(|c| c == k.as_str()) {
                    cols.push(k.to_string());
                }
            }
        }
        cols
    });
    let header: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
    let rows = maps
        .iter()
        .map(|m| {
            columns
                .iter()
                .map(|c| match m.get(c.as_str()) {
                    None => "-".to_string(),
                    Some(v) if v.is_unit() => "-".to_string(),
                    Some(v) => v.to_string(),
                })
                .collect()
        })
        .collect();
    Ok(crate::terminal_text::plain_table(
        &header,
        rows,
        Wrap::Never,
    ))
}
