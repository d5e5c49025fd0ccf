//! The object store: every object as JSON, one global resourceVersion counter, and the
//! bounded event history that watches resume from.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::meta::{metadata_mut, name_of, namespace_of, owner_uids};
use super::resources::ResourceType;

/// Where an object lives. Cluster-scoped objects have an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjKey {
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(namespace: &str, name: &str) -> Self {
        ObjKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as history keeps it and watches replay it.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub rv: u64,
    pub kind: EventType,
    pub rt: &'static ResourceType,
    /// Shared with the store (an object is never copied to record its event).
    pub object: Arc<Value>,
    /// The object before a MODIFIED change, so selector watches can turn a change that
    /// leaves (or enters) the selection into DELETED (or ADDED), as the real server does.
    pub previous: Option<Arc<Value>>,
}

impl StoredEvent {
    pub fn namespace(&self) -> &str {
        namespace_of(&self.object)
    }
    pub fn name(&self) -> &str {
        name_of(&self.object)
    }
}

pub struct Store {
    /// Objects are immutable once stored; a write stores a new one. Shared with the event
    /// history and with readers that only look ([`Store::get_shared`]).
    objects: HashMap<&'static str, BTreeMap<ObjKey, Arc<Value>>>,
    rv: u64,
    history: VecDeque<Arc<StoredEvent>>,
    history_window: usize,
    /// Highest resourceVersion whose event has left the history: a watch from an older
    /// resourceVersion gets 410 Gone.
    compacted_rv: u64,
    /// When a pending deletion (deletionTimestamp set) may complete, by uid.
    pub deletion_due: HashMap<String, Instant>,
    /// Owner uid -> the objects whose ownerReferences name it (for GC and controllers).
    owned: HashMap<String, BTreeSet<(&'static str, ObjKey)>>,
    rv_tx: watch::Sender<u64>,
    controller_tx: Option<mpsc::UnboundedSender<Arc<StoredEvent>>>,
}

fn type_key(rt: &ResourceType) -> &'static str {
    // Plurals are unique across the served types.
    rt.plural
}

impl Store {
    pub fn new(history_window: usize, rv_tx: watch::Sender<u64>) -> Self {
        Store {
            objects: HashMap::new(),
            rv: 1,
            history: VecDeque::new(),
            history_window: history_window.max(1),
            compacted_rv: 0,
            deletion_due: HashMap::new(),
            owned: HashMap::new(),
            rv_tx,
            controller_tx: None,
        }
    }

    pub fn set_controller_sink(&mut self, tx: mpsc::UnboundedSender<Arc<StoredEvent>>) {
        self.controller_tx = Some(tx);
    }

    pub fn set_history_window(&mut self, window: usize) {
        self.history_window = window.max(1);
        self.trim_history();
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn compacted_rv(&self) -> u64 {
        self.compacted_rv
    }

    /// Drop all history: every watch resuming from an older resourceVersion gets 410.
    pub fn compact_all(&mut self) {
        self.compacted_rv = self.rv;
        self.history.clear();
    }

    pub fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    pub fn get(&self, rt: &ResourceType, key: &ObjKey) -> Option<&Value> {
        self.get_shared(rt, key).map(|v| &**v)
    }

    /// The stored object itself, for readers that keep it past the lock without copying.
    pub fn get_shared(&self, rt: &ResourceType, key: &ObjKey) -> Option<&Arc<Value>> {
        self.objects.get(type_key(rt))?.get(key)
    }

    /// Objects of one type, optionally in one namespace, in name order.
    pub fn iter<'a>(
        &'a self,
        rt: &ResourceType,
        namespace: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = (&'a ObjKey, &'a Value)> + 'a> {
        let Some(m) = self.objects.get(type_key(rt)) else {
            return Box::new(std::iter::empty());
        };
        match namespace {
            // Keys sort by namespace first: one range, not a scan.
            Some(ns) => Box::new(
                m.range(ObjKey::new(ns, "")..)
                    .take_while(move |(k, _)| k.namespace == ns)
                    .map(|(k, v)| (k, &**v)),
            ),
            None => Box::new(m.iter().map(|(k, v)| (k, &**v))),
        }
    }

