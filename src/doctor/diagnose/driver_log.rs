//! What a driver log says went wrong: the last Python traceback (its exception and the
//! innermost frame of the user's code), CUDA out-of-memory, NCCL errors and watchdog
//! timeouts, Ray's out-of-memory killer, a dead actor, and a progress counter that
//! stopped advancing; plus the facts worth showing beside them (the W&B run URL, the last
//! progress line).
//!
//! The log is what Ray's job driver prints: the driver's own lines and every actor's,
//! prefixed `(ClassName pid=123, ip=127.0.0.5) ` and often coloured. Lines are read with
//! that prefix (and ANSI colour) removed, grouped by it, so two actors' tracebacks that
//! interleave are each read whole. Evidence is given as `line N: text` with the line
//! number of the log as fetched.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use crate::doctor::Finding;
use crate::launch::logscan::wandb_url;

pub const PYTHON_TRACEBACK: &str = "nrl::diagnose::python_traceback";
pub const CUDA_OOM: &str = "nrl::diagnose::cuda_oom";
pub const NCCL_ERROR: &str = "nrl::diagnose::nccl_error";
pub const NCCL_TIMEOUT: &str = "nrl::diagnose::nccl_timeout";
pub const RAY_OOM_KILLED: &str = "nrl::diagnose::ray_oom_killed";
pub const ACTOR_DIED: &str = "nrl::diagnose::actor_died";
pub const PROGRESS_STALLED: &str = "nrl::diagnose::progress_stalled";

/// A pattern of this module (constant, so compiling it cannot fail at run time).
fn pattern(re: &str) -> Regex {
    Regex::new(re).expect("a valid constant pattern")
}

static ANSI: LazyLock<Regex> = LazyLock::new(|| pattern(r"\x1b\[[0-9;]*[A-Za-z]"));
/// Ray's prefix of an actor's or task's line: `(ClassName pid=123, ip=127.0.0.5) `.
static RAY_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^\(([A-Za-z_][\w.:<>-]*\s+)?pid=\d+(, ip=[^)]*)?\)\s?"));
static STDLIB: LazyLock<Regex> = LazyLock::new(|| pattern(r"/lib/python3\.\d+/"));
static STEP: LazyLock<Regex> = LazyLock::new(|| pattern(r"^=+ Step \d+/\d+ =+$"));
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| pattern(r#"^\s+File "([^"]+)", line (\d+), in (.+)$"#));
static EXCEPTION: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^([A-Za-z_][\w.]*(\([\w.]+\))?)(: (.*))?$"));

/// One line of the log as read: its 1-based number, the process it came from (Ray's
/// prefix, empty for the driver), and its text without prefix and colour.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line<'a> {
    number: usize,
    process: String,
    text: std::borrow::Cow<'a, str>,
}

/// A frame of a traceback: `File "path", line N, in function`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub path: String,
    pub line: u32,
    pub function: String,
}

impl Frame {
    /// Whether the frame is in an installed package or the standard library rather than
    /// the user's code.
    fn is_library(&self) -> bool {
        let p = &self.path;
        p.contains("/site-packages/")
            || p.contains("/dist-packages/")
            || p.starts_with('<')
            || STDLIB.is_match(p)
    }
}

/// A Python traceback as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traceback {
    /// Ray's prefix of the process that printed it (empty: the driver).
    pub process: String,
    /// Line number of `Traceback (most recent call last):`.
    pub start: usize,
    pub frames: Vec<Frame>,
    /// `RuntimeError`, `torch.OutOfMemoryError`, `ray.exceptions.RayTaskError(ValueError)`.
    pub exception: String,
    /// The exception's message (its first line).
    pub message: String,
    /// Line number of the exception line.
    pub end: usize,
}

impl Traceback {
    /// The innermost frame of the user's code (the last frame outside installed packages
    /// and the standard library), else the innermost frame.
    pub fn user_frame(&self) -> Option<&Frame> {
        self.frames
            .iter()
            .rev()
            .find(|f| !f.is_library())
            .or(self.frames.last())
    }
}

