//! nrl against its peer, the `ray` CLI, on one real Ray head on loopback, side by side in
//! one run (issue 20): the same work, alternating runs, median and spread of each, and
//! the ratio.
//!
//! - `job list`: `nrl job list` vs `ray job list`.
//! - `job submit --no-wait` of a fresh 40 MiB working_dir (20 MiB random, 21 MiB text; one
//!   file changed before every run, so every package is new), against the floor: a `curl`
//!   PUT of the finished zip to the same endpoint; with nrl's peak RSS, and once more for a
//!   directory twice that size (memory must not follow it).
//! - `job logs` of a finished job whose log is 20 MB, against `curl` of the same endpoint;
//!   with nrl's peak RSS.
//! - follow latency: a driver prints 1,000 timestamped lines (one every 10 ms);
//!   `nrl job logs -f` and `ray job logs -f` follow it at the same time, and the delay from
//!   the driver's clock to the line on each follower's stdout is measured (p50, p99).
//!
//! `cargo bench --profile release --bench ray_peer` (the Ray venv of `make venv`, or
//! `NRL_RAY_BIN`). It starts its own head on 127.0.0.1 and stops it by its supervisor's
//! PID. Under `cargo test` it only says how to run it: a head costs tens of seconds of
//! CPU, and CI does not assert times.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[path = "support/working_dir.rs"]
mod working_dir;
use working_dir::working_dir;

#[allow(dead_code)]
#[path = "../tests/it/support/ray_head.rs"]
mod ray_head;

const NRL: &str = env!("CARGO_BIN_EXE_nrl");

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("ray_peer: `cargo bench --profile release --bench ray_peer` (starts a Ray head)");
        return;
    }
    let runs: usize = std::env::var("RAY_PEER_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let ray = ray_head::ray_binary().expect(ray_head::INSTALL_HINT);
    let head = ray_head::RayHead::start(&ray).expect("start a Ray head");
    let address = head.address().to_string();
    println!("ray_peer: Ray head at {address}, {runs} runs each, nrl {NRL}");
    let peer = Peer {
        ray: ray.clone(),
        address: address.clone(),
    };
    list(&peer, runs);
    submit(&peer, runs);
    logs(&peer, runs);
    follow(&peer);
    head.stop();
}

struct Peer {
    ray: PathBuf,
    address: String,
}

impl Peer {
    /// `program ARGS… --address URL [-- ENTRYPOINT…]`.
    fn command(&self, program: &Path, args: &[&str]) -> Command {
        let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let mut c = Command::new(program);
        c.args(&args[..split])
            .args(["--address", &self.address])
            .args(&args[split..])
            .env("NO_COLOR", "1")
            .env("RAY_USAGE_STATS_ENABLED", "0")
            .stdin(Stdio::null());
        c
    }

    fn nrl(&self, args: &[&str]) -> Command {
        self.command(Path::new(NRL), args)
    }

    fn ray(&self, args: &[&str]) -> Command {
        self.command(&self.ray, args)
    }
}

/// Wall time and peak RSS (KiB) of one run, its stdout discarded; panics on failure.
// The child is reaped by `wait4` (which also gives its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn timed(cmd: &mut Command) -> (f64, i64) {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    // Read stderr beside the wait, so a chatty child never blocks on a full pipe.
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain wait4 on our own child; `usage` is a zeroed, owned struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4");
    let stderr = reader.join().unwrap_or_default();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed:\n{stderr}"
    );
    (wall, usage.ru_maxrss)
}

/// Median, min and max of `samples` (seconds) as "median [min..max] unit".
fn spread(samples: &mut [f64], scale: f64, unit: &str) -> (f64, String) {
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    let text = format!(
        "{:.0} {unit} [{:.0}..{:.0}]",
        median * scale,
        samples[0] * scale,
        samples[samples.len() - 1] * scale
    );
    (median, text)
}