    /// Like [`Store::iter`], the stored objects themselves (shared, not copied).
    pub fn iter_shared<'a>(
        &'a self,
        rt: &ResourceType,
        namespace: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a Arc<Value>> + 'a> {
        let Some(m) = self.objects.get(type_key(rt)) else {
            return Box::new(std::iter::empty());
        };
        match namespace {
            Some(ns) => Box::new(
                m.range(ObjKey::new(ns, "")..)
                    .take_while(move |(k, _)| k.namespace == ns)
                    .map(|(_, v)| v),
            ),
            None => Box::new(m.values()),
        }
    }

    /// Every stored object of every type (for garbage collection).
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &ObjKey, &Value)> {
        self.objects
            .iter()
            .flat_map(|(t, m)| m.iter().map(move |(k, v)| (*t, k, &**v)))
    }

    /// Store `obj` (new or changed), stamping a fresh resourceVersion, and record the event.
    /// Returns the stored object, shared.
    pub fn put(&mut self, rt: &'static ResourceType, key: ObjKey, mut obj: Value) -> Arc<Value> {
        let rv = self.next_rv();
        metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
        let stored = Arc::new(obj);
        let previous = self
            .objects
            .entry(type_key(rt))
            .or_default()
            .insert(key.clone(), stored.clone());
        if let Some(prev) = &previous {
            self.unindex_owners(rt, &key, prev);
        }
        for uid in owner_uids(&stored) {
            self.owned
                .entry(uid)
                .or_default()
                .insert((type_key(rt), key.clone()));
        }
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(StoredEvent {
            rv,
            kind,
            rt,
            object: stored.clone(),
            previous,
        });
        stored
    }

    /// Remove an object; the DELETED event carries a fresh resourceVersion, as the real
    /// server's does.
    pub fn remove(&mut self, rt: &'static ResourceType, key: &ObjKey) -> Option<Value> {
        let removed = self.objects.get_mut(type_key(rt))?.remove(key)?;
        self.unindex_owners(rt, key, &removed);
        let rv = self.next_rv();
        let mut obj = Arc::unwrap_or_clone(removed);
        metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
        let obj = Arc::new(obj);
        self.record(StoredEvent {
            rv,
            kind: EventType::Deleted,
            rt,
            object: obj.clone(),
            previous: None,
        });
        Some(Value::clone(&obj))
    }

    fn unindex_owners(&mut self, rt: &ResourceType, key: &ObjKey, obj: &Value) {
        for uid in owner_uids(obj) {
            if let Some(set) = self.owned.get_mut(&uid) {
                set.remove(&(type_key(rt), key.clone()));
                if set.is_empty() {
                    self.owned.remove(&uid);
                }
            }
        }
    }

    /// The objects (type plural, key) that name `uid` among their ownerReferences.
    pub fn owned_by(&self, uid: &str) -> Vec<(&'static str, ObjKey)> {
        self.owned
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Look up by type plural (as `owned_by` and `all` name types).
    pub fn get_by_plural(&self, plural: &str, key: &ObjKey) -> Option<&Arc<Value>> {
        self.objects.get(plural)?.get(key)
    }

    fn record(&mut self, event: StoredEvent) {
        let event = Arc::new(event);
        if let Some(tx) = &self.controller_tx {
            let _ = tx.send(event.clone());
        }
        self.history.push_back(event);
        self.trim_history();
        self.rv_tx.send_replace(self.rv);
    }

    fn trim_history(&mut self) {
        while self.history.len() > self.history_window {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
    }

    /// Events after `rv`, or `Err(compacted_rv)` when some of them are no longer retained.
    pub fn events_after(&self, rv: u64) -> Result<Vec<Arc<StoredEvent>>, u64> {
        if rv < self.compacted_rv {
            return Err(self.compacted_rv);
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }
}
