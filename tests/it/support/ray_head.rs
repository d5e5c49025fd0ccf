//! A real Ray head on loopback for integration tests.
//!
//! `ray start --head` daemonises a dozen processes (GCS, raylet, dashboard and its
//! modules, agents, workers; job entrypoints even get their own sessions), and `ray stop`
//! cannot be scoped: it kills every Ray process on the machine, including other
//! engineers' heads. So the head is started under a small Python supervisor that
//! becomes a session leader (`setsid`) and runs `ray start` inside that session. To stop
//! the head, the supervisor kills every process of its session plus their descendants
//! (snapshotted first, so orphans reparented mid-shutdown are not missed): SIGTERM,
//! then SIGKILL after a grace period; then it removes the head's temp dir.
//!
//! The supervisor stops the head when its stdin reaches EOF. Its stdin is a pipe whose
//! only write end lives in the test process, so the kernel closes it when the test
//! process ends, however it ends (normal exit, panic, abort, SIGKILL, Ctrl-C). That is
//! what makes a process-wide shared head safe: Rust never drops statics, but the pipe
//! closes anyway. A head owned by a value (`RayHead::start`) is stopped in `Drop`.
//!
//! Every head gets its own temp dir (`--temp-dir`, `RAY_TMPDIR`) and its own free ports
//! for GCS, dashboard, agents, client server, metrics and the worker range, so parallel
//! heads cannot collide. `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` keeps Ray on 127.0.0.1
//! (without it Ray swaps 127.0.0.1 for the eth0 address), `RAY_USAGE_STATS_ENABLED=0`
//! and `--disable-usage-stats` keep it from phoning home.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How to install Ray for these tests.
pub const INSTALL_HINT: &str = "python3 -m venv .venv && .venv/bin/pip install \"ray[default]\" (or set NRL_RAY_BIN to a `ray` executable)";

const SUPERVISOR: &str = r#"
import os, shutil, signal, subprocess, sys, time
os.setsid()
tmp = sys.argv[1]
with open(os.path.join(tmp, "ray-start.log"), "wb") as log:
    rc = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
sys.stdout.write("started %d\n" % rc)
sys.stdout.flush()
if rc == 0:
    try:
        sys.stdin.read()
    except Exception:
        pass
me, sid = os.getpid(), os.getsid(0)

def table():
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        procs[int(d)] = (fields[0], int(fields[1]), int(fields[3]), fields[19])
    return procs

def victims(known):
    procs = table()
    for pid, (state, ppid, s, start) in procs.items():
        if s == sid and pid != me:
            known[pid] = start
    grew = True
    while grew:
        grew = False
        for pid, (state, ppid, s, start) in procs.items():
            if ppid in known and pid not in known and pid != me:
                known[pid] = start
                grew = True
    return known

def alive(known):
    procs = table()
    return {p: st for p, st in known.items() if p in procs and procs[p][3] == st and procs[p][0] != "Z"}

def signal_all(known, sig):
    for pid in alive(known):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

known = victims({})
signal_all(known, signal.SIGTERM)
deadline = time.time() + 5
while time.time() < deadline and alive(victims(known)):
    time.sleep(0.2)
for _ in range(3):
    signal_all(victims(known), signal.SIGKILL)
    time.sleep(0.2)
shutil.rmtree(tmp, ignore_errors=True)
"#;

/// One running head.
pub struct RayHead {
    address: String,
    temp_dir: PathBuf,
    supervisor: Mutex<Option<Child>>,
    stdin: Mutex<Option<ChildStdin>>,
}

