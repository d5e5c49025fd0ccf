//! Data the `cluster` built-ins hand to scripts: live status rows and the writer that collects (and, when following, prints) a role's log.

use std::io::Write;
use std::sync::Arc;

use rhai::{Array, Dynamic, Map};

use crate::launch::inspect::RoleStatus;
use crate::script::convert::to_dynamic;
use crate::script::output::{Output, Stream};

/// A live status row as a map, with `planned: false`; keys that may be absent in the
/// JSON form (`reason`, `error`) are always there (`()` when unset), so scripts can
/// read them without `get`.
pub fn role_row(row: &RoleStatus) -> Map {
    let mut m = to_dynamic(row).try_cast::<Map>().unwrap_or_default();
    if let Some(pods) = m.get_mut("pods")
        && let Some(mut pods) = pods.write_lock::<Map>()
    {
        if let Some(head) = pods.get_mut("head") {
            fill_pod(head);
        }
        if let Some(workers) = pods.get_mut("workers")
            && let Some(mut workers) = workers.write_lock::<Array>()
        {
            workers.iter_mut().for_each(fill_pod);
        }
    }
    if let Some(daemon) = m.get_mut("daemon")
        && let Some(mut d) = daemon.write_lock::<Map>()
    {
        d.entry("error".into()).or_insert(Dynamic::UNIT);
    }
    m.insert("planned".into(), Dynamic::FALSE);
    m
}

fn fill_pod(pod: &mut Dynamic) {
    if let Some(mut p) = pod.write_lock::<Map>() {
        p.entry("reason".into()).or_insert(Dynamic::UNIT);
    }
}

/// Collects a log as bytes; when following, also prints each complete piece of UTF-8
/// text to the script's stdout as it arrives.
pub struct LogSink {
    text: Vec<u8>,
    echo: Option<Arc<dyn Output>>,
    /// Bytes already printed.
    echoed: usize,
}

impl LogSink {
    pub fn new(echo: Option<Arc<dyn Output>>) -> LogSink {
        LogSink {
            text: Vec::new(),
            echo,
            echoed: 0,
        }
    }

    pub fn into_text(self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }
}

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        if let Some(out) = &self.echo {
            let pending = &self.text[self.echoed..];
            // Print up to the last complete character; a split one waits for its end.
            let valid = match std::str::from_utf8(pending) {
                Ok(s) => s.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => pending.len(),
            };
            if valid > 0 {
                out.write(Stream::Stdout, &String::from_utf8_lossy(&pending[..valid]));
                self.echoed += valid;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::output::CapturedOutput;

    #[test]
    fn a_following_sink_prints_whole_characters_and_keeps_everything() {
        let out = Arc::new(CapturedOutput::new());
        let mut sink = LogSink::new(Some(out.clone()));
        let text = "é line\n".as_bytes();
        sink.write_all(&text[..1]).unwrap();
        assert_eq!(out.stdout(), "");
        sink.write_all(&text[1..]).unwrap();
        assert_eq!(out.stdout(), "é line\n");
        assert_eq!(sink.into_text(), "é line\n");
    }
}
