//! Label-selected watches: one watch for a whole set of objects (all Jobs of a Gym run),
//! instead of one per object. The initial list and every relist arrive as a [`Reset`]
//! with the complete set, later changes one by one; dropped connections and 410 Gone are
//! retried by kube-runtime's watcher with backoff. Permission errors end the stream.
//!
//! [`Reset`]: LabelledEvent::Reset

use futures::{Stream, StreamExt};
use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value as Json;

use super::client::K8s;
use super::errors::{Action, status_code, to_diag};
use crate::diag::Result;

/// One change seen by [`K8s::watch_labelled`].
#[derive(Debug, Clone)]
pub enum LabelledEvent {
    /// Every matching object, after the initial list or a relist.
    Reset(Vec<Json>),
    /// An object was created or changed.
    Applied(Json),
    /// An object is gone.
    Deleted(Json),
}

/// What [`K8s::watch_with_health`] yields: a change, or word that the watch lost its
/// connection and is re-establishing it (kube-runtime's watcher backs off and relists).
#[derive(Debug, Clone)]
pub enum WatchItem {
    Event(LabelledEvent),
    Retrying(String),
}

impl K8s {
    /// Watch every `ar` object in `ns` matching the label `selector`, through one watch.
    /// Yields `Err` (and then ends) only for errors that retrying cannot fix (401/403).
    pub fn watch_labelled(
        &self,
        ar: &ApiResource,
        ns: &str,
        selector: &str,
    ) -> impl Stream<Item = Result<LabelledEvent>> + Send + 'static {
        self.watch_with_health(ar, ns, selector).filter_map(|item| {
            std::future::ready(match item {
                Ok(WatchItem::Event(e)) => Some(Ok(e)),
                Ok(WatchItem::Retrying(_)) => None,
                Err(e) => Some(Err(e)),
            })
        })
    }

    /// [`K8s::watch_labelled`], also saying when the connection is lost (for a live view
    /// that shows "reconnecting…"). An empty `selector` watches every object of `ns`.
    pub fn watch_with_health(
        &self,
        ar: &ApiResource,
        ns: &str,
        selector: &str,
    ) -> impl Stream<Item = Result<WatchItem>> + Send + 'static {
        let api = self.api(ar, ns);
        let mut cfg = watcher::Config::default().timeout(self.watch_timeout_secs());
        if !selector.is_empty() {
            cfg = cfg.labels(selector);
        }
        let plural = ar.plural.clone();
        let namespace = ns.to_string();
        let mut buffer: Vec<Json> = Vec::new();
        let mut failed = false;
        watcher::watcher(api, cfg)
            .default_backoff()
            .filter_map(move |ev| {
                let out = if failed {
                    None
                } else {
                    match ev {
                        Ok(Event::Init) => {
                            buffer.clear();
                            None
                        }
                        Ok(Event::InitApply(o)) => {
                            buffer.extend(held(o));
                            None
                        }
                        Ok(Event::InitDone) => Some(Ok(WatchItem::Event(LabelledEvent::Reset(
                            std::mem::take(&mut buffer),
                        )))),
                        Ok(Event::Apply(o)) => {
                            held(o).map(|j| Ok(WatchItem::Event(LabelledEvent::Applied(j))))
                        }
                        Ok(Event::Delete(o)) => {
                            held(o).map(|j| Ok(WatchItem::Event(LabelledEvent::Deleted(j))))
                        }
                        Err(
                            watcher::Error::InitialListFailed(ke)
                            | watcher::Error::WatchStartFailed(ke)
                            | watcher::Error::WatchFailed(ke),
                        ) if matches!(status_code(&ke), Some(401 | 403))
                            || super::errors::is_too_large(&ke) =>
                        {
                            failed = true;
                            Some(Err(to_diag(
                                ke,
                                &Action {
                                    verb: "watch",
                                    resource: &plural,
                                    name: None,
                                    namespace: Some(&namespace),
                                },
                            )))
                        }
                        // Transient: the watcher backs off and resumes (relisting if needed).
                        Err(e) => Some(Ok(WatchItem::Retrying(e.to_string()))),
                    }
                };
                std::future::ready(out)
            })
    }
}

/// A watched object as the watch's consumers keep it: without `metadata.managedFields`,
/// which none of them reads (kubectl hides it too) and which is often a third of a
/// server-side-applied object, held once per object for as long as a view lives.
fn held(mut o: DynamicObject) -> Option<Json> {
    o.metadata.managed_fields = None;
    serde_json::to_value(o).ok()
}