impl RayHead {
    /// Start a head with the `ray` at [`ray_binary`]. Blocks until `/api/version` answers.
    pub fn start(ray: &Path) -> Result<RayHead, String> {
        let temp_dir = tempfile::Builder::new()
            .prefix("nrl-ray-")
            .tempdir()
            .map_err(|e| format!("cannot create a temp dir for Ray: {e}"))?
            .keep();
        let ports = Ports::pick()?;
        let mut command = Command::new(python_of(ray));
        command
            .arg("-c")
            .arg(SUPERVISOR)
            .arg(&temp_dir)
            .arg(ray)
            .args(["start", "--head", "--node-ip-address", "127.0.0.1"])
            .args(["--dashboard-host", "127.0.0.1"])
            .args(["--num-cpus", "1", "--disable-usage-stats"])
            .args(["--include-dashboard", "true"])
            .args(["--object-store-memory", "134217728"])
            .arg("--temp-dir")
            .arg(&temp_dir)
            .args(ports.flags())
            .env("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            .env("RAY_USAGE_STATS_ENABLED", "0")
            .env("RAY_TMPDIR", &temp_dir)
            .env_remove("RAY_ADDRESS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the Ray supervisor: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let head = RayHead {
            address: format!("http://127.0.0.1:{}", ports.dashboard),
            temp_dir: temp_dir.clone(),
            supervisor: Mutex::new(Some(child)),
            stdin: Mutex::new(stdin),
        };
        // From here on, an early return drops `head`, which stops whatever started.
        let line = read_line_with_timeout(stdout, Duration::from_secs(120))?;
        if line.trim() != "started 0" {
            let log = std::fs::read_to_string(temp_dir.join("ray-start.log")).unwrap_or_default();
            return Err(format!("`ray start` failed ({}):\n{log}", line.trim()));
        }
        wait_for_dashboard(ports.dashboard, Duration::from_secs(60))?;
        Ok(head)
    }

    /// The dashboard URL, `http://127.0.0.1:<port>`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Stop the head and wait for the supervisor to finish (idempotent).
    pub fn stop(&self) {
        // EOF on the supervisor's stdin is the stop signal.
        drop(self.stdin.lock().ok().and_then(|mut s| s.take()));
        let Some(mut child) = self.supervisor.lock().ok().and_then(|mut c| c.take()) else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

impl Drop for RayHead {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `$NRL_RAY_BIN`, else `<repo>/.venv/bin/ray`, if it exists.
pub fn ray_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("NRL_RAY_BIN").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(bin)).filter(|p| p.is_file());
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/ray");
    venv.is_file().then_some(venv)
}

/// Whether missing components must fail tests instead of skipping them.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `RayHead::start`, up to three times. Ray's own startup has fixed deadlines (the raylet
/// must register with the GCS within about 30 s), which a loaded 2-core CI machine can
/// miss ("The current node timed out during startup"); a failed attempt has already
/// stopped everything it started (its supervisor), so trying again is safe.
fn start_with_retries(ray: &Path) -> Result<RayHead, String> {
    let mut errors = Vec::new();
    for _ in 0..3 {
        match RayHead::start(ray) {
            Ok(head) => return Ok(head),
            Err(e) => errors.push(e),
        }
    }
    Err(errors.join("\n--- next attempt ---\n"))
}

/// A head started on first use and kept until the test process ends (held in a
/// `static`, which Rust never drops: the supervisor's pipe stops it, see above).
pub struct SharedHead(OnceLock<Option<Result<RayHead, String>>>);

impl SharedHead {
    pub const fn new() -> SharedHead {
        SharedHead(OnceLock::new())
    }

    /// The head, started on the first call.
    ///
    /// `None` (after a notice on stderr) when Ray is not installed and not under CI; under
    /// `CI=true` a missing Ray fails the test with install instructions.
    pub fn get(&self) -> Option<&RayHead> {
        let slot = self
            .0
            .get_or_init(|| ray_binary().map(|ray| start_with_retries(&ray)));
        match slot {
            None if in_ci() => {
                panic!(
                    "Ray is required under CI=true but was not found; install it: {INSTALL_HINT}"
                )
            }
            None => {
                // Written to the real stderr (libtest captures `eprintln!` of passing
                // tests), once per test process.
                static NOTICE: std::sync::Once = std::sync::Once::new();
                NOTICE.call_once(|| {
                    let _ = writeln!(
                        std::io::stderr(),
                        "notice: Ray not found; skipping the tests that need a Ray head. Install it: {INSTALL_HINT}"
                    );
                });
                None
            }
            Some(Ok(head)) => Some(head),
            Some(Err(e)) => panic!("could not start a Ray head: {e}"),
        }
    }
}

/// The head the whole test run shares (one test binary, so one head per `cargo test`),
/// started on first use (see [`SharedHead::get`]).
pub fn shared() -> Option<&'static RayHead> {
    static SHARED: SharedHead = SharedHead::new();
    SHARED.get()
}

/// The ports of one head.
struct Ports {
    dashboard: u16,
    gcs: u16,
    client_server: u16,
    node_manager: u16,
    object_manager: u16,
    agent_listen: u16,
    agent_grpc: u16,
    runtime_env_agent: u16,
    metrics: u16,
    min_worker: u16,
    max_worker: u16,
}

impl Ports {
    fn pick() -> Result<Ports, String> {
        // Hold every listener until all are chosen so no two picks coincide.
        let mut held = Vec::new();
        let mut next = || -> Result<u16, String> {
            let listener =
                TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            held.push(listener);
            Ok(port)
        };
        let ports = Ports {
            dashboard: next()?,
            gcs: next()?,
            client_server: next()?,
            node_manager: next()?,
            object_manager: next()?,
            agent_listen: next()?,
            agent_grpc: next()?,
            runtime_env_agent: next()?,
            metrics: next()?,
            min_worker: 0,
            max_worker: 0,
        };
        // Worker ports: a block below the kernel's ephemeral range, all free right now.
        for _ in 0..200 {
            let base = 20000 + fastrand::u16(0..150) * 64;
            if (base..base + 64).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok()) {
                return Ok(Ports {
                    min_worker: base,
                    max_worker: base + 63,
                    ..ports
                });
            }
        }
        Err("no free block of 64 worker ports in 20000-29599".to_string())
    }

    fn flags(&self) -> Vec<String> {
        [
            ("--dashboard-port", self.dashboard),
            ("--port", self.gcs),
            ("--ray-client-server-port", self.client_server),
            ("--node-manager-port", self.node_manager),
            ("--object-manager-port", self.object_manager),
            ("--dashboard-agent-listen-port", self.agent_listen),
            ("--dashboard-agent-grpc-port", self.agent_grpc),
            ("--runtime-env-agent-port", self.runtime_env_agent),
            ("--metrics-export-port", self.metrics),
            ("--min-worker-port", self.min_worker),
            ("--max-worker-port", self.max_worker),
        ]
        .iter()
        .flat_map(|(flag, port)| [flag.to_string(), port.to_string()])
        .collect()
    }
}

/// The interpreter named in the `ray` script's shebang (the venv's Python), else python3.
fn python_of(ray: &Path) -> PathBuf {
    let mut first = String::new();
    if let Ok(file) = std::fs::File::open(ray) {
        let _ = BufReader::new(file).read_line(&mut first);
    }
    first
        .strip_prefix("#!")
        .map(|s| PathBuf::from(s.trim()))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

fn read_line_with_timeout(
    stdout: Option<std::process::ChildStdout>,
    timeout: Duration,
) -> Result<String, String> {
    let stdout = stdout.ok_or("the supervisor has no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(timeout)
        .map_err(|_| format!("`ray start` did not finish within {}s", timeout.as_secs()))
}

fn wait_for_dashboard(port: u16, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if version_answers(port) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!(
        "the dashboard on 127.0.0.1:{port} did not answer within {}s",
        timeout.as_secs()
    ))
}

fn version_answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /api/version HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200")
}