fn list(peer: &Peer, runs: usize) {
    // Something to list.
    for i in 0..3 {
        let id = format!("peer-list-{i}-{}", fastrand::u32(..));
        timed(&mut peer.nrl(&[
            "job",
            "submit",
            "--no-wait",
            "--submission-id",
            &id,
            "--",
            "true",
        ]));
    }
    let (mut nrl, mut ray) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        nrl.push(timed(&mut peer.nrl(&["job", "list"])).0);
        ray.push(timed(&mut peer.ray(&["job", "list"])).0);
    }
    let (n, nt) = spread(&mut nrl, 1e3, "ms");
    let (r, rt) = spread(&mut ray, 1e3, "ms");
    println!("job list:   nrl {nt}   ray {rt}   ray/nrl {:.1}x", r / n);
}

fn submit(peer: &Peer, runs: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let wd = dir.path().join("wd");
    std::fs::create_dir(&wd).expect("mkdir");
    working_dir(&wd, 40);
    let wd_str = wd.display().to_string();
    let fresh = |i: usize, who: &str| {
        std::fs::write(
            wd.join("run.txt"),
            format!("{who} {i} {:?}", SystemTime::now()),
        )
        .expect("write");
    };
    // The floor: the finished zip of the same directory, PUT by curl.
    let zip = dir.path().join("package.zip");
    zip_dir(&wd, &zip);
    let size = std::fs::metadata(&zip).expect("zip").len();
    let (mut nrl, mut ray, mut put, mut rss) = (Vec::new(), Vec::new(), Vec::new(), 0);
    let submit = |wd: &str| {
        peer.nrl(&[
            "job",
            "submit",
            "--no-wait",
            "--working-dir",
            wd,
            "--",
            "true",
        ])
    };
    for i in 0..runs {
        fresh(i, "nrl");
        let (wall, r) = timed(&mut submit(&wd_str));
        nrl.push(wall);
        rss = rss.max(r);
        fresh(i, "ray");
        ray.push(
            timed(&mut peer.ray(&[
                "job",
                "submit",
                "--no-wait",
                "--working-dir",
                &wd_str,
                "--",
                "true",
            ]))
            .0,
        );
        let uri = format!(
            "{}/api/packages/gcs/_ray_pkg_peerfloor{i}{}.zip",
            peer.address,
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("clock")
                .as_nanos()
        );
        put.push(
            timed(
                Command::new("curl")
                    .args(["-sf", "-X", "PUT", "--data-binary"])
                    .arg(format!("@{}", zip.display()))
                    .arg(&uri),
            )
            .0,
        );
    }
    let (n, nt) = spread(&mut nrl, 1e3, "ms");
    let (r, rt) = spread(&mut ray, 1e3, "ms");
    let (p, pt) = spread(&mut put, 1e3, "ms");
    println!(
        "job submit (fresh 40 MiB working_dir, zip {:.1} MiB):   nrl {nt}, peak RSS {:.0} MiB   ray {rt}   curl PUT {pt}   ray/nrl {:.1}x   nrl/PUT {:.2}x",
        size as f64 / 1048576.0,
        rss as f64 / 1024.0,
        r / n,
        n / p
    );
    // Memory must not follow the directory's size: one submit of twice the work (Ray refuses
    // packages over 100 MiB).
    let big = dir.path().join("wd2");
    std::fs::create_dir(&big).expect("mkdir");
    working_dir(&big, 80);
    let (wall, big_rss) = timed(&mut submit(&big.display().to_string()));
    println!(
        "job submit (fresh 82 MiB working_dir, once):   nrl {:.0} ms, peak RSS {:.0} MiB",
        wall * 1e3,
        big_rss as f64 / 1024.0
    );
}

/// A plain zip of `dir` (the `zip` crate, deflate): what a finished package looks like.
fn zip_dir(dir: &Path, out: &Path) {
    let file = std::fs::File::create(out).expect("zip file");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        zip.start_file(name.as_str(), options).expect("zip");
        zip.write_all(&std::fs::read(dir.join(&name)).expect("read"))
            .expect("zip");
    }
    zip.finish().expect("zip");
}

