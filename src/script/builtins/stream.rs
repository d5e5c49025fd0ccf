//! Streams into the engine thread: a Ray job's log, pod logs, watch events.
//!
//! The producer (`ray::follow_job`, a pod log stream, a watch) runs as a task on the
//! runtime and sends items over a channel; the engine thread receives them and calls the
//! script's callback between waits, so callbacks may themselves use built-ins. Dropping
//! the [`Pump`] (the script stopped listening, an error, Ctrl-C) aborts the task.

use std::future::Future;
use std::io::Write;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::diag::Diag;
use crate::ray::{FollowOptions, JobDetails, follow_job};
use crate::script::errors::{RhaiResult, fail};
use crate::script::host::{Host, ScriptRay};

enum Event {
    Chunk(String),
    Done(Box<Result<JobDetails, Diag>>),
}

/// Sends whole UTF-8 text; a multi-byte character split across writes waits for its end.
struct ChunkWriter {
    tx: UnboundedSender<Event>,
    pending: Vec<u8>,
}

impl Write for ChunkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // Invalid bytes (not a split character): pass everything on, lossily.
            Err(_) => self.pending.len(),
        };
        if valid > 0 {
            let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
            self.pending.drain(..valid);
            if self.tx.send(Event::Chunk(text)).is_err() {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Aborts the producer task when the engine side stops listening.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Items produced by a task on the runtime, consumed on the engine thread.
pub struct Pump<T> {
    rx: UnboundedReceiver<T>,
    _task: AbortOnDrop,
}

impl<T: Send + 'static> Pump<T> {
    /// Start `produce(sender)` on the runtime.
    pub fn start<F>(h: &Host, produce: impl FnOnce(UnboundedSender<T>) -> F) -> RhaiResult<Pump<T>>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = unbounded_channel();
        let task = h.spawn(produce(tx))?;
        Ok(Pump {
            rx,
            _task: AbortOnDrop(task),
        })
    }

    /// The next item (`None` when the producer finished); Ctrl-C cancels the wait.
    pub fn next(&mut self, h: &Host) -> RhaiResult<Option<T>> {
        h.block_on(async { Ok(self.rx.recv().await) })
    }
}

/// Follow job `id`'s log to its end, calling `on_chunk` with each new piece of text.
/// `on_chunk` returning `false` stops early (`Ok(None)`); otherwise the job's final
/// details are returned.
pub fn follow_log(
    h: &Host,
    client: &ScriptRay,
    id: &str,
    mut on_chunk: impl FnMut(&str) -> RhaiResult<bool>,
) -> RhaiResult<Option<JobDetails>> {
    let client = h.ray(client)?.clone();
    let id = id.to_string();
    let mut pump = Pump::start(h, |tx: UnboundedSender<Event>| async move {
        let mut writer = ChunkWriter {
            tx: tx.clone(),
            pending: Vec::new(),
        };
        let result = follow_job(&client, &id, &mut writer, &FollowOptions::default()).await;
        if !writer.pending.is_empty() {
            let rest = String::from_utf8_lossy(&writer.pending).into_owned();
            let _ = tx.send(Event::Chunk(rest));
        }
        let _ = tx.send(Event::Done(Box::new(result)));
    })?;
    loop {
        match pump.next(h)? {
            Some(Event::Chunk(text)) => {
                if !on_chunk(&text)? {
                    return Ok(None);
                }
            }
            Some(Event::Done(result)) => return (*result).map(Some).map_err(fail),
            None => {
                return Err(fail(Diag::api(
                    "nrl::ray::follow",
                    "the log follower stopped unexpectedly",
                )));
            }
        }
    }
}