/// The last progress line seen: NeMo-RL's `Step N/M` banner or a `Processed prompts` bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub line: usize,
    pub text: String,
}

/// What the driver log holds.
#[derive(Debug, Clone, Default)]
pub struct LogFacts {
    /// Problems, most telling first.
    pub findings: Vec<Finding>,
    /// The last traceback of the log.
    pub last_traceback: Option<Traceback>,
    pub last_progress: Option<Progress>,
    pub wandb_url: Option<String>,
    pub lines: usize,
}

/// How long a running job's log may stay still before it counts as stalled.
pub const DEFAULT_STALL: Duration = Duration::from_secs(30 * 60);

/// A rule over the log's lines: its finding, and the numbers of the lines it explains.
type LogRule = fn(&[Line<'_>], &mut Vec<usize>) -> Option<Finding>;

/// The findings of a driver log (see [`analyze`]).
pub fn findings(log: &str) -> Vec<Finding> {
    analyze(log, None).findings
}

/// Read a driver log. `idle`: how long the log of a still running job has not grown
/// (from its kept copy's modification time), with the threshold past which that is a
/// stall; `None` when the job is not running or the time is unknown.
pub fn analyze(log: &str, idle: Option<(Duration, Duration)>) -> LogFacts {
    let lines = read_lines(log);
    let mut facts = LogFacts {
        lines: lines.len(),
        ..LogFacts::default()
    };
    let tracebacks = tracebacks(&lines);
    facts.last_traceback = tracebacks.last().cloned();
    for line in &lines {
        if facts.wandb_url.is_none() {
            facts.wandb_url = wandb_url(&line.text);
        }
        if is_progress(&line.text) {
            facts.last_progress = Some(Progress {
                line: line.number,
                text: line.text.trim().to_string(),
            });
        }
    }
    // Specific causes first, each with the lines it explains; the traceback only when
    // none of them is its exception.
    let rules: [LogRule; 5] = [cuda_oom, ray_oom, nccl_timeout, nccl_error, actor_died];
    let mut explained: Vec<Vec<usize>> = Vec::new();
    for rule in rules {
        let mut lines_of = Vec::new();
        if let Some(f) = rule(&lines, &mut lines_of) {
            facts.findings.push(f);
            explained.push(lines_of);
        }
    }
    if let Some(tb) = &facts.last_traceback {
        let owner = explained.iter().position(|ls| ls.contains(&tb.end));
        match owner {
            // The traceback is that finding's: say there where it was raised.
            Some(i) => {
                if let Some(frame) = tb.user_frame() {
                    let note = format!("raised at {}", frame_text(frame));
                    facts.findings[i].notes.push(note);
                }
            }
            None => facts.findings.push(traceback_finding(tb, &lines)),
        }
    }
    if let (Some((idle, threshold)), Some(p)) = (idle, &facts.last_progress)
        && idle > threshold
    {
        facts.findings.push(
            Finding::new(PROGRESS_STALLED, format!(
                    "the driver log has not advanced for {}; its last progress was `{}`",
                    minutes(idle),
                    p.text
                ),
            )
            .note(format!("line {}: {}", p.line, p.text))
            .fix("a rank may be stuck in a collective or waiting on a dead actor: look at the other findings and the actors' logs (`nrl logs --collect DIR`); stop the job if it does not move"),
        );
    }
    facts
}

fn minutes(d: Duration) -> String {
    let m = d.as_secs() / 60;
    if m >= 120 {
        format!("{} h {} min", m / 60, m % 60)
    } else {
        format!("{m} min")
    }
}

/// The log's lines without Ray's `(Name pid=…)` prefix and colour.
fn read_lines(log: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    for (i, raw) in log.lines().enumerate() {
        // A progress bar redraws with `\r`: its last state is what the line shows.
        let raw = raw.rsplit('\r').find(|s| !s.is_empty()).unwrap_or(raw);
        let text: std::borrow::Cow<'_, str> = if raw.contains('\x1b') {
            ANSI.replace_all(raw, "")
        } else {
            raw.into()
        };
        let (process, text) = match RAY_PREFIX.find(&text) {
            Some(m) => (
                text[..m.end()].trim().to_string(),
                std::borrow::Cow::Owned(text[m.end()..].to_string()),
            ),
            None => (String::new(), text),
        };
        out.push(Line {
            number: i + 1,
            process,
            text,
        });
    }
    out
}

fn is_progress(text: &str) -> bool {
    text.contains("Processed prompts:") || STEP.is_match(text.trim())
}

/// Every traceback in the log, in the order they end, each read from its own process's
/// lines.
fn tracebacks(lines: &[Line<'_>]) -> Vec<Traceback> {
    let mut open: Vec<Traceback> = Vec::new();
    let mut done = Vec::new();
    for line in lines {
        let text = line.text.as_ref();
        if text.trim_end() == "Traceback (most recent call last):" {
            open.retain(|t| t.process != line.process);
            open.push(Traceback {
                process: line.process.clone(),
                start: line.number,
                frames: Vec::new(),
                exception: String::new(),
                message: String::new(),
                end: line.number,
            });
            continue;
        }
        let Some(at) = open.iter().position(|t| t.process == line.process) else {
            continue;
        };
        if let Some(c) = FRAME.captures(text) {
            open[at].frames.push(Frame {
                path: c[1].to_string(),
                line: c[2].parse().unwrap_or(0),
                function: c[3].trim().to_string(),
            });
        } else if text.starts_with(' ') || text.starts_with('\t') || text.trim().is_empty() {
            // A frame's source line, a `^^^^` marker, or a blank line inside it.
        } else if let Some(c) = EXCEPTION.captures(text) {
            let mut tb = open.remove(at);
            tb.exception = c[1].to_string();
            tb.message = c
                .get(4)
                .map(|m| m.as_str().trim().to_string())
                .unwrap_or_default();
            tb.end = line.number;
            done.push(tb);
        } else {
            // Not a traceback after all (or one cut short): forget it.
            open.remove(at);
        }
    }
    done
}

fn frame_text(f: &Frame) -> String {
    format!("{}:{} in {}", f.path, f.line, f.function)
}

fn evidence(line: &Line<'_>) -> String {
    const MAX: usize = 300;
    let mut shown: String = line.text.chars().take(MAX).collect();
    if line.text.chars().count() > MAX {
        shown.push('…');
    }
    if line.process.is_empty() {
        format!("line {}: {shown}", line.number)
    } else {
        format!("line {}: {} {shown}", line.number, line.process)
    }
}

fn traceback_finding(tb: &Traceback, lines: &[Line<'_>]) -> Finding {
    let who = if tb.process.is_empty() {
        "the driver".to_string()
    } else {
        tb.process.clone()
    };
    let what = if tb.message.is_empty() {
        tb.exception.clone()
    } else {
        format!("{}: {}", tb.exception, tb.message)
    };
    let mut f = Finding::new(PYTHON_TRACEBACK, format!("{who} raised {what}"));
    if let Some(frame) = tb.user_frame() {
        f = f.note(format!("raised at {}", frame_text(frame)));
    }
    for n in [tb.start, tb.end] {
        if let Some(line) = lines.get(n - 1) {
            f = f.note(evidence(line));
        }
    }
    f.fix(format!(
        "fix the error at the frame above ({} frames in the traceback, lines {}–{} of the driver log)",
        tb.frames.len(),
        tb.start,
        tb.end
    ))
}

/// The first line matching `re`; the numbers of every matching line go to `explained`.
fn first_match<'l, 'a>(
    lines: &'l [Line<'a>],
    re: &Regex,
    explained: &mut Vec<usize>,
) -> Option<&'l Line<'a>> {
    explained.extend(
        lines
            .iter()
            .filter(|l| re.is_match(&l.text))
            .map(|l| l.number),
    );
    lines.iter().find(|l| re.is_match(&l.text))
}

fn cuda_oom(lines: &[Line<'_>], explained: &mut Vec<usize>) -> Option<Finding> {
    let re = pattern(r"CUDA out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation");
    let hit = first_match(lines, &re, explained)?;
    let text = hit.text.as_ref();
    let asked = pattern(r"Tried to allocate ([\d.]+ [KMGT]iB)")
        .captures(text)
        .map(|c| c[1].to_string());
    let gpu = pattern(
        r"GPU (\d+) has a total capacity of ([\d.]+ [KMGT]iB) of which ([\d.]+ [KMGT]iB) is free",
    )
    .captures(text)
    .map(|c| (c[1].to_string(), c[2].to_string(), c[3].to_string()));
    let mut message = String::from("CUDA ran out of memory");
    if let Some(a) = &asked {
        message.push_str(&format!(" allocating {a}"));
    }
    if let Some((n, total, free)) = &gpu {
        message.push_str(&format!(" (GPU {n}: {free} free of {total})"));
    }
    let count = explained.len();
    let mut f = Finding::new(CUDA_OOM, message).note(evidence(hit));
    if count > 1 {
        f = f.note(format!("{count} out-of-memory lines in the log"));
    }
    Some(f.fix(
        "use less GPU memory per rank: a smaller policy.train_micro_batch_size or max sequence length, activation checkpointing, more tensor/pipeline parallelism, or a lower generation gpu_memory_utilization; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True helps when reserved memory is fragmented",
    ))
}

fn ray_oom(lines: &[Line<'_>], explained: &mut Vec<usize>) -> Option<Finding> {
    let re = pattern(
        r"killed due to the node running low on memory|killed due to memory pressure \(OOM\)|ray\.exceptions\.OutOfMemoryError",
    );
    let hit = first_match(lines, &re, explained)?;
    let usage_re = pattern(
        r"Memory on the node \(IP: ([^,]+), ID: [^)]+\).*? was ([\d.]+[KMGT]?B) / ([\d.]+[KMGT]?B) \(([\d.]+)\), which exceeds the memory usage threshold of (\d+(?:\.\d+)?)",
    );
    let usage = lines
        .iter()
        .find_map(|l| usage_re.captures(&l.text).map(|c| (l, c)));
    let mut message =
        String::from("Ray's memory monitor killed a worker: its node ran low on memory");
    let mut f;
    if let Some((line, c)) = usage {
        message = format!(
            "Ray's memory monitor killed a worker on node {}: {} of {} in use ({} > threshold {})",
            &c[1], &c[2], &c[3], &c[4], &c[5]
        );
        f = Finding::new(RAY_OOM_KILLED, message).note(evidence(hit));
        if line.number != hit.number {
            f = f.note(evidence(line));
        }
    } else {
        f = Finding::new(RAY_OOM_KILLED, message).note(evidence(hit));
    }
    Some(f.fix(
        "give the Ray pods more memory (the worker group's memory request and limit), run fewer actors per node, or lower host-memory use (dataloader workers, CPU offload); RAY_memory_usage_threshold only moves the line",
    ))
}

fn nccl_timeout(lines: &[Line<'_>], explained: &mut Vec<usize>) -> Option<Finding> {
    let re = pattern(
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)[^)]*Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds",
    );
    let hit = first_match(lines, &re, explained)?;
    let c = re.captures(&hit.text)?;
    let timeout_s = c[3].parse::<u64>().unwrap_or(0) / 1000;
    let ranks = explained.len();
    let mut f = Finding::new(
        NCCL_TIMEOUT,
        format!(
            "an NCCL {} (sequence {}) waited past the watchdog's {timeout_s} s timeout",
            &c[2], &c[1]
        ),
    )
    .note(evidence(hit));
    if ranks > 1 {
        f = f.note(format!("{ranks} watchdog timeout lines in the log"));
    }
    Some(f.fix(
        "one rank did not reach the collective: find the first rank that failed or hung (its traceback, an OOM, a dead actor) rather than raising the timeout; a step that is legitimately slower needs a larger timeout",
    ))
}

fn nccl_error(lines: &[Line<'_>], explained: &mut Vec<usize>) -> Option<Finding> {
    let re = pattern(
        r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ncclRemoteError|ncclInvalidUsage|NCCL WARN",
    );
    let hit = first_match(lines, &re, explained)?;
    let text = hit.text.as_ref();
    let what = pattern(r"NCCL error in: [^,]+, ([^(\n]+)")
        .captures(text)
        .map(|c| c[1].trim().trim_end_matches(',').to_string());
    let version = pattern(r"NCCL version ([\d.]+)")
        .captures(text)
        .map(|c| c[1].to_string());
    let mut message = match what {
        Some(w) => format!("NCCL failed: {w}"),
        None => "NCCL reported an error".to_string(),
    };
    if let Some(v) = version {
        message.push_str(&format!(" (NCCL {v})"));
    }
    Some(
        Finding::new(NCCL_ERROR, message)
            .note(evidence(hit))
            .fix("run again with NCCL_DEBUG=INFO (infra env) to see the failing transport; check the pods' network (NCCL_SOCKET_IFNAME, InfiniBand/RDMA devices) and that /dev/shm is large enough"),
    )
}

fn actor_died(lines: &[Line<'_>], explained: &mut Vec<usize>) -> Option<Finding> {
    let re = pattern(r"(ActorDiedError|RayActorError): The actor died");
    let at = lines.iter().position(|l| re.is_match(&l.text))?;
    let hit = &lines[at];
    explained.push(hit.number);
    // The details follow as `\tclass_name: …` lines and an exit detail.
    let mut class = None;
    let mut ip = None;
    let mut pid = None;
    let mut detail = None;
    for l in lines.iter().skip(at + 1).take(20) {
        let t = l.text.trim();
        if let Some(v) = t.strip_prefix("class_name: ") {
            class = Some(v.to_string());
        } else if let Some(v) = t.strip_prefix("ip: ") {
            ip = Some(v.to_string());
        } else if let Some(v) = t.strip_prefix("pid: ") {
            pid = Some(v.to_string());
        } else if let Some(i) = t.find("Worker exit detail: ") {
            let d = &t[i + "Worker exit detail: ".len()..];
            detail = Some(
                d.split(". ")
                    .next()
                    .unwrap_or(d)
                    .trim_end_matches('.')
                    .to_string(),
            );
        }
    }
    let mut message = format!(
        "a Ray actor{} died",
        class
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    );
    if let (Some(pid), Some(ip)) = (&pid, &ip) {
        message.push_str(&format!(" (pid {pid} on {ip})"));
    }
    if let Some(d) = &detail {
        message.push_str(&format!(": {d}"));
    }
    Some(
        Finding::new(ACTOR_DIED, message)
            .note(evidence(hit))
            .fix("read that actor's own log (`nrl logs --collect DIR` fetches every node's); an actor killed without a Python error was usually OOMKilled (see the pod findings) or crashed in native code"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/diagnose/logs")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// One line per finding: code, message, notes.
    fn shown(fs: &[Finding]) -> String {
        let mut out = String::new();
        for f in fs {
            out.push_str(&format!(
                "{} [{}]\n  {}\n",
                f.code,
                f.severity.as_str(),
                f.message
            ));
            for n in &f.notes {
                out.push_str(&format!("  - {n}\n"));
            }
            out.push_str(&format!("  fix: {}\n", f.fix));
        }
        out
    }

    #[test]
    fn the_last_traceback_names_the_exception_and_the_users_frame() {
        let facts = analyze(&fixture("grpo_traceback.log"), None);
        let tb = facts.last_traceback.as_ref().expect("a traceback");
        assert_eq!(tb.exception, "ValueError");
        let frame = tb.user_frame().expect("a frame");
        assert_eq!(frame.path, "/opt/nemo-rl/nemo_rl/data/processors.py");
        assert_eq!(
            facts.wandb_url.as_deref(),
            Some("https://wandb.ai/nvidia-rl/grpo-math/runs/3kq9x2mz")
        );
        insta::assert_snapshot!(shown(&facts.findings));
    }

    #[test]
    fn interleaved_actor_tracebacks_are_read_per_process() {
        let log = "\
(Worker pid=1) Traceback (most recent call last):
(Worker pid=2) Traceback (most recent call last):
(Worker pid=1)   File \"/app/a.py\", line 3, in f
(Worker pid=2)   File \"/app/b.py\", line 9, in g
(Worker pid=2)     g()
(Worker pid=1) KeyError: 'x'
(Worker pid=2) RuntimeError: second
";
        let tbs = tracebacks(&read_lines(log));
        let got: Vec<(&str, &str, &str)> = tbs
            .iter()
            .map(|t| {
                (
                    t.process.as_str(),
                    t.exception.as_str(),
                    t.frames[0].path.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("(Worker pid=1)", "KeyError", "/app/a.py"),
                ("(Worker pid=2)", "RuntimeError", "/app/b.py")
            ]
        );
    }

    #[test]
    fn a_cuda_oom_is_one_finding_with_the_numbers_and_not_a_second_traceback() {
        let fs = findings(&fixture("cuda_oom.log"));
        assert_eq!(
            fs.iter().map(|f| f.code.as_ref()).collect::<Vec<_>>(),
            [CUDA_OOM]
        );
        insta::assert_snapshot!(shown(&fs));
    }

    #[test]
    fn nccl_watchdog_timeouts_and_errors() {
        let fs = findings(&fixture("nccl_timeout.log"));
        let codes: Vec<&str> = fs.iter().map(|f| f.code.as_ref()).collect();
        assert_eq!(codes, [NCCL_TIMEOUT, NCCL_ERROR]);
        insta::assert_snapshot!(shown(&fs));
    }

    #[test]
    fn rays_oom_killer_and_the_dead_actor() {
        let fs = findings(&fixture("ray_oom_actor_died.log"));
        let codes: Vec<&str> = fs.iter().map(|f| f.code.as_ref()).collect();
        assert_eq!(codes, [RAY_OOM_KILLED, ACTOR_DIED]);
        insta::assert_snapshot!(shown(&fs));
    }

    #[test]
    fn a_clean_log_has_no_findings_but_its_facts() {
        let facts = analyze(&fixture("healthy.log"), None);
        assert!(facts.findings.is_empty(), "{}", shown(&facts.findings));
        let p = facts.last_progress.expect("progress");
        assert_eq!(
            p.text,
            "========================= Step 3/20 ========================="
        );
        // Still for 45 minutes with a 30 minute threshold: stalled.
        let stalled = analyze(
            &fixture("healthy.log"),
            Some((Duration::from_secs(45 * 60), DEFAULT_STALL)),
        );
        assert_eq!(stalled.findings.len(), 1);
        assert_eq!(stalled.findings[0].code, PROGRESS_STALLED);
        assert_eq!(
            stalled.findings[0].message,
            "the driver log has not advanced for 45 min; its last progress was `========================= Step 3/20 =========================`"
        );
        let moving = analyze(
            &fixture("healthy.log"),
            Some((Duration::from_secs(60), DEFAULT_STALL)),
        );
        assert!(moving.findings.is_empty());
    }

    #[test]
    fn every_code_is_a_registered_diagnose_rule() {
        use crate::doctor::{Stage, rule};
        for code in [
            PYTHON_TRACEBACK,
            CUDA_OOM,
            NCCL_ERROR,
            NCCL_TIMEOUT,
            RAY_OOM_KILLED,
            ACTOR_DIED,
            PROGRESS_STALLED,
        ] {
            let r = rule(code).unwrap_or_else(|| panic!("{code} is not in RULES"));
            assert_eq!(r.stage, Stage::Diagnose, "{code}");
        }
    }
}