/// Submit `entrypoint` and wait until it succeeds.
fn run_job(peer: &Peer, id: &str, entrypoint: &str) {
    timed(&mut peer.nrl(&[
        "job",
        "submit",
        "--submission-id",
        id,
        "--",
        "sh",
        "-c",
        entrypoint,
    ]));
}

fn logs(peer: &Peer, runs: usize) {
    let id = format!("peer-logs-{}", fastrand::u32(..));
    // 20 MB: 200,000 lines of 100 bytes.
    run_job(
        peer,
        &id,
        "python3 -c \"import sys; [sys.stdout.write('%099d\\n' % i) for i in range(200000)]\"",
    );
    let url = format!("{}/api/jobs/{id}/logs", peer.address);
    let (mut nrl, mut ray, mut curl, mut rss) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        let (wall, r) = timed(&mut peer.nrl(&["job", "logs", &id]));
        nrl.push(wall);
        rss = rss.max(r);
        ray.push(timed(&mut peer.ray(&["job", "logs", &id])).0);
        curl.push(timed(Command::new("curl").args(["-sf", &url])).0);
    }
    let (n, nt) = spread(&mut nrl, 1e3, "ms");
    let (r, rt) = spread(&mut ray, 1e3, "ms");
    let (c, ct) = spread(&mut curl, 1e3, "ms");
    println!(
        "job logs (20 MB):   nrl {nt}, peak RSS {:.0} MiB   ray {rt}   curl {ct}   ray/nrl {:.1}x   nrl/curl {:.2}x",
        rss as f64 / 1024.0,
        r / n,
        n / c
    );
}

/// Seconds since the epoch, as the driver prints them.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

/// Reads a follower's stdout in a thread: the delay of every `latency <sent>` line.
fn collect(mut child: std::process::Child) -> std::thread::JoinHandle<Vec<f64>> {
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        let mut delays = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let arrived = now();
            if let Some(sent) = line
                .strip_prefix("latency ")
                .and_then(|t| t.trim().parse::<f64>().ok())
            {
                delays.push(arrived - sent);
            }
        }
        let _ = child.wait();
        delays
    })
}

fn follow(peer: &Peer) {
    let id = format!("peer-follow-{}", fastrand::u32(..));
    // Start after both followers are attached (2 s), then a line every 10 ms.
    let driver = "python3 -u -c \"import time\ntime.sleep(2)\nfor i in range(1000):\n    print('latency %.6f' % time.time(), flush=True)\n    time.sleep(0.01)\"";
    timed(&mut peer.nrl(&[
        "job",
        "submit",
        "--no-wait",
        "--submission-id",
        &id,
        "--",
        "sh",
        "-c",
        driver,
    ]));
    let spawn = |mut cmd: Command| {
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        collect(cmd.spawn().expect("spawn follower"))
    };
    let nrl = spawn(peer.nrl(&["job", "logs", "-f", &id]));
    let ray = spawn(peer.ray(&["job", "logs", "-f", &id]));
    let report = |who: &str, mut d: Vec<f64>| {
        assert!(!d.is_empty(), "{who} printed no lines");
        d.sort_by(f64::total_cmp);
        let at = |q: f64| d[((d.len() - 1) as f64 * q) as usize] * 1e3;
        println!(
            "  {who:<4} {} lines: p50 {:.0} ms  p99 {:.0} ms  max {:.0} ms",
            d.len(),
            at(0.5),
            at(0.99),
            at(1.0)
        );
        at(0.5)
    };
    println!("follow latency (1,000 lines, one per 10 ms, both followers at once):");
    let n = report("nrl", nrl.join().expect("nrl follower"));
    let r = report("ray", ray.join().expect("ray follower"));
    println!("  p50 ray/nrl {:.1}x", r / n);
}
